"""Actions over several turns: a pending action with slots, filled by follow-ups.

A restock request or a complaint ticket rarely arrives in one sentence. The thread keeps a
pending action (kind, store, product, quantity, reason / description) in the assistant
message's context; the next turn may fill or change a slot (「青岛啤酒，补20箱」「就补两箱吧」
「换成科罗娜」), accept the store offered (「好」), or cancel (「算了」). When the slots are
complete the workflow service creates a *pending proposal*; nothing is written to business
records until a person with the right role confirms. A question that fills nothing lets the
pending action expire. Permission comes first: a store the user may not propose for is said
so in the first reply, with the user's own store offered instead.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError

from core.errors import NotFound, message_text, messages_of
from core.roles import require
from ops.models import Product, Store
from ops.periods import cn_number
from ops.selectors import UnknownStore, find_store_in_text, known_products_text, longest_first_matches, resolve_store_for
from workflow.models import Ticket

from . import vocabulary as vocab

RESTOCK, TICKET = "restock", "ticket"
_QTY = re.compile(r"(\d+|[零〇一二两三四五六七八九十百千万]+)\s*(箱|瓶|杯|份|件|桶|个)")
_CANCEL = re.compile(r"^(算了|不用了|不要了|取消|撤销|不补了|别补了|先不补|先不用|先不要|不建了|先不建)|算了[吧啊]?[。！!]?$|(取消|撤销)(这个|这次)?(申请|补货|工单|提案)")
_YES = re.compile(r"^(好|好的|行|可以|嗯|对|是|是的|要|ok|okay|就这样|没问题|改吧|那就|生成|帮我生成)", re.IGNORECASE)
_TICKET_WORDS = re.compile(r"工单|投诉单|客诉单|" + vocab.TICKET_REQUEST + "|" + vocab.FILE_A_COMPLAINT)  # 「帮我登记个投诉」「登记客人的投诉」
# The request's own words, taken out of a ticket's description (「客人投诉酒有怪味 帮我建个投诉单」 lost 「怪味」
# to a 「four characters before 建」 prefix).
# A bare 「工单」 and the store it is for (「帮天河店建工单」) are request words too: descriptions read
# 「…肚子不舒服，工单」 and 「帮天河店，客人说服务差」.
_REQUEST_WORDS = re.compile(r"(帮我|给我|请|麻烦|替我)?(建|开|提|创建|登记|提交)(一?个|一?张|一下)?(投诉工单|客诉工单|工单|投诉单|客诉单)|"
                            r"(?:^|(?<=[，,。\s店]))(帮我|给我|请|麻烦|替我)?(工单|投诉单|客诉单)(?=[，,。：:\s]|$)|"
                            r"(帮我|给我|请|麻烦|替我)?(建|开|提|创建|登记|提交)(一?个|一?张|一下)?(客诉|投诉)|"
                            r"(?:^|(?<=[，,。\s]))(帮|给|替)[\u4e00-\u9fff]{1,6}?店(?=[，,。：:\s]|$|(建|开|提|创建|登记|提交)?(一?个|一?张|一下)?(工单|投诉单|客诉单))|"
                            r"帮我|麻烦|请")
_DESCRIPTION_EDGES = " ，,。：:；;、"
# The words right after a quantity: the thing asked for (「两箱喜力」 → 喜力).
_AFTER_UNIT = re.compile(r"的?([\u4e00-\u9fffA-Za-z][\u4e00-\u9fffA-Za-z0-9]{1,11})")
# The word right before a quantity, after the request's own words (「补货 喜力 5箱」「喜力补5箱」 → 喜力).
_BEFORE_QTY = re.compile(r"(?:^|[\s，,：:])([\u4e00-\u9fffA-Za-z][\u4e00-\u9fffA-Za-z0-9]{1,11}?)\s*(?:补货?|下单|订货?|进货?)?\s*$")
# The thing asked for with no quantity at all (「帮我补点冰块」 → 冰块): the message ends with it.
_AFTER_RESTOCK = re.compile(r"补货?(?:点|些|一点|一些|一下)?[：:\s]*([\u4e00-\u9fffA-Za-z][\u4e00-\u9fffA-Za-z0-9]{1,11}?)\s*[吧呗啊呀了。！!]*\s*$")
_REQUEST_LEAD = re.compile(r"^(补货?|下单|订货?|进货?|申请|帮我|再|还要|多|我要|我想|要|想|请|麻烦)+")
# A product said alone, answering 「要补哪个商品？」 (「喜力啊」「就喜力吧」): its name without the particles.
_ASKS_SOMETHING = re.compile(r"多少|几|怎|如何|哪|谁|吗|么|[?？]|是不是|有没有|能不能|可以|什么|啥")
_BARE_NAME = re.compile(r"^(就|要|补|是)?([\u4e00-\u9fffA-Za-z][\u4e00-\u9fffA-Za-z0-9]{0,11}?)(啊|呀|吧|呢|哦|啦|嘛|了)?[。！!～~]?$")
_ORDER_REF = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}-[A-Z]{2}-\d{8}-\d{5}(?!\d)")


@dataclass
class PendingAction:
    kind: str
    store: str | None = None  # store name
    skus: list[str] = field(default_factory=list)
    qty: int | None = None
    unit: str | None = None  # as said: 箱 or the product's own unit
    reason: str = ""
    description: str = ""  # tickets
    offer_store: str | None = None  # the user's own store, offered after a denial
    started_with: str = ""
    not_a_product: str = ""  # 「喜力」 in 「补两箱喜力」: what was asked for that we do not sell
    store_said: str = ""  # how the store was named (「天河店」): a refusal echoes it, never the full name
    offer_lines: list = field(default_factory=list)  # a restock offered after a stock answer, proposed on 「好」
    # sku → [qty, unit] already settled for that product alone: 「补5箱科罗娜和精酿IPA」 keeps 科罗娜's 5箱
    # while the glass-sold IPA is asked again in its own unit (qty / unit then apply to the others).
    settled: dict = field(default_factory=dict)

    def quantity_of(self, sku: str) -> tuple[int | None, str | None]:
        qty, unit = self.settled.get(sku) or (self.qty, self.unit)
        return qty, unit

    def missing(self) -> list[str]:
        if self.kind == TICKET:
            return [s for s, ok in (("store", self.store), ("description", self.description)) if not ok]
        has_qty = bool(self.skus) and all(self.quantity_of(sku)[0] for sku in self.skus) or bool(self.qty)
        return [s for s, ok in (("store", self.store), ("product", self.skus), ("qty", has_qty)) if not ok]

    def as_dict(self) -> dict:
        return {**asdict(self), "missing": self.missing()}

    @classmethod
    def from_dict(cls, data: dict | None) -> PendingAction | None:
        if not data or data.get("kind") not in (RESTOCK, TICKET):
            return None
        fields = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**fields)


@dataclass
class Parsed:
    """What one message says about an action's slots."""
    cancel: bool = False
    yes: bool = False
    store: Store | None = None
    store_words: str = ""
    store_problem: str = ""
    products: list[Product] = field(default_factory=list)
    qty: int | None = None
    unit: str | None = None
    not_a_product: str = ""

    @property
    def fills_anything(self) -> bool:
        return bool(self.cancel or self.yes or self.store or self.store_problem or self.products or self.qty)


def _product_names() -> list[tuple[str, Product]]:
    """(name or alias, product) of every product on sale, longest name first."""
    return sorted(((n, p) for p in Product.objects.filter(active=True) for n in [p.name, *p.aliases] if n),
                  key=lambda pair: len(pair[0]), reverse=True)


def products_in(text: str, names: list | None = None) -> list[Product]:
    """Products named by name or alias (青岛、科罗娜、生啤); the longest name wins at a spot. `names`:
    _product_names() read once by a caller that looks at several texts."""
    return list(dict.fromkeys(product for _, _, product in longest_first_matches(text, names or _product_names())))


def parse(text: str) -> Parsed:
    text = (text or "").strip()
    parsed = Parsed(cancel=bool(_CANCEL.search(text)), yes=bool(_YES.search(text)))
    try:
        match = find_store_in_text(text)
        parsed.store = match.store if match else None
        parsed.store_words = match.matched if match and match.store else ""
    except UnknownStore as exc:
        parsed.store_problem = exc.messages[0]
    parsed.products = products_in(text)
    if (m := _QTY.search(text)):
        parsed.qty, parsed.unit = cn_number(m.group(1)), m.group(2)
        after = _AFTER_UNIT.match(text, m.end()) if not parsed.products else None
        if after and not after.group(1).startswith(("给", "帮", "替", "到", "为", "送")) and "店" not in after.group(1):
            parsed.not_a_product = after.group(1)  # 「两箱喜力」; not 「两箱给天河店」
        elif not parsed.products and (before := _BEFORE_QTY.search(text[:m.start()])):
            name = _REQUEST_LEAD.sub("", before.group(1))
            if len(name) >= 2 and "店" not in name:  # 「给天河店补5箱」 names a store, not a product
                parsed.not_a_product = name  # 「补货 喜力 5箱」 asked 「要补哪个商品？」 as if nothing was named
    elif not parsed.products and not _ASKS_SOMETHING.search(text) and (named := _AFTER_RESTOCK.search(text)):
        name = _REQUEST_LEAD.sub("", named.group(1))
        if len(name) >= 2 and "店" not in name and not name.startswith("货") and name not in ("一下", "一点", "一些"):
            parsed.not_a_product = name  # 「帮我补点冰块」
    return parsed


# The clauses of a reply to a restock offer (「行 不过金汤力补20杯就够了 红牌先不要」).
_CLAUSES = re.compile(r"[，,。；;！!？?\s]+|不过|但是|另外|其他的?|其余的?")
_DROP = re.compile(r"不要|不用|不补|别补|先不|去掉|删掉|拿掉|划掉|不需要")
_DROP_ALL = re.compile(r"\s*(那|那就|算了)?(都|全部|全都)?(先)?(不要|不补|不用补|不需要|别补)(了|吧)*[。！!\s]*")
_NO_CHANGE = re.compile(r"不用改|不需要改|不改|照旧|按建议|就这样")
_ASKS_TO_CHANGE = re.compile(r"行吗|行不行|可以吗|可不可以|好吗|好不好|成吗|够吗|够不够")
_BARE_NUMBER = re.compile(r"(\d+|[零〇一二两三四五六七八九十百]+)\s*$")


@dataclass
class OfferChanges:
    """What a reply to 「要我生成补货提案吗？」 changes in the offered lines."""
    lines: list = field(default_factory=list)  # the offer as it now stands
    changed: list = field(default_factory=list)  # 「金汤力 20杯」「不补尊尼获加红牌」, as the reply will say them
    unclear: str = ""  # what could not be read, asked back


def offer_changes(text: str, lines: list[dict]) -> OfferChanges:
    """A quantity set (「金汤力补20杯就够了」) or a product dropped (「红牌先不要」) per clause, for the
    offered products only. It said 「已按建议量…生成」 and proposed the offer unchanged."""
    text = text or ""
    by_sku = {line["sku"]: dict(line) for line in lines}
    out = OfferChanges(lines=[dict(line) for line in lines])
    names = _product_names()
    if vocab.ASKS_SOMETHING.search(text):
        # 「好的，青岛啤酒补5瓶行吗」 asks for a change: asked back, never proposed unchanged. 「金汤力多少钱一杯」
        # asks something else: it changes nothing.
        if _ASKS_TO_CHANGE.search(text) and (_QTY.search(text) or products_in(text, names)):
            out.unclear = f"是要改数量吗？请直接说改成多少，例如「{_product_name(lines[0])}补{lines[0]['quantity'] // 2 or 1}{lines[0]['unit']}」。"
        return out
    out.lines = []
    if _DROP_ALL.fullmatch(text):  # 「都不要了」「先不补了」
        out.changed = ["都不补"]
        return out
    for clause in _segments(text, names):
        named = products_in(clause, names)
        qty = _QTY.search(clause)
        if not named:
            if qty:
                out.unclear = f"「{clause}」是要改哪个商品的数量？请说商品名，例如「{_product_name(lines[0])}改成{qty.group(0)}」。"
            elif _DROP.search(clause) and not _NO_CHANGE.search(clause):  # 「不用那么多」: of which?
                out.unclear = f"「{clause}」是要少补哪个商品？请说商品名和数量，例如「{_product_name(lines[0])}补{lines[0]['quantity'] // 2 or 1}{lines[0]['unit']}」。"
            continue
        foreign = [p.name for p in named if p.sku not in by_sku]
        if foreign:
            out.unclear = (f"这次建议里没有{'、'.join(foreign)}。要另外补，请在生成之后说「补{foreign[0]} 2箱」这样的商品和数量。")
            continue
        if _DROP.search(clause):
            for p in named:
                if by_sku.pop(p.sku, None) is not None:
                    out.changed.append(f"不补{p.name}")
        elif qty or (len(named) == 1 and _BARE_NUMBER.search(clause)):
            if len(named) > 1:
                out.unclear = f"「{clause}」里有几种商品，请一种一种说数量。"
                continue
            product = named[0]
            # 「青岛啤酒补20」: no unit, the offered line's own
            n, unit = (cn_number(qty.group(1)), qty.group(2)) if qty else (cn_number(_BARE_NUMBER.search(clause).group(1)), by_sku[product.sku]["unit"])
            if unit == Product.Unit.CASE and product.case_size <= 1 and product.unit != Product.Unit.CASE:
                out.unclear = f"{product.name}按{product.unit}卖，没有整箱，请按{product.unit}说数量。"
                continue
            line = by_sku[product.sku]
            quantity = product.in_sales_units(n, unit)
            if quantity <= 0:
                out.unclear = f"{product.name}的数量要大于 0；不补的话说「{product.name}不要」。"
                continue
            if quantity != line["quantity"]:
                line["reason"] = f"{line.get('reason', '')}；建议 {line['quantity']}{line['unit']}，提交人改为 {quantity}{line['unit']}".lstrip("；")
                line["quantity"] = quantity
                out.changed.append(f"{product.name} {quantity}{line['unit']}")
    out.lines = [line for sku, line in by_sku.items()]
    return out


def _segments(text: str, names: list) -> list[str]:
    """The clauses of a reply, each cut where a product is named: spaces are gone by the time a
    message is read (「金汤力补20杯就够了红牌先不要」), so a clause can hold two changes. What comes
    before the first name stays with it (「不要红牌」), and 「红牌和金汤力都不要」 stays one."""
    out: list[str] = []
    for clause in filter(None, _CLAUSES.split(text)):
        starts = sorted(start for start, _, _ in longest_first_matches(clause, names))[1:]
        pieces = [clause[a:b] for a, b in zip([0, *starts], [*starts, len(clause)])]
        merged: list[str] = []
        for piece in pieces:
            if merged and re.search(r"(和|跟|与|及|还有|、)$", merged[-1]) and not _QTY.search(merged[-1]):
                merged[-1] += piece
            else:
                merged.append(piece)
        out += merged
    return out


def _product_name(line: dict) -> str:
    product = Product.objects.filter(sku=line["sku"]).first()
    return product.name if product else line["sku"]


def bare_product_answer(text: str) -> str:
    """「喜力啊」 answering 「要补哪个商品？」: the name said (to be told it is not sold), or "" when
    the message is more than a name (a question, a quantity, a store)."""
    text = (text or "").strip()
    m = _BARE_NAME.match(text)
    if not m or _QTY.search(text) or _ASKS_SOMETHING.search(text) or "店" in text or _YES.search(text) or _CANCEL.search(text):
        return ""
    return m.group(2)


def start(question: str, *, user, history: list[tuple[str, str]]) -> tuple[PendingAction, Parsed]:
    """A new action request: the slots its first sentence already fills."""
    kind = TICKET if _TICKET_WORDS.search(question) else RESTOCK
    parsed = parse(question)
    pending = PendingAction(kind=kind, started_with=question[:200])
    if kind == TICKET:
        description = own_complaint(question)
        if len(description) < 5 and history:  # 「帮我建个工单」 after the complaint itself
            description = complaint_in_history(history) or description
        pending.description = description if len(description) >= 5 else ""
    return pending, parsed


# What a request to file a ticket says besides the complaint: the request, a 「算了」 or 「那」 before
# it, and the 「咋办」 of the question it was first asked as.
_NOT_THE_COMPLAINT = re.compile(r"^((算了|好吧|好的)|(那就|那|还是)(?=[，,\s]|帮|给|建|登|请|麻烦|$))+"
                                r"|(该?怎么办|咋办|咋整|怎么处理|如何处理|怎么弄)[吧啊呀？?。！!]*$|^[吧啊呀了]+$")


def own_complaint(text: str) -> str:
    """The complaint a message itself states, without the request around it."""
    description = _REQUEST_WORDS.sub("", re.sub(vocab.FILE_IT, "", text)).strip(_DESCRIPTION_EDGES)
    # What is left of 「帮我登记这个投诉」 is still the request (「登记这个投诉」), not a complaint.
    description = re.sub(vocab.TICKET_REQUEST, "", description).strip(_DESCRIPTION_EDGES)
    return _NOT_THE_COMPLAINT.sub("", description).strip(_DESCRIPTION_EDGES)


def complaint_in_history(history: list[tuple[str, str]]) -> str:
    """The latest earlier message that tells a complaint (「客人在炸鸡里吃出一根头发 咋办」), not the
    last one whatever it was: 「那要免单吗」 → 「算了 帮我建个投诉工单吧」 filed 「那要免单吗 算了吧」."""
    for question, _answer in reversed(history):
        said = own_complaint(question)
        if len(said) >= 5 and (vocab.GUEST_COMPLAINS.search(said) or vocab.SOMEONE_ELSE.search(said)
                               or ticket_category(said) != Ticket.Category.OTHER):
            return said
    return own_complaint(history[-1][0]) if history else ""


def merge(pending: PendingAction, parsed: Parsed, text: str) -> list[str]:
    """Fill or change slots from one message; returns what changed, for the trace."""
    changed = []
    if parsed.store is not None:
        pending.store, pending.offer_store, pending.store_said = parsed.store.name, None, parsed.store_words
        changed.append("store")
    elif parsed.yes and pending.offer_store and not pending.store:
        pending.store, pending.offer_store = pending.offer_store, None
        changed.append("store")
    if pending.kind == RESTOCK:
        if parsed.products:
            pending.skus, pending.not_a_product = [p.sku for p in parsed.products], ""
            changed.append("product")
        elif parsed.not_a_product:
            pending.not_a_product = parsed.not_a_product
        if parsed.qty:
            pending.qty, pending.unit = parsed.qty, parsed.unit
            changed.append("qty")
    elif not pending.description and text and not parsed.cancel and not (parsed.yes and len(text) <= 4):
        description = _REQUEST_WORDS.sub("", text).strip(_DESCRIPTION_EDGES)
        if len(description) >= 5:
            pending.description = description
            changed.append("description")
    return changed


PROPOSE = "workflow.add_proposal"


def _may_propose(user, store: Store) -> tuple[bool, str]:
    """The same checks as proposal_create (which checks again), refused the same way and
    audited: without the permission a denial; another store reads like an unknown one."""
    try:
        require(user, PROPOSE, attempt="propose", message="只有店员或店长可以提交提案。")
        resolve_store_for(user, store, PROPOSE, attempt="propose")
    except PermissionDenied as exc:
        return False, str(exc)
    except UnknownStore as exc:
        return False, exc.messages[0]
    return True, ""


def _what(kind: str) -> str:
    return "申请补货" if kind == RESTOCK else "建客诉工单"


def _lines(pending: PendingAction, products: dict[str, Product]) -> tuple[list[dict], str]:
    lines, said = [], []
    for sku in pending.skus:
        product = products[sku]
        qty, unit = pending.quantity_of(sku)
        quantity = product.in_sales_units(qty, unit)
        if unit == Product.Unit.CASE and product.unit != Product.Unit.CASE:
            said.append(f"{product.name} {qty}箱 × {product.case_size}{product.unit} = {quantity}{product.unit}")
        else:
            said.append(f"{product.name} {quantity}{product.unit}")
        # Switched mid-way (「科罗娜快没了，帮我申请补货」 → 「换成精酿IPA」): the first request named another product.
        named = products_in(pending.started_with)
        asked = pending.started_with[:60] if not named or product.sku in {p.sku for p in named} else \
            f"补{product.name}（最初说的是「{pending.started_with[:40]}」）"
        reason = f"聊天申请：{asked}" + (
            f"（{qty}箱×{product.case_size}{product.unit}）" if unit == Product.Unit.CASE else "")
        lines.append({"sku": product.sku, "quantity": quantity, "unit": product.unit, "reason": reason})
    return lines, "、".join(said)


def _key(user, pending: PendingAction, today) -> str:
    slots = f"{pending.kind}|{pending.store}|{','.join(pending.skus)}|{pending.qty}|{pending.unit}|{sorted(pending.settled.items())}|{pending.description}|{pending.started_with}|{today}"
    return f"chat:{user.pk}:{pending.kind}:{hashlib.sha256(slots.encode()).hexdigest()[:16]}"


@dataclass
class Step:
    """The outcome of one turn of an action: a reply, maybe a proposal, maybe still pending."""
    message: str
    pending: PendingAction | None = None
    proposal: object | None = None  # workflow Proposal
    detail: dict = field(default_factory=dict)


@dataclass
class Turn:
    """One turn of an action being advanced: the slots, who asks, and what the gates found."""

    pending: PendingAction
    user: Any
    today: Any
    suggest: Any = None  # store name → {sku: suggested quantity} (the low-stock figures), or None
    mine: list = field(default_factory=list)  # the stores the asker may propose for
    products: dict = field(default_factory=dict)
    suggested: bool = False

    @property
    def missing(self) -> list[str]:
        return self.pending.missing()


def _one_store_means_it(t: Turn) -> None:
    if t.pending.store is None and not t.pending.offer_store and len(t.mine) == 1:
        t.pending.store = t.mine[0].name  # a person working at one store means that store


def _may_propose_here(t: Turn) -> Step | None:
    pending, user = t.pending, t.user
    if pending.store is None:
        return None
    allowed, why = _may_propose(user, Store.objects.get(name=pending.store))
    if allowed:
        return None
    if "；" in why:  # 「你不能为深圳福田店提交提案」: which stores may be chosen is offered below
        why = why.split("；", 1)[0] + "。"
    pending.store, pending.store_said = None, ""
    if not user.has_perm(PROPOSE):
        return Step(why, None, detail={"denied": why})
    own = [s.name for s in t.mine]
    pending.offer_store = own[0] if len(own) == 1 else None
    offer = (f"可以为你所在的{own[0]}{_what(pending.kind)}，要改成{own[0]}吗？（回复「好」，或说门店名）" if len(own) == 1
             else f"你可以为这些门店{_what(pending.kind)}：{'、'.join(own)}，要哪一家？" if own else "你还没有被分配到任何门店，请联系管理员。")
    return Step(f"{why}{offer}", pending if own else None, detail={"denied": why, "offered": own})


def _ask_store(t: Turn) -> Step | None:
    if "store" not in t.missing:
        return None
    own = "、".join(s.name for s in t.mine)
    return Step(f"要为哪家门店{_what(t.pending.kind)}？" + (f"你所在的门店：{own}。" if own else ""), t.pending)


def _ask_description(t: Turn) -> Step | None:
    if "description" not in t.missing:
        return None
    return Step("请说一下客人投诉的情况：发生了什么、哪张单或哪位会员（如有），我再生成客诉工单提案。", t.pending)


def _ask_product(t: Turn) -> Step | None:
    if "product" not in t.missing:
        return None
    if t.pending.not_a_product:
        return Step(f"商品里没有「{t.pending.not_a_product}」。可以补货的商品：{known_products_text()}。要补哪个？", t.pending)
    return Step("要补哪个商品？请说商品名和数量，例如「青岛啤酒，补20箱」。", t.pending)


# Where a pending restock's quantity is changed (the chat card, /proposals/, MCP amend_proposal).
AMEND_ON_THE_CARD = "在提案卡片（或「操作提案」页面）上点「改数量」即可"


def _already_waiting(t: Turn) -> Step | None:
    """A product already waiting is said before the quantity is asked (it asked 「要补多少？」, then
    refused the answer): one pending request per product, a second would be ordered twice."""
    from workflow.chat import pending_restock_for
    from workflow.services import can_confirm

    waiting = pending_restock_for(Store.objects.get(name=t.pending.store), t.pending.skus, any_of=True)
    if waiting is None:
        return None
    has = "、".join(f"{line.get('product', line.get('sku'))} {line.get('quantity')}{line.get('unit', '')}"
                   for line in waiting.payload.get("lines", []))
    # The card below has 改数量 for its proposer and whoever may decide it: it said to reject and apply again.
    may_change = waiting.proposed_by_id == t.user.pk or can_confirm(t.user, waiting)[0]
    change = (AMEND_ON_THE_CARD if may_change else f"请提交人（{waiting.proposed_by.username}）或店长在提案卡片上改数量")
    return Step(f"{waiting.store.name}已有待确认的补货提案 #{waiting.pk}（{has}，{waiting.proposed_by.username} 提交），"
                f"没有重复生成。要改数量，{change}。", None, waiting,
                detail={"proposal_id": waiting.pk, "created": False, "duplicate_of": waiting.pk})


def _suggested_quantity(t: Turn) -> None:
    """No quantity said, and every product has the same low-stock suggestion: that one."""
    if "qty" not in t.missing or t.suggest is None:
        return
    figures = t.suggest(t.pending.store)
    open_skus = [sku for sku in t.pending.skus if sku not in t.pending.settled]
    known = {sku: figures[sku] for sku in open_skus if figures.get(sku)}
    if len(known) == len(open_skus) and len(set(known.values())) == 1:
        t.pending.qty, t.pending.unit = next(iter(known.values())), None  # the low-stock suggestion
        t.suggested = True


def _no_case_for_it(t: Turn) -> Step | None:
    """「5箱」 of a product that comes in no case (精酿IPA by the glass, case size 1) was proposed as
    「5箱 × 1杯 = 5杯」: ask again in its own unit. The products of the same request that do come in
    cases keep their 「5箱」 (「补5箱科罗娜和精酿IPA」 → 「30杯」 made 科罗娜 30瓶 too)."""
    if t.pending.unit != Product.Unit.CASE:
        return None
    open_skus = [s for s in t.pending.skus if s not in t.pending.settled]
    loose = [t.products[s] for s in open_skus if t.products[s].case_size <= 1 and t.products[s].unit != Product.Unit.CASE]
    if not loose:
        return None
    cased = [t.products[s] for s in open_skus if t.products[s] not in loose]
    for product in cased:
        t.pending.settled[product.sku] = [t.pending.qty, t.pending.unit]
    kept = "、".join(f"{p.name} {t.pending.qty}箱" for p in cased)
    t.pending.qty, t.pending.unit = None, None
    names, units = "、".join(p.name for p in loose), "、".join(sorted({p.unit for p in loose}))
    return Step((f"{kept}已记下。" if kept else "") + f"{names}按{units}计，没有整箱的包装。要补多少{units}？", t.pending)


def _ask_quantity(t: Turn) -> Step | None:
    """Asked only when no quantity was said and no single suggestion fills it."""
    _suggested_quantity(t)
    if "qty" not in t.missing:
        return None
    products = [t.products[s] for s in t.pending.skus if s not in t.pending.settled]
    names = "、".join(p.name for p in products)
    units = "、".join(sorted({p.unit for p in products}))
    # 「科罗娜按建议量补」 of a product not below its safety stock: there is no suggestion, and it says so.
    none = f"{names}现在不低于安全库存，没有建议补货量。" if len(products) == 1 and _BY_SUGGESTION.search(t.pending.started_with) else ""
    if all(p.case_size <= 1 for p in products):  # 精酿IPA by the glass: no case to offer
        return Step(f"{none}{names}要补多少{units}？", t.pending)
    return Step(f"{none}{names}要补多少？可以说「补20箱」或「补二十{units}」（一箱按每箱数量折算）。", t.pending)


_BY_SUGGESTION = re.compile(r"按(你的?)?建议")


def _create_restock(t: Turn) -> Step:
    from workflow.chat import propose_from_chat
    from workflow.models import Proposal

    lines, said = _lines(t.pending, t.products)
    try:
        proposal, created = propose_from_chat(user=t.user, kind=Proposal.Kind.RESTOCK, store=t.pending.store, payload={"lines": lines},
                                              key=_key(t.user, t.pending, t.today))
    except PermissionDenied as exc:
        return Step(f"不能提交这个提案：{exc}", None, detail={"denied": str(exc)})
    except ValidationError as exc:
        return Step("提案内容有误：" + "；".join(messages_of(exc)), t.pending)
    how = (f"（没说数量，按建议量：安全库存 + 近7天销量 − 在库；数量不对，{AMEND_ON_THE_CARD}）" if t.suggested else "")
    return Step(f"已为{proposal.store.name}生成补货提案 #{proposal.pk}：{said}{how}。店长确认之前不会下单。",
                None, proposal, detail={"proposal_id": proposal.pk, "created": created, "suggested_qty": t.suggested})


# The gates of an action's turn: checks, each asking for what is missing or refusing; the first that
# answers ends the turn, and its name is in the step's detail (the trace). What advance() prepares
# between them (the asker's one store, the products) is no gate.
Gate = tuple[str, Callable[[Turn], Step | None]]
STORE_GATES: tuple[Gate, ...] = (("may_propose_here", _may_propose_here), ("ask_store", _ask_store))
TICKET_GATES: tuple[Gate, ...] = (("ask_description", _ask_description),)
PRODUCT_GATES: tuple[Gate, ...] = (("ask_product", _ask_product),)
RESTOCK_GATES: tuple[Gate, ...] = (("already_waiting", _already_waiting), ("no_case_for_it", _no_case_for_it),
                                    ("ask_quantity", _ask_quantity))
GATES = STORE_GATES + TICKET_GATES + PRODUCT_GATES + RESTOCK_GATES


def _through(turn: Turn, gates: tuple[Gate, ...]) -> Step | None:
    for name, gate in gates:
        if (step := gate(turn)) is not None:
            return _named(step, name)
    return None


def _named(step: Step, name: str) -> Step:
    step.detail.setdefault("gate", name)  # which gate (or final step) answered, in the trace
    return step


def advance(pending: PendingAction, *, user, today, suggest=None) -> Step:
    """Check permission, ask for the next missing slot, or create the proposal."""
    turn = Turn(pending, user, today, suggest, mine=list(Store.objects.for_user(user, PROPOSE)))
    _one_store_means_it(turn)
    if (step := _through(turn, STORE_GATES)) is not None:
        return step
    if pending.kind == TICKET:
        return _through(turn, TICKET_GATES) or _named(_create_ticket(pending, user=user, today=today), "create_ticket")
    if (step := _through(turn, PRODUCT_GATES)) is not None:
        return step
    turn.products = {p.sku: p for p in Product.objects.filter(sku__in=pending.skus)}
    return _through(turn, RESTOCK_GATES) or _named(_create_restock(turn), "create_restock")


_TICKET_CATEGORIES = (  # first match wins: a guest made ill is food safety whatever else is said; waiting and rudeness
    # are service even when a drink is named (「等了40分钟酒还没上」)
    # Served raw (「鸡翅是生的」 was 其他 / 一般): 生的 as the food's state, not 发生的、卫生的、服务生的、先生的.
    (Ticket.Category.FOOD_SAFETY, r"拉肚子|肚子疼|肚子不舒服|腹痛|吃坏|喝坏|食物中毒|变质|不新鲜|馊|没熟|不熟|夹生|半生不熟|"
                                  r"没[烤煮炸煎蒸烧焖]熟|没[烤煮炸煎蒸烧]透|(?<![发卫陌产务先学医])生的(?!气|意|日)|带血丝|异物|头发|虫子?|苍蝇|过敏"),
    (Ticket.Category.SERVICE, r"态度|服务员|服务差|太慢|慢死|等了|等太久|催|没人理|不理|上菜慢|上酒慢|骂"),
    (Ticket.Category.HYGIENE, r"脏|卫生|厕所|洗手间|蟑螂|老鼠|桌子|地面|臭"),
    (Ticket.Category.DRINKS, r"酒|啤|饮料|饮品|异味|怪味|味道|口感|变味|酸|太淡|淡了|苦|没气"),
    (Ticket.Category.CHECKOUT, r"结账|收银|多收|收错|扣错|找零|小票|发票|退款"),
    (Ticket.Category.MEMBERSHIP, r"会员|储值|积分|余额"),
    # Made ill by what they ate or drank (「喝了精酿后不舒服」 was 其他); a cold room (「空调太冷坐着不舒服」)
    # or a drunk guest being sick (「喝醉了吐了一地」) is not food safety.
    (Ticket.Category.FOOD_SAFETY, r"(吃|喝)(?![^，。！？]{0,6}醉)[^，。！？]{0,10}(不舒服|身体不适|呕吐|吐了|头晕|头疼|头痛|恶心|难受)"),
)


def ticket_category(text: str) -> str:
    """From the complaint's words (the request's own 「投诉工单」 names no category)."""
    return next((name for name, pattern in _TICKET_CATEGORIES if re.search(pattern, text)), Ticket.Category.OTHER)


def ticket_severity(text: str) -> str:
    """The SOP: anything about a guest's health is 严重; a claim, exposure or a report elsewhere
    较重, and so is unsafe food nobody is ill from yet; else 一般 (「投诉」 alone is every ticket's word, not a degree)."""
    # 恶心 and 难受 only right after eating or drinking (「吃饭的时候服务员态度恶心」 is a rude waiter),
    # 头疼 not as the idiom (「一直催单，真让人头疼」 is a hassle, not an illness).
    text = vocab.NOT_ILL.sub("", text)  # 「没什么不舒服」 rules an illness out
    if re.search(r"不舒服|身体不适|就医|医院|[打叫拨]打?120|急救|受伤|过敏|拉肚子|肚子[^，。！？]{0,4}[疼痛]|腹痛|胃[^，。！？]{0,4}[疼痛]|呕吐|头晕|晕倒|吐了|食物中毒"
                 r"|(?<!让人)(?<!令人)(?<!真)(?<!很)(?<!太)头(疼|痛)(?!的是)"
                 r"|(吃|喝)[完了过](?![^，。！？]{0,6}醉)[^，。！？]{0,6}(恶心|难受)", text):
        return "严重"
    if re.search(r"赔|曝光|媒体|记者|发网上|差评|投诉到|12315|报警", text):
        return "较重"
    # Food that could make a guest ill (served raw, spoiled, a foreign body) before anyone is: more than 一般.
    return "较重" if ticket_category(text) == Ticket.Category.FOOD_SAFETY else "一般"


def _create_ticket(pending: PendingAction, *, user, today) -> Step:
    from workflow.chat import propose_from_chat
    from workflow.models import Proposal
    from workflow.payloads import DESCRIPTION_MAX

    text = pending.description
    category, severity = ticket_category(text), ticket_severity(text)
    payload = {"category": category, "severity": severity, "description": text[:DESCRIPTION_MAX]}
    if (ref := _ORDER_REF.search(text)):
        payload["order"] = ref.group(0)
    if (mem := vocab.MEMBER_NO.search(text)):
        payload["member"] = mem.group(0).upper()
    try:
        proposal, created = propose_from_chat(user=user, kind=Proposal.Kind.TICKET, store=pending.store, payload=payload,
                                              key=_key(user, pending, today))
    except PermissionDenied as exc:
        return Step(f"不能提交这个提案：{exc}", None, detail={"denied": str(exc)})
    except ValidationError as exc:
        messages = messages_of(exc)
        return Step("提案内容有误：" + "；".join(messages), pending)
    except NotFound as exc:  # the order or member the complaint names is not there
        return Step(f"提案内容有误：{exc.message}", pending)
    return Step(f"已为{proposal.store.name}生成客诉工单提案 #{proposal.pk}（{category}，{severity}）。确认后才会建立工单；店员和店长都可以确认。",
                None, proposal, detail={"proposal_id": proposal.pk, "created": created})


CANCELLED = "好的，已取消这次{what}，没有提交任何提案。"


def cancelled(pending: PendingAction) -> Step:
    return Step(CANCELLED.format(what=_what(pending.kind)), None, detail={"cancelled": pending.kind})


def amend_quantity_in_chat(*, user, proposal_id, said: str) -> str | None:
    """「改成3箱」 right after the chat said the restock already waits as #N: the quantity of that
    proposal's one product, changed through the audited service behind the card's 改数量 (the
    same content again changes nothing); of several products, where to change which. None where
    it cannot apply: not a pending restock, no case for 「箱」, or not the asker's to change."""
    from core.errors import Conflict
    from workflow.models import Proposal
    from workflow.selectors import proposal_for_status
    from workflow.services import proposal_amend

    parsed = parse(said)
    proposal = proposal_for_status(user, int(proposal_id)) if parsed.qty and str(proposal_id).isdigit() else None  # only one they may see
    if proposal is None or proposal.kind != Proposal.Kind.RESTOCK or proposal.status != Proposal.Status.PENDING:
        return None
    lines = (proposal.payload or {}).get("lines", [])
    if len(lines) > 1:  # which of its products is meant is not said
        names = "、".join(str(line.get("product") or line.get("sku")) for line in lines)
        return f"补货提案 #{proposal.pk} 里有 {len(lines)} 种商品（{names}），请在提案卡片上点「改数量」改对应的那一行。"
    if len(lines) != 1:
        return None
    product = Product.objects.filter(sku=lines[0].get("sku")).first()
    if product is None or (parsed.unit == Product.Unit.CASE and product.case_size <= 1 and product.unit != Product.Unit.CASE):
        return None
    quantity = product.in_sales_units(parsed.qty, parsed.unit)
    try:
        proposal_amend(proposal=proposal, user=user, payload={"lines": [{**lines[0], "quantity": quantity}]})
    except (PermissionDenied, ValidationError, Conflict, NotFound):
        return None
    as_said = f"{parsed.qty}箱（{quantity}{product.unit}）" if parsed.unit == Product.Unit.CASE and product.unit != Product.Unit.CASE \
        else f"{quantity}{product.unit}"
    return f"已把补货提案 #{proposal.pk} 的{product.name}改为 {as_said}，改动记入审计。店长确认之前不会下单。"


def change_ticket_in_chat(*, user, proposal_id, value: str) -> str:
    """「严重程度改成严重」「类别改成食品安全」 right after a complaint ticket was proposed: that field
    changed through the audited service behind the card's edit (the same value again changes nothing)."""
    from core.errors import Conflict
    from workflow.models import Proposal
    from workflow.selectors import proposal_for_status
    from workflow.services import proposal_amend

    if not value:
        return ("严重程度只能是" + "、".join(Ticket.Severity.values) + "，类别只能是" + "、".join(Ticket.Category.values)
                + "。请说「严重程度改成严重」或「类别改成食品安全」。")
    proposal = proposal_for_status(user, int(proposal_id)) if str(proposal_id).isdigit() else None
    if proposal is None or proposal.kind != Proposal.Kind.TICKET:
        return "没有找到要修改的客诉工单提案。"
    if proposal.status != Proposal.Status.PENDING:
        return f"客诉工单提案 #{proposal.pk} 已经是「{proposal.get_status_display()}」，不能再修改。"
    field, label = ("severity", "严重程度") if value in Ticket.Severity.values else ("category", "类别")
    payload = dict(proposal.payload or {})
    if payload.get(field) == value:
        return f"客诉工单提案 #{proposal.pk} 的{label}已经是「{value}」。"
    try:
        proposal_amend(proposal=proposal, user=user, payload={**payload, field: value})
    except (PermissionDenied, ValidationError, Conflict, NotFound) as exc:
        return f"没能修改客诉工单提案 #{proposal.pk}：{message_text(exc)}"
    return (f"已把客诉工单提案 #{proposal.pk} 的{label}改为「{value}」，改动记入审计。确认后才会建立工单。"
            + (SEVERITY_ADVICE.get(value, "") if field == "severity" else ""))


def add_ticket_details_in_chat(*, user, proposal_id, said: str) -> str:
    """「桌号A5 他吃了一口」 right after a complaint ticket was proposed: added to that ticket's
    description through the audited service behind the card's edit (the same words again change
    nothing). Where it cannot be added, says why and where to go."""
    from core.errors import Conflict
    from workflow.models import Proposal
    from workflow.payloads import DESCRIPTION_MAX
    from workflow.selectors import proposal_for_status
    from workflow.services import proposal_amend

    proposal = proposal_for_status(user, int(proposal_id)) if str(proposal_id).isdigit() else None
    if proposal is None or proposal.kind != Proposal.Kind.TICKET:
        return "没有找到要补充的客诉工单提案。要登记新的客诉，可以说「帮我建个投诉工单：8号桌客人说酒有异味」。"
    if proposal.status != Proposal.Status.PENDING:
        return f"客诉工单提案 #{proposal.pk} 已经是「{proposal.get_status_display()}」，不能再补充；后续情况请在工单里跟进。"
    payload = dict(proposal.payload or {})
    # 「补充一下是8号桌…」: the detail, not the words that announce it.
    addition = re.sub(r"^(再|另外)?(补充|加上|加一句|还有)(一下|一点|一句)?(是|就是)?[：:，,\s]*", "", re.sub(r"\s+", " ", said).strip()) \
        or re.sub(r"\s+", " ", said).strip()
    description = payload.get("description", "")
    if addition in description:
        return f"这条补充已经在客诉工单提案 #{proposal.pk} 里了。"
    combined = f"{description}；补充：{addition}"
    if len(combined) > DESCRIPTION_MAX:
        return f"客诉工单提案 #{proposal.pk} 的描述最多 {DESCRIPTION_MAX} 字，放不下这段补充，请在提案卡片上编辑。"
    # The severity is read again from the whole complaint, never lowered: 「他现在说肚子有点疼」 after
    # 「鸡翅是生的」 stayed 较重, while the same facts said at once were 严重.
    severity = max(payload.get("severity", "一般"), ticket_severity(combined), key=SEVERITY_ORDER.index)
    raised = severity != payload.get("severity")
    try:
        proposal_amend(proposal=proposal, user=user, payload={**payload, "description": combined, "severity": severity})
    except (PermissionDenied, ValidationError, Conflict, NotFound) as exc:
        return f"没能补充到客诉工单提案 #{proposal.pk}：{message_text(exc)}"
    return (f"已把「{addition}」补充到客诉工单提案 #{proposal.pk} 的描述里" + (f"，严重程度改为「{severity}」" if raised else "")
            + "，改动记入审计。确认后才会建立工单。" + SEVERITY_ADVICE.get(severity, "") * raised)


SEVERITY_ORDER = list(Ticket.Severity.values)  # lowest first
# What the complaint SOPs of any chain ask once a complaint turns serious: said with the raised severity.
SEVERITY_ADVICE = {"严重": "客人身体不适：请立即建议客人就医，并马上通知店长。", "较重": "请尽快通知店长处理。"}
