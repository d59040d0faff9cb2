"""Workflow services: the one code path for chat, API, admin and MCP.

Permissions are model permissions (core.roles grants them to groups) checked here, not in
views: `workflow.add_proposal`, `workflow.confirm_ticket`, `workflow.confirm_restock`, each for
the stores the user is assigned to (`Proposal.objects.restrict`). Without the permission: 403;
a proposal outside the user's stores is "not found", exactly like one that does not exist.
Every transition writes its audit row in the same transaction; a denial writes a
`permission_denied` row that survives the refused change.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.audit import audit_denial, audit_record, request_meta  # noqa: F401  (request_meta: re-exported)
from core.errors import Conflict, NotFound
from core.models import AuditLog
from core.roles import require
from core.scoping import store_ids_for
from core.validation import reject_bad_text, text_problem
from ops.models import Order, Product, Store
from ops.selectors import UnknownStore, resolve_store_for

from .models import CONFIRM_PERMS, Proposal, RestockLine, RestockRequest, Ticket
from .payloads import MAX_REASON, RESTOCK_FIELDS, TICKET_FIELDS, clean_restock, clean_ticket, payload_fingerprint
from .selectors import proposals_visible


def proposal_create(*, user, kind: str, store: Store | str, payload: dict, source: str,
                    idempotency_key: str | None = None) -> tuple[Proposal, bool]:
    """Create a pending proposal (no business side effect). The same user's same idempotency
    key returns the existing proposal; returns (proposal, created)."""
    if kind not in Proposal.Kind.values:
        raise ValidationError({"kind": [f"类型只能是：{'、'.join(Proposal.Kind.values)}。"]})
    if source not in Proposal.Source.values:
        raise ValidationError({"source": ["来源不正确。"]})
    if isinstance(store, str):
        reject_bad_text(store, "store")
    if not isinstance(payload, dict):
        raise ValidationError({"payload": ["payload 必须是对象。"]})
    reject_bad_text(payload, "payload")
    require(user, "workflow.add_proposal", attempt="propose", message="只有店员或店长可以提交提案。")
    try:
        store = resolve_store_for(user, store, "workflow.add_proposal", attempt=f"propose {kind}")
    except UnknownStore as exc:
        raise ValidationError({"store": exc.messages}) from None
    clean = clean_restock(payload) if kind == Proposal.Kind.RESTOCK else clean_ticket(payload, store)
    key = (idempotency_key or "").strip() or f"auto:{user.pk}:{payload_fingerprint(kind, store, clean)}:{uuid.uuid4().hex[:8]}"
    if len(key) > 128:
        raise ValidationError({"idempotency_key": ["幂等键最长 128 个字符。"]})
    existing = Proposal.objects.filter(proposed_by=user, idempotency_key=key).first()
    if existing is not None:
        return _same_or_conflict(existing, kind, store, clean), False
    try:
        with transaction.atomic():
            proposal = Proposal.objects.create(kind=kind, store=store, payload=clean, source=source, idempotency_key=key, proposed_by=user)
            audit_record(actor=user, action=AuditLog.Action.PROPOSED, target=proposal, store=store,
                         after={"kind": kind, "payload": clean, "source": source})
    except IntegrityError:  # a concurrent request with the same key won
        return _same_or_conflict(Proposal.objects.get(proposed_by=user, idempotency_key=key), kind, store, clean), False
    return proposal, True


def _same_or_conflict(existing: Proposal, kind: str, store: Store, payload: dict) -> Proposal:
    if (existing.kind, existing.store_id, existing.payload) != (kind, store.id, payload):
        raise Conflict("这个幂等键已用于另一份不同的提案。", proposal_id=existing.pk)
    return existing


def can_confirm(user, proposal: Proposal) -> tuple[bool, str]:
    perm = CONFIRM_PERMS[proposal.kind]
    if user is None or not user.is_authenticated or not user.has_perm(perm):
        if proposal.kind == Proposal.Kind.RESTOCK:
            return False, "补货申请必须由店长确认，你没有这个权限。"
        return False, "你没有确认客诉工单的权限。"
    ids = store_ids_for(user, perm)
    if ids is not None and proposal.store_id not in ids:
        return False, f"你没有被分配到{proposal.store.name}，不能处理这家店的提案。"
    return True, ""


def _decidable(user, pk: int, attempt: str) -> None:
    """Refuse unless the user may decide proposal `pk`: 403 without any confirm permission,
    404 when it is outside the user's stores (the same as when it does not exist). Runs
    before the locking transaction so that the denial's audit row survives."""
    if not user.is_authenticated or not any(user.has_perm(p) for p in CONFIRM_PERMS.values()):
        if user.is_authenticated:
            target = Proposal.objects.filter(pk=pk).select_related("store").first()
            audit_denial(actor=user, attempt=attempt, reason="no confirm permission", proposal=pk, target=target,
                         store=target.store if target else None)
        raise PermissionDenied("你没有处理提案的权限。")
    scope = Proposal.objects.restrict(user, "confirm_restock") | Proposal.objects.restrict(user, "confirm_ticket")
    if not scope.filter(pk=pk).exists():
        hidden = Proposal.objects.filter(pk=pk).select_related("store").first()
        if hidden is not None:
            audit_denial(actor=user, attempt=attempt, reason="proposal outside the user's stores", target=hidden, store=hidden.store)
        raise NotFound(f"没有提案 #{pk}。")


def _deny(user, proposal: Proposal, attempt: str, reason: str):
    audit_denial(actor=user, attempt=attempt, reason=reason, target=proposal, store=proposal.store)
    raise PermissionDenied(reason)


def proposal_confirm(*, proposal: Proposal | int, user) -> Proposal:
    """Confirm and perform the write. Row-locked: confirming twice returns the first result
    and creates nothing new; a rejected or expired proposal is a Conflict."""
    pk = proposal.pk if isinstance(proposal, Proposal) else proposal
    _decidable(user, pk, "confirm")
    with transaction.atomic():
        locked = Proposal.objects.select_for_update().select_related("store").get(pk=pk)
        allowed, reason = can_confirm(user, locked)
        if allowed:
            if locked.status == Proposal.Status.CONFIRMED:
                return locked
            if locked.status != Proposal.Status.PENDING:  # rejected, expired, withdrawn
                raise Conflict(f"提案 #{pk} 的状态是「{locked.get_status_display()}」，不能再确认。")
            before = {"status": locked.status}
            result = _perform(locked, user)
            locked.status = Proposal.Status.CONFIRMED
            locked.decided_by, locked.decided_at = user, timezone.now()
            locked.result_type = ContentType.objects.get_for_model(result)
            locked.result_id = result.pk
            locked.save(update_fields=["status", "decided_by", "decided_at", "result_type", "result_id"])
            audit_record(actor=user, action=AuditLog.Action.CONFIRMED, target=locked, store=locked.store, before=before,
                         after={"status": locked.status, "created": f"{result._meta.model_name}#{result.pk}"})
            return locked
    # Not allowed: the lock's transaction is left first, the denial is recorded in its own.
    _deny(user, locked, "confirm", reason)


def _perform(proposal: Proposal, user):
    if proposal.kind == Proposal.Kind.RESTOCK:
        request = RestockRequest.objects.create(proposal=proposal, store=proposal.store, approved_by=user)
        products = {p.sku: p for p in Product.objects.filter(sku__in=[line["sku"] for line in proposal.payload["lines"]])}
        RestockLine.objects.bulk_create([
            RestockLine(request=request, product=products[line["sku"]], quantity=line["quantity"], unit=line["unit"], reason=line.get("reason", ""))
            for line in proposal.payload["lines"]
        ])
        return request
    p = proposal.payload
    order = Order.objects.filter(store=proposal.store, external_id=p["order"]).first() if p.get("order") else None
    return Ticket.objects.create(
        proposal=proposal, store=proposal.store, category=p["category"], severity=p["severity"], description=p["description"],
        order=order, member_number=p.get("member", ""), created_by=user,
    )


REJECT_REASON_MAX = Proposal._meta.get_field("decision_note").max_length


def reject_reason_clean(reason) -> str:
    """The reason a rejection must give, for every channel (API, web, admin, chat, MCP). Over
    the limit is an error: it was cut at 255 without a word."""
    reason = (reason or "").strip() if isinstance(reason, str) or reason is None else str(reason)
    if not reason:
        raise ValidationError({"reason": ["拒绝时请写明原因。"]})
    if problem := text_problem(reason):
        raise ValidationError({"reason": [f"拒绝原因{problem}"]})
    if len(reason) > REJECT_REASON_MAX:
        raise ValidationError({"reason": [f"拒绝原因不能超过 {REJECT_REASON_MAX} 个字（现在 {len(reason)} 个）。"]})
    return reason


def proposal_reject(*, proposal: Proposal | int, user, reason: str) -> Proposal:
    pk = proposal.pk if isinstance(proposal, Proposal) else proposal
    _decidable(user, pk, "reject")
    with transaction.atomic():
        locked = Proposal.objects.select_for_update().select_related("store").get(pk=pk)
        allowed, why = can_confirm(user, locked)
        if allowed:
            reason = reject_reason_clean(reason)  # who may reject comes before what they wrote (a denial is audited)
            if locked.status == Proposal.Status.REJECTED:
                return locked
            if locked.status != Proposal.Status.PENDING:
                raise Conflict(f"提案 #{pk} 的状态是「{locked.get_status_display()}」，不能再拒绝。")
            locked.status, locked.decided_by, locked.decided_at, locked.decision_note = Proposal.Status.REJECTED, user, timezone.now(), reason
            locked.save(update_fields=["status", "decided_by", "decided_at", "decision_note"])
            audit_record(actor=user, action=AuditLog.Action.REJECTED, target=locked, store=locked.store,
                         before={"status": "pending"}, after={"status": "rejected", "reason": reason})
            return locked
    _deny(user, locked, "reject", why)


def _reachable(user, pk: int, attempt: str) -> None:
    """Refuse as missing a proposal the user neither proposed nor may see (no existence leak);
    one that exists is audited. Runs before the locking transaction, so the denial survives."""
    found = Proposal.objects.filter(pk=pk).select_related("store").first()
    if found is not None and user.is_authenticated and (found.proposed_by_id == user.pk or proposals_visible(user).filter(pk=pk).exists()):
        return
    if found is not None and user.is_authenticated:
        audit_denial(actor=user, attempt=attempt, reason="proposal outside the user's stores", target=found, store=found.store)
    raise NotFound(f"没有提案 #{pk}。")


def _editable(user, pk: int) -> tuple[Proposal, bool]:
    """Proposal `pk`, row-locked (inside the caller's transaction), and whether `user` proposed it."""
    locked = Proposal.objects.select_for_update().select_related("store").get(pk=pk)
    return locked, locked.proposed_by_id == user.pk


def proposal_withdraw(*, proposal: Proposal | int, user, reason: str = "") -> Proposal:
    """The person who proposed it takes a pending proposal back (a wrong quantity, a product
    that arrived after all). Anyone else is refused and audited: a manager rejects instead.
    Withdrawing twice returns the first result; a decided proposal is a Conflict."""
    pk = proposal.pk if isinstance(proposal, Proposal) else proposal
    reason = (reason or "").strip() if isinstance(reason, str) or reason is None else str(reason)
    if problem := text_problem(reason):
        raise ValidationError({"reason": [f"撤回原因{problem}"]})
    if len(reason) > REJECT_REASON_MAX:
        raise ValidationError({"reason": [f"撤回原因不能超过 {REJECT_REASON_MAX} 个字（现在 {len(reason)} 个）。"]})
    _reachable(user, pk, "withdraw")
    with transaction.atomic():
        locked, own = _editable(user, pk)
        if own:
            if locked.status == Proposal.Status.WITHDRAWN:
                return locked
            if locked.status != Proposal.Status.PENDING:
                raise Conflict(f"提案 #{pk} 的状态是「{locked.get_status_display()}」，不能再撤回。")
            locked.status, locked.decided_by, locked.decided_at = Proposal.Status.WITHDRAWN, user, timezone.now()
            locked.decision_note = reason
            locked.save(update_fields=["status", "decided_by", "decided_at", "decision_note"])
            audit_record(actor=user, action=AuditLog.Action.WITHDRAWN, target=locked, store=locked.store,
                         before={"status": "pending"}, after={"status": "withdrawn", **({"reason": reason} if reason else {})})
            return locked
    _deny(user, locked, "withdraw", "只有提交人可以撤回提案；有权限的人请用「拒绝」并写明原因。")


# A line's reason says what was asked (「帮我补两箱科罗娜（2箱×24瓶）」); once its quantity is changed
# it says so too: a manager saw 72瓶 beside 「2箱×24瓶」 and could not tell which was meant.
_CHANGED_NOTE = re.compile(r"；已改为 [^；]*$")


def _note_changed_quantities(before: dict, after: dict) -> None:
    """Mark each line of `after` whose quantity differs from `before`; a line sent again as it was
    (its reason without the mark) keeps the stored reason, so the same content changes nothing."""
    old = {line["sku"]: line for line in (before or {}).get("lines", [])}
    for line in after["lines"]:
        if (was := old.get(line["sku"])) is None:
            continue
        reason = _CHANGED_NOTE.sub("", line.get("reason") or "")
        if (was["quantity"], was["unit"]) == (line["quantity"], line["unit"]):
            if reason in ("", _CHANGED_NOTE.sub("", was.get("reason") or "")):
                line["reason"] = was.get("reason") or ""
            continue
        note = f"已改为 {line['quantity']}{line['unit']}"
        reason = reason[:MAX_REASON - len(note) - 1]
        line["reason"] = f"{reason}；{note}" if reason else note


def proposal_amend(*, proposal: Proposal | int, user, payload: dict) -> Proposal:
    """Change what a pending proposal asks for (a quantity, a line, a ticket's description):
    the person who proposed it, or one who may decide it (a manager correcting a quantity
    before confirming). Validated like a new proposal; audited with before and after. The same
    content again changes nothing."""
    pk = proposal.pk if isinstance(proposal, Proposal) else proposal
    if not isinstance(payload, dict):
        raise ValidationError({"payload": ["payload 必须是对象。"]})
    reject_bad_text(payload, "payload")
    _reachable(user, pk, "amend")
    with transaction.atomic():
        locked, own = _editable(user, pk)
        may_decide, why = can_confirm(user, locked)
        if own or may_decide:
            if locked.status != Proposal.Status.PENDING:
                raise Conflict(f"提案 #{pk} 的状态是「{locked.get_status_display()}」，不能再修改。")
            restock = locked.kind == Proposal.Kind.RESTOCK
            if payload and set(payload) <= (TICKET_FIELDS if restock else RESTOCK_FIELDS):
                # Well-formed content of the other kind: it contradicts what the proposal is.
                raise Conflict(f"提案 #{pk} 是{locked.get_kind_display()}，" + ("内容要写 lines（商品和数量）。" if restock
                                                                          else "内容要写 category、severity、description。"))
            clean = clean_restock(payload) if locked.kind == Proposal.Kind.RESTOCK else clean_ticket(payload, locked.store)
            if restock:
                _note_changed_quantities(locked.payload, clean)
            if clean == locked.payload:
                return locked
            before = locked.payload
            locked.payload = clean
            locked.save(update_fields=["payload"])
            audit_record(actor=user, action=AuditLog.Action.AMENDED, target=locked, store=locked.store,
                         before={"payload": before}, after={"payload": clean})
            return locked
    _deny(user, locked, "amend", why or "只有提交人或有权限确认的人可以修改提案。")


def proposals_expire(*, older_than: timedelta | None = None, now=None, proposed_by=None, reason: str = "") -> int:
    """Expire pending proposals older than SM_PROPOSAL_TTL_HOURS (or `older_than`; only those
    `proposed_by` these users when given); each expiry audited, with `reason` when given."""
    now = now or timezone.now()
    cutoff = now - (older_than if older_than is not None else timedelta(hours=settings.SM_PROPOSAL_TTL_HOURS))
    pending = Proposal.objects.filter(status=Proposal.Status.PENDING, created_at__lt=cutoff)
    if proposed_by is not None:
        pending = pending.filter(proposed_by__in=proposed_by)
    count = 0
    for pk in pending.values_list("pk", flat=True):
        with transaction.atomic():
            p = Proposal.objects.select_for_update().get(pk=pk)
            if p.status != Proposal.Status.PENDING:
                continue
            p.status, p.decided_at = Proposal.Status.EXPIRED, now
            p.save(update_fields=["status", "decided_at"])
            audit_record(actor=None, action=AuditLog.Action.EXPIRED, target=p, store=p.store,
                         before={"status": "pending"}, after={"status": "expired", **({"reason": reason} if reason else {})})
            count += 1
    return count


@dataclass
class AdminOutcome:
    proposal: Proposal
    ok: bool
    message: str


def proposals_decide_many(*, proposals, user, action: str, reason: str = "") -> list[AdminOutcome]:
    """Admin bulk actions: the same services, object by object, with a message per object."""
    outcomes = []
    for p in proposals:
        try:
            if action == "confirm":
                done = proposal_confirm(proposal=p, user=user)
                outcomes.append(AdminOutcome(done, True, f"#{p.pk} 已确认（{done.get_kind_display()}）"))
            else:
                done = proposal_reject(proposal=p, user=user, reason=reason)
                outcomes.append(AdminOutcome(done, True, f"#{p.pk} 已拒绝"))
        except PermissionDenied as exc:
            outcomes.append(AdminOutcome(p, False, f"#{p.pk} 未处理（没有权限）：{exc}"))
        except (Conflict, NotFound) as exc:
            outcomes.append(AdminOutcome(p, False, f"#{p.pk} 未处理：{exc.message}"))
    return outcomes
