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


def test_the_same_refusal_at_another_store_is_that_stores_own_row():
    # A GZ-TH POS token writing orders to GZ-ZJ, then to FS-ZM within the same second: the FS-ZM
    # attempt left no row (the target is no object, so only the attempt and reason were compared).
    user = make_user("denial_probe", role="pos")
    gz_zj, fs_zm = Store.objects.get(code="GZ-ZJ"), Store.objects.get(code="FS-ZM")
    for store in (gz_zj, fs_zm, gz_zj):
        audit_denial(actor=user, attempt="write orders", reason="store outside the token's scope", store=store)
    rows = AuditLog.objects.filter(actor=user)
    assert sorted(rows.values_list("store__code", flat=True)) == ["FS-ZM", "GZ-ZJ"]
    assert rows.get(store=gz_zj).repeat.times == 2


def test_an_audit_rows_page_reads_in_chinese_above_its_raw_json(client):
    # A head office user's own denial read 「{"reason": "missing workflow.add_proposal", "attempt": "propose",
    # "channel": "web"}」 on its page (a new-user walkthrough).
    from core.audit import audit_denial
    from core.models import AuditLog
    from ops.tests.factories import make_user

    hq = make_user("audit_reader_hq", role="hq", stores=[], is_staff=True)
    audit_denial(actor=hq, attempt="propose", reason="missing workflow.add_proposal")
    row = AuditLog.objects.filter(actor=hq).latest("pk")
    client.force_login(hq)
    page = client.get(f"/admin/core/auditlog/{row.pk}/change/").content.decode()
    assert "原因：缺少权限：" in page and "尝试的操作：propose" in page and "missing workflow.add_proposal" in page
