"""Small helpers to make users and payloads in tests (no fake of any real component)."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from ops.models import Store
from ops.services import api_token_issue


def make_user(username: str, role: str | None = "staff", stores: list[str] = ("GZ-TH",), **extra):
    user = get_user_model().objects.create_user(username=username, password="pw-123456", **extra)
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    for code in stores:
        Store.objects.get(code=code).members.add(user)
    return user


def pos_token(store_code: str = "GZ-TH", username: str | None = None) -> str:
    store = Store.objects.get(code=store_code)
    user = make_user(username or f"pos_{store_code}", role="pos", stores=[store_code])
    _, key = api_token_issue(user=user, name="test POS", store=store)
    return key


def order_payload(external_id: str, store: str = "GZ-TH", lines=None, **over) -> dict:
    lines = lines if lines is not None else [
        {"sku": "B001", "qty": 2, "unit_price": "15.00", "amount": "30.00"},
        {"sku": "F001", "qty": 1, "unit_price": "28.00", "amount": "28.00"},
    ]
    total = sum(float(line["amount"]) for line in lines)
    payload = {
        "store": store,
        "external_id": external_id,
        "created_at": "2026-11-20T21:15:00+08:00",
        "channel": "堂食",
        "total": f"{total:.2f}",
        "lines": lines,
    }
    payload.update(over)
    return payload
