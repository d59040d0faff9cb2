from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from knowledge.selectors import IndexNotReady, Visibility, search


class Command(BaseCommand):
    help = 'Hybrid search of the knowledge base: python manage.py search "会员卡能跨店用吗" [--explain]'

    def add_arguments(self, parser):
        parser.add_argument("query")
        parser.add_argument("-k", type=int, default=5)
        parser.add_argument("--explain", action="store_true", help="show each channel's ranking side by side")
        parser.add_argument("--as-user", help="search with this user's visibility (default: everything)")

    def handle(self, *args, **opts):
        user = None
        if opts["as_user"]:
            user = get_user_model().objects.filter(username=opts["as_user"]).first()
            if user is None:
                raise CommandError(f"no user {opts['as_user']!r}")
        try:
            # The operator at the shell sees every document unless searching as someone.
            result = search(opts["query"], user=user, audiences=None if user else Visibility.everything(), k=opts["k"])
        except IndexNotReady as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"query: {result.query}    terms: {' / '.join(result.terms)}")
        for i, hit in enumerate(result.hits, start=1):
            self.stdout.write(
                f"{i}. [{hit.score:.4f}] {hit.section_path}   (vector #{hit.vector_rank or '-'}, lexical #{hit.lexical_rank or '-'})"
            )
            self.stdout.write("   " + hit.text.replace("\n", " ")[:120])
        if opts["explain"]:
            self.stdout.write("\nrank | vector (cosine)                                  | lexical (BM25)")
            for i in range(max(len(result.vector_ranking[:10]), len(result.lexical_ranking[:10]))):
                v = result.vector_ranking[i] if i < len(result.vector_ranking) else None
                lx = result.lexical_ranking[i] if i < len(result.lexical_ranking) else None
                left = f"{v.vector_score:.3f} {v.section_path}"[:48] if v else ""
                right = f"{lx.lexical_score:.2f} {lx.section_path}"[:48] if lx else ""
                self.stdout.write(f"{i + 1:4d} | {left:48s} | {right}")
        t = result.timings_ms
        self.stdout.write(
            f"{len(result.hits)} hits · embed {t['embed_query']:.1f} ms · vector {t['vector']:.1f} ms · "
            f"lexical {t['lexical']:.1f} ms · fusion {t['fusion']:.1f} ms"
        )
