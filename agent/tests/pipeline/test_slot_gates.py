"""The gates of an action's turn (agent.slots.GATES): one case each, named by the gate that answers
(its name is in the step's detail, and so in the trace). A gate without a case fails the last test."""
from datetime import date

import pytest

from agent.slots import GATES, RESTOCK, TICKET, PendingAction, advance
from ops.tests.factories import make_user
from workflow.models import Proposal

pytestmark = pytest.mark.django_db
TODAY = date(2026, 12, 4)


def _gate(pending, user, **kw) -> str:
    return advance(pending, user=user, today=TODAY, **kw).detail["gate"]


def test_the_askers_one_store_is_meant_then_ask_product():
    staff = make_user("gate_one", role="staff", stores=["GZ-TH"])
    pending = PendingAction(kind=RESTOCK)
    assert _gate(pending, staff) == "ask_product" and pending.store == "广州天河店"


def test_may_propose_here():
    staff = make_user("gate_other", role="staff", stores=["GZ-TH"])
    assert _gate(PendingAction(kind=RESTOCK, store="深圳福田店"), staff) == "may_propose_here"


def test_ask_store():
    staff = make_user("gate_two", role="staff", stores=["GZ-TH", "SZ-FT"])
    assert _gate(PendingAction(kind=RESTOCK), staff) == "ask_store"


def test_ask_description():
    staff = make_user("gate_ticket", role="staff", stores=["GZ-TH"])
    assert _gate(PendingAction(kind=TICKET, store="广州天河店"), staff) == "ask_description"


def test_create_ticket():
    staff = make_user("gate_ticket_made", role="staff", stores=["GZ-TH"])
    step = advance(PendingAction(kind=TICKET, store="广州天河店", description="客人说啤酒有怪味，要求换一杯", started_with="登记投诉"),
                   user=staff, today=TODAY)
    assert step.detail["gate"] == "create_ticket" and isinstance(step.proposal, Proposal)


def test_ask_product():
    staff = make_user("gate_product", role="staff", stores=["GZ-TH"])
    assert _gate(PendingAction(kind=RESTOCK, store="广州天河店", not_a_product="喜力"), staff) == "ask_product"


def test_ask_quantity():
    staff = make_user("gate_qty", role="staff", stores=["GZ-TH"])
    step = advance(PendingAction(kind=RESTOCK, store="广州天河店", skus=["B001"]), user=staff, today=TODAY)
    assert step.detail["gate"] == "ask_quantity" and "要补多少" in step.message


def test_no_case_for_it():
    # 「5箱」 of 精酿IPA (by the glass, case size 1) was proposed as 「5箱 × 1杯 = 5杯」.
    staff = make_user("gate_loose", role="staff", stores=["GZ-TH"])
    pending = PendingAction(kind=RESTOCK, store="广州天河店", skus=["B005"], qty=5, unit="箱", started_with="补IPA")
    step = advance(pending, user=staff, today=TODAY)
    assert step.detail["gate"] == "no_case_for_it" and "没有整箱" in step.message and "要补多少杯" in step.message
    assert step.proposal is None and (pending.qty, pending.unit) == (None, None)
    asked = advance(PendingAction(kind=RESTOCK, store="广州天河店", skus=["B005"]), user=staff, today=TODAY)
    assert asked.message == "精酿IPA要补多少杯？"  # no 「补20箱」 example for what comes in no case


def test_a_switched_products_reason_names_it_not_the_first_request():
    from agent.slots import _lines
    from ops.models import Product

    pending = PendingAction(kind=RESTOCK, store="广州天河店", skus=["B005"], qty=30, unit="杯", started_with="科罗娜快没了，帮我申请补货")
    lines, _ = _lines(pending, {"B005": Product.objects.get(sku="B005")})
    assert lines[0]["reason"] == "聊天申请：补精酿IPA（最初说的是「科罗娜快没了，帮我申请补货」）"


def test_a_suggested_quantity_fills_it_and_then_create_restock():
    staff = make_user("gate_suggest", role="staff", stores=["GZ-TH"])
    step = advance(PendingAction(kind=RESTOCK, store="广州天河店", skus=["B001"], started_with="补青岛"), user=staff, today=TODAY,
                   suggest=lambda store: {"B001": 24})
    assert step.detail["gate"] == "create_restock" and step.detail["suggested_qty"] is True


def test_already_waiting():
    staff = make_user("gate_wait", role="staff", stores=["GZ-TH"])
    first = advance(PendingAction(kind=RESTOCK, store="广州天河店", skus=["B001"], qty=2, unit="箱", started_with="补两箱青岛"),
                    user=staff, today=TODAY)
    assert isinstance(first.proposal, Proposal)
    assert _gate(PendingAction(kind=RESTOCK, store="广州天河店", skus=["B001"], started_with="再补"), staff) == "already_waiting"


def test_every_gate_has_a_case():
    cases = [name for name in globals() if name.startswith("test_") and name != "test_every_gate_has_a_case"]
    gates = [gate for gate, _ in GATES] + ["create_ticket", "create_restock"]
    assert [gate for gate in gates if not any(gate in case for case in cases)] == []


def test_a_mixed_request_keeps_the_cased_products_quantity_while_the_glass_sold_one_is_asked_again():
    # 「帮我补5箱科罗娜和精酿IPA」 → 「30杯」 proposed 精酿IPA 30杯 and 科罗娜啤酒 30瓶: the 5箱 said for 科罗娜 was lost.
    from ops.models import Product

    staff = make_user("gate_mixed", role="staff", stores=["GZ-TH"])
    corona = Product.objects.get(name="科罗娜啤酒")
    pending = PendingAction(kind=RESTOCK, store="广州天河店", skus=[corona.sku, "B005"], qty=5, unit="箱", started_with="帮我补5箱科罗娜和精酿IPA")
    step = advance(pending, user=staff, today=TODAY)
    assert step.detail["gate"] == "no_case_for_it" and step.message.startswith("科罗娜啤酒 5箱已记下。") and "要补多少杯" in step.message
    assert pending.missing() == ["qty"]
    pending.qty, pending.unit = 30, "杯"  # the reply 「30杯」
    done = advance(PendingAction.from_dict(pending.as_dict()), user=staff, today=TODAY)
    lines = {line["sku"]: line["quantity"] for line in done.proposal.payload["lines"]}
    assert lines == {corona.sku: 5 * corona.case_size, "B005": 30}
