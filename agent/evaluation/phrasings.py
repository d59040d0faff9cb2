"""`eval/phrasings.jsonl`: data questions in many phrasings, each planned to the exact intent, tool and
parameters (data_phrasings)."""
from __future__ import annotations

from datetime import date
from pathlib import Path

from django.conf import settings

from knowledge.evaluation import load_golden

PHRASINGS = Path(settings.BASE_DIR) / "eval" / "phrasings.jsonl"


# The table's expected date ranges are written for this day (a Wednesday), so they are exact.
PHRASINGS_TODAY = date(2026, 11, 18)


def load_phrasings(path=None) -> list[dict]:
    return load_golden(path or PHRASINGS)


def plan_params(params: dict) -> dict:
    """A plan's parameters in the table's shape: period as [start, end], no empty optionals."""
    out = {k: v for k, v in params.items() if v is not None or k == "store"}
    for key in ("period", "baseline"):
        if isinstance(out.get(key), dict):
            out[key] = [out[key]["start"], out[key]["end"]]
    return out


def check_phrasing(item: dict, today: date = PHRASINGS_TODAY) -> dict | None:
    """None when the router and the data planner get the item exactly right, else what they got."""
    from ..data_guard import plan_data
    from ..router import DATA, route_by_rules

    decision = route_by_rules(item["q"], today)
    got = {"intent": decision.intent, "reason": decision.reason}
    if decision.intent == DATA:
        plan = plan_data(item["q"], today=today)
        got.update(tool=plan.tool, params=plan_params(plan.params), clarify=plan.clarify)
    ok = got["intent"] == item["intent"]
    if ok and item["intent"] == DATA:
        ok = got["tool"] == item["tool"] and got["params"] == item["params"] and not got["clarify"]
    return None if ok else got


def eval_data_phrasings(cmd=None) -> dict:
    """Accuracy on eval/phrasings.jsonl: intent, tool and parameters all exact."""
    items = load_phrasings()
    misses = []
    for item in items:
        got = check_phrasing(item)
        if got is not None:
            misses.append({"id": item["id"], "query": item["q"], "expected": {k: item[k] for k in ("intent", "tool", "params")}, "got": got})
    accuracy = round((len(items) - len(misses)) / len(items), 4) if items else None
    if cmd is not None:
        cmd.stdout.write(f"  data_phrasings       {accuracy} ({len(items) - len(misses)}/{len(items)}, intent + tool + parameters exact)")
        for m in misses:
            cmd.stdout.write(f"  phrasing miss {m['id']} 「{m['query']}」 expected {m['expected']} got {m['got']}")
    return {"accuracy": accuracy, "n": len(items), "misses": misses}
