"""Messages from WeCom, DingTalk and Feishu answered by the same services as the chat page.

A callback is verified and recorded (Inbound, once per platform message id) and acknowledged
at once; the answer is written by a Celery task (answer_inbound) and sent through the
platform's API (deliver, retried with backoff, each attempt on a Delivery row). Who asks is
the StoreMind user the platform id is bound to: their roles and stores, exactly as on the chat
page. A proposal arrives as a card; a manager's 确认 / 拒绝 on it goes through
proposal_confirm / proposal_reject, audited as from that channel.
"""
from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import timedelta

import httpx
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from core.audit import audit_denial, audit_record, request_meta
from core.errors import Conflict, NotFound, message_text
from core.models import AuditLog

from .models import BindingLink, Delivery, Identity, Inbound, Platform
from .platforms import dingtalk, feishu, wecom
from .platforms.base import Card, Event, PlatformError
from .selectors import binding_link_open, user_for

log = logging.getLogger(__name__)
ADAPTERS = {Platform.WECOM: wecom, Platform.DINGTALK: dingtalk, Platform.FEISHU: feishu}
BINDING_LINK_TTL = timedelta(days=1)
STALE_AFTER = timedelta(seconds=30)  # a message not picked up by then was never queued
MAX_STORED_TEXT = 8000  # what is kept of a message; the chat's own limit refuses a long question with its message


def adapter(platform: str):
    return ADAPTERS[platform]


def configured(platform: str) -> bool:
    return platform in ADAPTERS and ADAPTERS[platform].configured()


# --- receiving ------------------------------------------------------------------------------


def inbound_record(platform: str, event: Event) -> tuple[Inbound, bool]:
    """The event as an Inbound row; a retried delivery (the same message id) is the row already
    there, and `created` is False: it is answered once. A row still waiting for its answer long
    after it arrived (its task was never queued: the broker was down) counts as new again, so
    the platform's retry gets it answered."""
    try:
        with transaction.atomic():
            return Inbound.objects.create(platform=platform, message_id=event.message_id[:128], external_id=event.external_id[:128],
                                          chat_id=event.chat_id[:128], kind=event.kind, reply_to=(event.reply_to or "")[:512],
                                          text=(event.action if event.kind == "card" else event.text)[:MAX_STORED_TEXT]), True
    except IntegrityError:
        row = Inbound.objects.get(platform=platform, message_id=event.message_id[:128])
        stale = row.status == Inbound.Status.RECEIVED and row.received_at < timezone.now() - STALE_AFTER
        return row, stale


def binding_link(platform: str, external_id: str) -> str:
    """The person's one open binding link (a new one only when none is unused and unexpired)."""
    link = BindingLink.objects.filter(platform=platform, external_id=external_id, used_at__isnull=True,
                                      created_at__gte=timezone.now() - BINDING_LINK_TTL).order_by("-created_at").first()
    if link is None:
        link = BindingLink.objects.create(token=secrets.token_urlsafe(24), platform=platform, external_id=external_id)
    return f"{settings.SM_PUBLIC_URL.rstrip('/')}/channels/bind/{link.token}"


def answer_inbound(inbound_id: int) -> None:
    """Answer one recorded message (the Celery task's body). Runs with the platform as the
    audit channel, so every row it writes says where the request came from."""
    # Claimed in one UPDATE: a task the broker delivers twice answers once.
    if not Inbound.objects.filter(pk=inbound_id, status=Inbound.Status.RECEIVED).update(status=Inbound.Status.ANSWERING):
        return
    inbound = Inbound.objects.get(pk=inbound_id)
    meta = request_meta.set({"request_id": f"{inbound.platform}:{inbound.message_id}"[:64], "channel": inbound.platform})
    try:
        _answer(inbound)
    except Exception:
        log.exception("answering %s message %s failed", inbound.platform, inbound.message_id)
        _finish(inbound, Inbound.Status.FAILED)
        _send_text(inbound, "暂时无法回答，请稍后再试；急事请直接问店长。", status=Inbound.Status.FAILED)
    finally:
        request_meta.reset(meta)


def _answer(inbound: Inbound) -> None:
    platform, who = inbound.platform, inbound.external_id
    user = user_for(platform, who)
    if inbound.kind not in ("text", "card") or (inbound.kind == "text" and not inbound.text.strip()):
        _finish(inbound, Inbound.Status.IGNORED)
        return
    if user is None or not user.is_active:
        if user is not None:
            line = "这个账号已停用，请联系店长。"
        elif inbound.chat_id:  # a binding link is the person's own: never posted where others can open it
            line = f"你的{Platform(platform).label}账号还没有绑定 StoreMind：请先在和我的单聊里发一条消息，按提示完成绑定。"
        else:
            line = f"你的{Platform(platform).label}账号还没有绑定 StoreMind。请在浏览器打开 {binding_link(platform, who)} ，登录后即完成绑定。"
        _send_text(inbound, line)
        return
    if inbound.kind == "card":
        _send_text(inbound, decide_from_card(user=user, action=inbound.text, channel=platform))
        return
    from agent.services import chat_ask

    try:
        result, conv, _ = chat_ask(user=user, query=inbound.text, thread_id=_thread_id(platform, who, inbound.chat_id), channel=platform)
    except (ValidationError, PermissionDenied) as exc:
        _send_text(inbound, "；".join(getattr(exc, "messages", None) or [str(exc)]))
        return
    text = answer_markdown(result, conv.thread_id)
    if inbound.chat_id and (result.data or result.proposal):
        # Figures and proposals are the asker's (their stores, their roles): not for the whole group.
        if platform == Platform.DINGTALK:  # its robot answers a group through the group only
            _send_text(inbound, "经营数据和提案只在单聊里回答：请私聊我再问一次。")
            return
        _send_text(inbound, "已私信回复你。")
        _send_private(inbound, text)
    else:
        _send_text(inbound, text)
    if result.proposal:
        proposal_cards(result.proposal["id"], asker=user, inbound=inbound)


def _thread_id(platform: str, who: str, chat_id: str) -> str:
    """One thread per person and chat on each platform (follow-ups keep their store and period)."""
    return f"{platform}.{hashlib.sha1(f'{who}|{chat_id}'.encode()).hexdigest()[:20]}"


def answer_markdown(result, thread_id: str) -> str:
    """The answer as the platform shows it: its text, each source as 「《文档》› 章节」, and a link
    to the whole answer (tables, charts) on the chat page."""
    lines = [result.answer.strip()]
    sources = [c for c in result.citations if c.get("section_path")]
    legend = data_legend(result.data)
    if sources or legend:
        lines.append("")
        lines += [f"[{c['ref']}] 《{c['document']}》› {c['section_path'].split(' > ', 1)[-1].replace(' > ', ' › ')}" for c in sources]
        lines += legend
    lines.append(f"\n[在 StoreMind 查看完整回答]({settings.SM_PUBLIC_URL.rstrip('/')}/?thread={thread_id})")
    return "\n".join(lines)


def data_legend(data: list[dict]) -> list[str]:
    """「[D1]–[D5] 查询：热销商品（广州天河店 · 上周）」: the data rows' markers read in the message
    itself (they were bare [D1]…[D5] on the platforms, where rule sources had a line each)."""
    from agent.templatetags.storemind import category_label
    from ops.tools import TOOLS

    groups: dict[tuple, list[str]] = {}
    for row in data or []:
        params = row.get("params") or {}
        period = params.get("period")
        where = [str(params["store"]) if params.get("store") else "",
                 period.get("label", "") if isinstance(period, dict) else str(period or ""),
                 category_label(params["category"]) if params.get("category") else ""]
        tool = TOOLS.get(row.get("tool"))
        groups.setdefault((tool.title if tool else str(row.get("tool", "")), " · ".join(w for w in where if w)), []).append(row["ref"])
    return [f"[{refs[0]}]" + (f"–[{refs[-1]}]" if len(refs) > 1 else "") + f" 查询：{title}" + (f"（{where}）" if where else "")
            for (title, where), refs in groups.items()]


def _finish(inbound: Inbound, status: str) -> None:
    Inbound.objects.filter(pk=inbound.pk).update(status=status, answered_at=timezone.now())


def _send_text(inbound: Inbound, text: str, *, status: str = Inbound.Status.ANSWERED) -> None:
    delivery = Delivery.objects.create(platform=inbound.platform, to=inbound.external_id, kind="markdown", inbound=inbound,
                                       payload={"text": text, "reply_to": inbound.reply_to, "chat_id": inbound.chat_id})
    _finish(inbound, status)
    deliver(delivery.pk)


def _send_private(inbound: Inbound, text: str) -> None:
    """To the asker alone, through the app (not the group's reply address)."""
    delivery = Delivery.objects.create(platform=inbound.platform, to=inbound.external_id, kind="markdown", inbound=inbound,
                                       payload={"text": text, "reply_to": "", "chat_id": ""})
    deliver(delivery.pk)


# --- proposals as cards ----------------------------------------------------------------------


def proposal_card(proposal, viewer) -> Card:
    from workflow.services import can_confirm

    allowed, _ = can_confirm(viewer, proposal)
    pending = proposal.status == proposal.Status.PENDING
    lines = [("门店", proposal.store.name), ("提议人", proposal.proposed_by.username)]
    if proposal.kind == proposal.Kind.RESTOCK:
        lines += [(line["product"][:5], f"{line['quantity']}{line['unit']}") for line in proposal.payload.get("lines", [])][:4]
    else:
        lines += [("类别", proposal.payload.get("category", "")), ("严重程度", proposal.payload.get("severity", ""))]
    buttons = [("确认", f"confirm:{proposal.pk}"), ("拒绝", f"reject:{proposal.pk}")] if allowed and pending else []
    return Card(proposal_id=proposal.pk, title=f"{proposal.get_kind_display()} #{proposal.pk}", lines=lines, buttons=buttons,
                url=f"{settings.SM_PUBLIC_URL.rstrip('/')}/proposals/", status=proposal.get_status_display())


def proposal_cards(proposal_id: int, *, asker=None, inbound: Inbound | None = None) -> int:
    """The proposal as a card to the person who asked (status only, unless they may decide it)
    and to every bound person who may decide it for its store; one card per person, however
    often this runs. Returns how many were queued."""
    from workflow.models import Proposal
    from workflow.selectors import deciders_for

    proposal = Proposal.objects.select_related("store", "proposed_by").filter(pk=proposal_id).first()
    if proposal is None or proposal.status != Proposal.Status.PENDING:
        return 0
    people = {u.pk: u for u in deciders_for(proposal)}
    if asker is not None:
        people.setdefault(asker.pk, asker)
    queued = 0
    for identity in Identity.objects.filter(user_id__in=people).select_related("user"):
        if identity.platform != Platform.WECOM or not wecom.configured():
            continue  # cards are WeCom's; the other platforms get the answer's text and link
        card = proposal_card(proposal, people[identity.user_id])
        try:
            with transaction.atomic():
                delivery = Delivery.objects.create(platform=identity.platform, to=identity.external_id, kind="card", proposal_id=proposal.pk,
                                                   inbound=inbound, payload={"card": card.__dict__})
        except IntegrityError:
            continue  # this person has the card already
        queued += 1
        transaction.on_commit(lambda pk=delivery.pk: _queue_delivery(pk))
    return queued


def decide_from_card(*, user, action: str, channel: str) -> str:
    """A card button: 「confirm:42」 or 「reject:42」, through the same services as every other
    channel (the same checks, the same audit; pressing twice confirms once)."""
    from workflow.services import proposal_confirm, proposal_reject

    verb, _, number = (action or "").partition(":")
    if verb not in ("confirm", "reject") or not number.isdigit():
        return "这个按钮已失效，请到 StoreMind 的「操作提案」里处理。"
    try:
        if verb == "confirm":
            done = proposal_confirm(proposal=int(number), user=user)
        else:
            done = proposal_reject(proposal=int(number), user=user, reason=f"在{Platform(channel).label}中拒绝")
        said = "已确认" if done.status == done.Status.CONFIRMED else "已拒绝"
        if done.decided_by_id != user.pk:  # someone was quicker: say who, not as if this press did it
            return f"{done.get_kind_display()} #{done.pk} 已由 {done.decided_by.username} 处理（{done.get_status_display()}）。"
        return f"{said} {done.get_kind_display()} #{done.pk}：{done.content_text()}"
    except PermissionDenied as exc:
        return f"没有权限：{exc}"
    except (Conflict, NotFound) as exc:
        return exc.message
    except ValidationError as exc:
        return message_text(exc)


# --- sending ---------------------------------------------------------------------------------


def _queue_delivery(delivery_id: int) -> None:
    from .tasks import send_delivery

    send_delivery.delay(delivery_id)


def deliver(delivery_id: int) -> None:
    """Queue one delivery for sending (Celery; eager without a broker)."""
    transaction.on_commit(lambda: _queue_delivery(delivery_id))


def send(delivery_id: int) -> bool:
    """One attempt at sending. True when sent (or sent before); PlatformError propagates when
    it is worth retrying, and a failure that is not is recorded and ends there."""
    delivery = Delivery.objects.filter(pk=delivery_id).first()
    if delivery is None or delivery.status == Delivery.Status.SENT:
        return True
    Delivery.objects.filter(pk=delivery_id).update(attempts=F("attempts") + 1)
    platform = adapter(delivery.platform)
    try:
        if delivery.kind == "card":
            platform.send_card(delivery.to, Card(**delivery.payload["card"]))
        else:
            p = delivery.payload
            platform.send_markdown(delivery.to, p["text"], reply_to=p.get("reply_to", ""), chat_id=p.get("chat_id", ""))
    except httpx.HTTPError as exc:  # the platform did not answer (timeout, connection refused): worth another try
        Delivery.objects.filter(pk=delivery_id).update(last_error=f"网络错误：{type(exc).__name__}: {exc}"[:255])
        raise PlatformError(f"network: {type(exc).__name__}") from exc
    except PlatformError as exc:
        Delivery.objects.filter(pk=delivery_id).update(last_error=str(exc)[:255],
                                                      status=Delivery.Status.PENDING if exc.retryable else Delivery.Status.FAILED)
        if exc.retryable:
            raise
        log.warning("delivery %s failed for good: %s", delivery_id, exc)
        return False
    Delivery.objects.filter(pk=delivery_id).update(status=Delivery.Status.SENT, sent_at=timezone.now(), last_error="")
    return True


def give_up(delivery_id: int, error: str) -> None:
    Delivery.objects.filter(pk=delivery_id).update(status=Delivery.Status.FAILED, last_error=error[:255])


# --- binding ---------------------------------------------------------------------------------


def identity_bind(*, user, platform: str, external_id: str, by) -> Identity:
    """Bind a platform id to `user` (the user themself through a binding link, or an admin);
    audited. A platform id bound to someone else is refused: unbind it first."""
    if by is None or not (by.pk == user.pk or by.has_perm("channels.add_identity")):
        audit_denial(actor=by, attempt="channel bind", reason="binds someone else without channels.add_identity")
        raise PermissionDenied("只能绑定自己的账号；为别人绑定需要后台的绑定权限。")
    external_id = (external_id or "").strip()
    if platform not in Platform.values or not external_id or len(external_id) > 128:
        raise ValidationError({"external_id": ["平台用户 ID 不能为空，最长 128 个字符。"]})
    with transaction.atomic():
        existing = Identity.objects.select_for_update().filter(platform=platform, external_id=external_id).first()
        if existing is not None:
            if existing.user_id == user.pk:
                return existing
            raise Conflict(f"这个{Platform(platform).label}账号已绑定到另一个 StoreMind 账号，请先解绑。")
        identity = Identity.objects.create(platform=platform, external_id=external_id, user=user, bound_by=by)
        audit_record(actor=by, action=AuditLog.Action.CHANNEL_BOUND, target=identity, after={"platform": platform, "external_id": external_id,
                                                                              "user": user.username})
    return identity


def identity_unbind(*, identity: Identity, by) -> None:
    with transaction.atomic():
        audit_record(actor=by, action=AuditLog.Action.CHANNEL_UNBOUND, target=identity,
                     before={"platform": identity.platform, "external_id": identity.external_id, "user": identity.user.username})
        identity.delete()


def bind_with_link(*, token: str, user) -> Identity:
    """A binding link opened by a logged-in user: one use, within BINDING_LINK_TTL."""
    with transaction.atomic():
        link = binding_link_open(token, BINDING_LINK_TTL)
        link = BindingLink.objects.select_for_update().filter(pk=link.pk, used_at__isnull=True).first() if link else None
        if link is None:
            raise NotFound("这个绑定链接已失效，请在企业微信 / 钉钉 / 飞书里再发一条消息获取新链接。")
        identity = identity_bind(user=user, platform=link.platform, external_id=link.external_id, by=user)
        link.used_at = timezone.now()
        link.save(update_fields=["used_at"])
    return identity


__all__ = ["answer_inbound", "inbound_record", "identity_bind", "identity_unbind", "bind_with_link", "send", "proposal_cards",
           "decide_from_card", "configured", "adapter"]
