"""A flood of identical denials is one audit row with a count (it was one row per attempt)."""
from datetime import timedelta

import pytest
from django.utils import timezone

from core.audit import DENIAL_WINDOW, audit_denial
from core.models import AuditLog, DenialRepeat
from ops.models import Store
from ops.tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_identical_denials_within_a_minute_are_one_row_with_a_count(monkeypatch):
    user = make_user("denial_flood", role="staff")
    store = Store.objects.get(code="GZ-TH")
    before = AuditLog.objects.count()
    for _ in range(300):
        audit_denial(actor=user, attempt="confirm_restock", reason="missing workflow.confirm_restock", target=store, store=store)
    assert AuditLog.objects.count() == before + 1
    row = AuditLog.objects.filter(actor=user).get()
    assert row.repeat.times == 300
    # Another attempt, or another target, is its own row.
    audit_denial(actor=user, attempt="confirm_ticket", reason="missing workflow.confirm_ticket", target=store, store=store)
    other = Store.objects.exclude(pk=store.pk).first()
    audit_denial(actor=user, attempt="confirm_restock", reason="missing workflow.confirm_restock", target=other, store=other)
    assert AuditLog.objects.filter(actor=user).count() == 3
    # A minute of quiet: the same denial is recorded anew.
    later = timezone.now() + DENIAL_WINDOW + timedelta(seconds=1)
    monkeypatch.setattr(timezone, "now", lambda: later)
    audit_denial(actor=user, attempt="confirm_restock", reason="missing workflow.confirm_restock", target=store, store=store)
    assert AuditLog.objects.filter(actor=user, after__attempt="confirm_restock").count() == 3
    assert DenialRepeat.objects.get(audit=row).times == 300
