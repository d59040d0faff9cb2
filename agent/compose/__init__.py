"""Answer composition: numbering the sources (sources.py), the extractive answer from a section
(extractive.py) or from a tool's rows (data.py), and the four guards that hold whatever wrote the
draft to its sources (guards.py). Proposal text is the workflow's (workflow/presenters.py); the
LLM's prompt is the pipeline's (agent/pipeline/prompts.py)."""
from .data import extractive_data_answer, row_key, row_sentence
from .extractive import MAX_LINES, condition_fit, extractive_policy_answer, hedge, question_quantity, second_section_lines, section_lines
from .guards import DOC_REF, apply_guards, guard_all_rows, guard_mandatory_clauses, guard_unknown_citations
from .sources import Sources, number_sources, prompt_sources, section_text, select_citation_hits

__all__ = ["DOC_REF", "MAX_LINES", "Sources", "apply_guards", "condition_fit", "extractive_data_answer", "extractive_policy_answer",
           "guard_all_rows", "guard_mandatory_clauses", "guard_unknown_citations", "hedge", "number_sources", "prompt_sources",
           "question_quantity", "row_key", "row_sentence", "second_section_lines", "section_lines", "section_text",
           "select_citation_hits"]
