"""`manage.py eval retrieval`: recall@1/3/5 and MRR of vector-only, lexical-only and hybrid
retrieval on eval/golden.jsonl, with every miss and the rank it got."""
from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from tqdm import tqdm

from .embedders import get_embedder
from .selectors import expanded_query, index_meta, lexical_channel, search, vector_channel
from .text import query_terms

GOLDEN = Path(settings.BASE_DIR) / "eval" / "golden.jsonl"
DEPTH = 10


def load_golden(path: Path = GOLDEN) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def audiences_for(item: dict) -> list[str]:
    return ["staff", "manager"] if item.get("as_role") == "manager" else ["staff"]


def rank_of(hits, item: dict) -> int | None:
    for i, hit in enumerate(hits, start=1):
        if hit.document == item["expect_doc"] and hit.heading == item["expect_section"]:
            return i
    return None


def summarise(ranks: list[int | None]) -> dict:
    n = len(ranks) or 1
    return {
        "recall@1": round(sum(1 for r in ranks if r and r <= 1) / n, 4),
        "recall@3": round(sum(1 for r in ranks if r and r <= 3) / n, 4),
        "recall@5": round(sum(1 for r in ranks if r and r <= 5) / n, 4),
        "mrr": round(sum(1 / r for r in ranks if r) / n, 4),
    }


def eval_retrieval(cmd, opts) -> dict:
    items = [i for i in load_golden() if i.get("expect_section") and i.get("kind", "policy") == "policy"]
    embedder = get_embedder()
    meta = index_meta()
    ranks = {"vector": [], "lexical": [], "hybrid": []}
    misses = []
    for item in tqdm(items, desc="eval retrieval", file=cmd.stderr):
        audiences = audiences_for(item)
        terms = query_terms(item["query"])
        qvec = embedder.embed_query(expanded_query(item["query"], terms))
        per = {
            "vector": rank_of(vector_channel(qvec, audiences, DEPTH), item),
            "lexical": rank_of(lexical_channel(terms, meta, audiences, DEPTH), item),
        }
        hybrid = search(item["query"], audiences=audiences, k=DEPTH)
        per["hybrid"] = rank_of(hybrid.hits, item)
        for channel, r in per.items():
            ranks[channel].append(r)
        if per["hybrid"] != 1:
            misses.append({
                "id": item["id"], "query": item["query"],
                "expected": f"{item['expect_doc']} > {item['expect_section']}",
                "hybrid_rank": per["hybrid"], "vector_rank": per["vector"], "lexical_rank": per["lexical"],
                "got": hybrid.hits[0].section_path if hybrid.hits else None,
            })
    report = {"n": len(items), "embedder": embedder.signature}
    for channel in ("hybrid", "vector", "lexical"):
        report[channel] = summarise(ranks[channel])
    report["misses"] = misses
    cmd.stdout.write(f"eval retrieval · {len(items)} questions · embedder {embedder.signature}")
    cmd.stdout.write(f"{'channel':8s} {'R@1':>7s} {'R@3':>7s} {'R@5':>7s} {'MRR':>7s}")
    for channel in ("vector", "lexical", "hybrid"):
        s = report[channel]
        cmd.stdout.write(f"{channel:8s} {s['recall@1']:7.3f} {s['recall@3']:7.3f} {s['recall@5']:7.3f} {s['mrr']:7.3f}")
    for m in misses:
        cmd.stdout.write(
            f"  miss {m['id']} 「{m['query']}」 expected {m['expected']} · hybrid #{m['hybrid_rank'] or '>10'} "
            f"(vector #{m['vector_rank'] or '>10'}, lexical #{m['lexical_rank'] or '>10'}) · got {m['got']}"
        )
    h = report["hybrid"]
    cmd.stdout.write(f"hybrid recall@1 {h['recall@1']:.3f} · recall@5 {h['recall@5']:.3f} · MRR {h['mrr']:.3f} · {len(misses)} misses at rank 1")
    return report
