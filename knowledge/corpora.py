"""The corpora StoreMind is evaluated on, each with its tuning and held-out questions.

- `bundled`: the demo corpus as shipped (corpus/, with its 常见问法 lines, synonyms, user
  dictionary and uncovered-topics list), questions eval/golden.jsonl and eval/holdout.jsonl;
- `bundled-bare`: the same documents with the 常见问法 lines removed and none of the lists
  (what the product does with documents nobody wrote lists for), the same questions;
- every folder eval/corpora/NAME/ (SM_EVAL_CORPORA_DIR) holding `docs/` (the documents) and `tune.jsonl` /
  `holdout.jsonl`: another chain's SOPs, written without sight of corpus/ or the code.

A corpus is evaluated in a database of its own (`eval … --corpus NAME`), in a process of its
own whose SM_CORPUS_DIR is the corpus's folder, so the lists beside one corpus never reach
another and the demo data stays intact. Reads files; writes only the bare copy under var/.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from .chunking import without_aliases

BARE_DIR = Path(settings.BASE_DIR) / "var" / "eval" / "bundled-bare"
# The lists a corpus folder may carry beside its documents (optional aids, never required).
CORPUS_LISTS = ("synonyms.txt", "userdict.txt", "uncovered.txt")


@dataclass(frozen=True)
class EvalCorpus:
    name: str
    docs: Path  # the folder that is ingested (and whose lists apply)
    tune: Path
    holdout: Path
    seed_ops: bool = False  # its questions include data questions about the demo stores
    note: str = ""

    def sets(self) -> dict[str, Path]:
        return {name: path for name, path in (("tune", self.tune), ("holdout", self.holdout)) if path.exists()}


def _bundled() -> EvalCorpus:
    base = Path(settings.BASE_DIR) / "eval"
    return EvalCorpus("bundled", Path(settings.BASE_DIR) / "corpus", base / "golden.jsonl", base / "holdout.jsonl",
                      seed_ops=True, note="演示语料（含常见问法与各类词表）")


def _bundled_bare() -> EvalCorpus:
    b = _bundled()
    return EvalCorpus("bundled-bare", BARE_DIR, b.tune, b.holdout, seed_ops=True, note="演示语料去掉常见问法、同义词、用户词典和不涉及话题表")


def eval_corpora() -> dict[str, EvalCorpus]:
    """Every corpus there is to evaluate on, by name (bundled first, then eval/corpora/* by name)."""
    found = {"bundled": _bundled(), "bundled-bare": _bundled_bare()}
    corpora_dir = Path(settings.SM_EVAL_CORPORA_DIR)
    if corpora_dir.is_dir():
        for folder in sorted(p for p in corpora_dir.iterdir() if (p / "docs").is_dir()):
            found[folder.name] = EvalCorpus(folder.name, folder / "docs", folder / "tune.jsonl", folder / "holdout.jsonl")
    return found


def eval_corpus(name: str) -> EvalCorpus:
    corpora = eval_corpora()
    if name not in corpora:
        raise KeyError(f"no evaluation corpus {name!r}; there are: {', '.join(corpora)}")
    return corpora[name]


def strip_alias_lines(source: str) -> str:
    """A document without its 常见问法 lines (the questions written for it by hand)."""
    return without_aliases(source)


def build_bare_copy(source: Path | None = None, target: Path = BARE_DIR) -> Path:
    """The bundled documents without their 常见问法 lines and without the lists beside them,
    written to `target` (rewritten only where a file differs, so an ingest stays incremental)."""
    source = Path(source or _bundled().docs)
    target.mkdir(parents=True, exist_ok=True)
    wanted = {}
    for file in sorted(source.rglob("*.md")):
        rel = file.relative_to(source)
        wanted[rel] = strip_alias_lines(file.read_text("utf-8"))
    for rel, text in wanted.items():
        out = target / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if not out.exists() or out.read_text("utf-8") != text:
            out.write_text(text, "utf-8")
    for stale in [p for p in target.rglob("*") if p.is_file() and p.relative_to(target) not in wanted]:
        stale.unlink()  # a list file, or a document the source no longer has
    for folder in sorted((p for p in target.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            shutil.rmtree(folder)
    return target
