from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from knowledge.services import corpus_files, corpus_ingest


class Command(BaseCommand):
    help = ("Ingest a folder of SOP documents (Markdown, TXT, DOCX, PDF, XLSX/CSV, PPTX, HTML) into the index: incremental by "
            "content hash, a changed file becomes its document's next version; --rebuild re-embeds everything.")

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", help="corpus folder (default: SM_CORPUS_DIR)")
        parser.add_argument("--rebuild", action="store_true")
        parser.add_argument("--export-vectors", action="store_true",
                            help="after ingesting, write the corpus's vectors to knowledge/bundled_vectors.npz "
                                 "(what a fresh clone's first ingest reads instead of embedding)")

    def handle(self, *args, **opts):
        from knowledge.embedders import use_every_core_for_a_batch

        use_every_core_for_a_batch()
        root = Path(opts["path"]).resolve() if opts["path"] else None
        from django.conf import settings

        folder = Path(root or settings.SM_CORPUS_DIR)
        total = len(corpus_files(folder)) if folder.is_dir() else 0
        with tqdm(total=total, desc="ingest", unit="doc", file=self.stderr, disable=opts["verbosity"] == 0) as bar:
            try:
                report = corpus_ingest(path=root, rebuild=opts["rebuild"], progress=lambda _name: bar.update(1))
            except (FileNotFoundError, ValueError) as exc:
                raise CommandError(str(exc)) from exc
        if report.warning:
            self.stderr.write(self.style.WARNING(report.warning))
        self.stdout.write(report.line())
        if opts["export_vectors"]:
            from knowledge.embedders import get_embedder
            from knowledge.services import BUNDLED_VECTORS, export_bundled_vectors

            n = export_bundled_vectors(get_embedder())
            self.stdout.write(f"{n} vectors written to {BUNDLED_VECTORS.name} ({BUNDLED_VECTORS.stat().st_size / 1e6:.1f} MB)")
