"""`manage.py eval retrieval | agent | equivalence | calibrate`.

Every figure is computed for the tuning set (eval/golden.jsonl) and, side by side, for the
held-out set (eval/holdout.jsonl), which is only ever reported, never tuned on.

Expected figures for data questions are computed here from the database with the expected
tool and parameters, never typed into the golden file. Evaluation never persists
conversations, except `equivalence`, which goes through the real sync and Celery paths
and removes its own rows afterwards. answers.py (running and tallying), runs.py, calibrate.py,
phrasings.py; every public name is importable from `agent.evaluation`."""
from .answers import (
    ANSWER_KEYS,
    AnswerTally,
    _run_item,
    actual_params,
    clean_up_after,
    eval_users,
    expected_params,
)
from .calibrate import (
    eval_calibrate,
    eval_signals,
)
from .phrasings import (
    PHRASINGS,
    PHRASINGS_TODAY,
    check_phrasing,
    eval_data_phrasings,
    load_phrasings,
    plan_params,
)
from .runs import (
    eval_agent,
    eval_equivalence,
    eval_retrieval,
)

__all__ = [
    "ANSWER_KEYS",
    "AnswerTally",
    "_run_item",
    "actual_params",
    "clean_up_after",
    "eval_users",
    "expected_params",
    "eval_agent",
    "eval_equivalence",
    "eval_retrieval",
    "eval_calibrate",
    "eval_signals",
    "PHRASINGS",
    "PHRASINGS_TODAY",
    "check_phrasing",
    "eval_data_phrasings",
    "load_phrasings",
    "plan_params",
]
