"""The rate table's rates are written like DRF's (「30/min」), with a multiple (「20/10min」);
anything else is refused when read, not silently unlimited. The atomic count under concurrency is
storemind/tests/test_robustness.py (it needs committed transactions)."""
from __future__ import annotations

import pytest


def test_a_rate_is_written_like_30_per_min():
    from core.ratelimit import Rate

    assert Rate.parse("30/min") == Rate(30, 60) and Rate.parse("20/10min") == Rate(20, 600) and Rate.parse("120/day") == Rate(120, 86400)
    for bad in ("30", "x/min", "30/fortnight", "-1/min"):
        with pytest.raises(ValueError):
            Rate.parse(bad)
