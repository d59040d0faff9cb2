"""Intent routing: the shared signal table (agent/vocabulary.py) first, an LLM only for what
the rules leave undecided.

Signals are counted by occurrence, not by pattern: 「深圳福田店热销排行前五」 has three data
words and must count as three. A question that mixes data words into a rule question
(「低于安全库存要怎么处理」) is a rule question unless it names what the data would be about
(a store, a member) or asks the data part in a clause of its own. Every decision carries a
reason that names the table entries that matched.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from ops.periods import cn_number

from . import vocabulary as vocab
from .vocabulary import ACTION, BOTH, DATA, OUT_OF_SCOPE, POLICY

INTENTS = (POLICY, DATA, BOTH, ACTION, OUT_OF_SCOPE)
THRESHOLD = 2  # a strong signal alone, or two weak ones
_CLAUSES = re.compile(r"[，,。；;！!？?\n]+")
# A clause that asks for something: a question word or particle, or a request to show.
_ASKS = re.compile(r"多少|几|怎么样|如何|咋样|怎样|怎么|哪|谁|吗|嘛|么|呢|[?？]|是不是|有没有|查|看看|看一下|看下|告诉|列出|给我|报一下|说一下")
# Doing something with a figure (print it, send it, show it) rather than asking for it.
_HANDLES = re.compile(r"打出来|打印|打小票|打给|发给|发到|发(个|条|他|她)?(朋友圈|微信)|截图|截个图|截屏|拍照|拍(一)?下|拍下来|"
                      r"给(他|她|客人|顾客)看|告诉(他|她|客人|顾客)")


@dataclass
class Route:
    intent: str
    reason: str
    scores: dict = field(default_factory=dict)
    layer: str = "rules"
    decided: bool = True
    decline: str = ""  # out of scope: the one-line reason given to the user
    rule: str = ""  # the routing rule that decided (ROUTING_RULES), when the rules did
    # A request the product answers itself (agent.pipeline.requests): the handler's name and what it acts on.
    handler: str = ""
    target: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"intent": self.intent, "reason": self.reason, "scores": self.scores, "layer": self.layer,
                **({"rule": self.rule} if self.rule else {}), **({"handler": self.handler} if self.handler else {})}


@dataclass(frozen=True)
class Turn:
    """What the request rules read besides the routed text: the message as typed (a follow-up is
    routed as resolved, a request is read as typed), the proposal this thread is on, whether
    someone is signed in (a proposal's status is someone's)."""

    said: str
    proposal_id: str | None = None
    signed_in: bool = True
    pending: bool = False  # a restock or ticket in this thread waits for the asker's reply
    steps: int = 0  # how many numbered items the previous answer listed (「第二步是啥」 asks for one)
    ticket: bool = False  # the thread's proposal is a complaint ticket (more details of it may follow)
    answered: bool = False  # the previous turn answered from the SOPs
    after_data: bool = False  # the previous turn answered with figures (「比上上个月涨了还是跌了」 set against them)


@dataclass
class _Reading:
    hits: list
    data: int
    data_core: int  # without the time-range entry: a date alone asks for nothing
    policy: int
    policy_core: int  # without topic words

    @property
    def is_data(self) -> bool:
        return self.data >= THRESHOLD and self.data_core > 0

    @property
    def is_policy(self) -> bool:
        return self.policy_core >= THRESHOLD


def _read(text: str) -> _Reading:
    hits = vocab.match(text)
    data = vocab.score(hits, DATA)
    time_words = sum(h.score for h in hits if h.signal.intent == DATA and h.signal.tool is None)
    return _Reading(hits, data, data - time_words, vocab.score(hits, POLICY), vocab.score(hits, POLICY, topics=False))


def _names_its_subject(text: str) -> bool:
    """Does the question name what data it is about (a store, all stores, a member)?"""
    if vocab.MEMBER_KEY.search(text):
        return True
    from ops.selectors import UnknownStore, find_store_in_text

    try:
        return find_store_in_text(text) is not None
    except UnknownStore:
        return True


def _is_a_product_name(text: str, *, anywhere: bool = False) -> bool:
    """Is `text` exactly a product's name or alias (「补科罗娜」, not 「补一瓶黑牌给客人」), or, with
    `anywhere`, does it name one?"""
    from ops.selectors import find_product_in_text

    found = find_product_in_text(text)
    return found is not None and (anywhere or found[0] == text.strip())


def _names_two_periods(text: str, today: date | None) -> bool:
    from ops.periods import names_two_periods
    from ops.tools import local_today

    return names_two_periods(text, today or local_today(), counting_the_future=True)


def _asks_both(text: str, whole: _Reading) -> bool:
    if _names_its_subject(text):
        return True
    # 「上周卖了多少，满减券的规则是什么」: the data part stands in a clause of its own.
    clauses = [_read(c) for c in _CLAUSES.split(text) if c.strip()]
    return any(c.is_data and not c.is_policy for c in clauses) and any(c.is_policy for c in clauses)


def _about_the_store(text: str, r: _Reading) -> bool:
    """Does an out-of-scope question still ask about the store? A generic question frame
    (「要不要带伞」's 要不要, 「多少钱」) does not make 「明天会下雨吗」 a rule question; a rule word
    (规定, 找谁, 怎么算) does, and so does a word of the store's world (客人, 酒, 上班 …) next to
    an out-of-scope topic word (「客人在减肥…」 is a question about serving a guest). Salary and other people's
    personal details are declined even about the store's own staff."""
    if any(h.signal.intent == POLICY and not h.signal.topic and not h.signal.frame for h in r.hits):
        return True
    top = max((h for h in r.hits if h.signal.intent == OUT_OF_SCOPE), key=lambda h: h.score)
    if top.signal.name == "薪资":  # one's own pay rules, not a named person's pay
        return bool(vocab.PAY_RULES.search(text)) and not vocab.SOMEONE_ELSE.search(text)
    if top.signal.name == "个人生活":
        return vocab.names_the_job(text) or r.data_core > 0
    return top.signal.name == "与门店无关" and (vocab.about_the_store(text) or r.data_core > 0)


def _data_only_describes(text: str) -> bool:
    """「科罗娜卖光了，客人还点咋办」「九点多单子爆了…咋弄」: the data words tell what happened,
    they ask for no figure. 「客人让我把他卡里还剩多少钱打出来给他看看，可以吗」: the figure is
    the object of something the asker wants to do, and the question is whether they may.
    True when no clause with a data word asks for it (no 多少/几/哪/吗 … in it, or only as the
    object of printing, sending, showing) — then the question is a rule question."""
    clauses = [c for c in _CLAUSES.split(text) if c.strip()]
    data_clauses = [c for c in clauses if _read(c).data_core > 0]
    return bool(data_clauses) and not any(_ASKS.search(c) and not _HANDLES.search(c) for c in data_clauses)


def _only_question_words(r: _Reading) -> bool:
    """The policy side is nothing but question words (哪些, 什么时候 …) and topic words."""
    return all(h.signal.name in vocab.QUESTION_WORD_SIGNALS or h.signal.topic for h in r.hits if h.signal.intent == POLICY)


def _core_data_signals(r: _Reading) -> set[str]:
    return {h.signal.name for h in r.hits if h.signal.intent == DATA and h.signal.tool is not None}


def _asks_a_price(text: str, r: _Reading) -> bool:
    """「扎啤一杯现在卖多少钱」「多少钱一瓶」: a price is on the drinks list. Only when 卖多少钱 is the
    one data signal and no period is named (「上周每杯平均卖多少钱」 is a figure over a period)."""
    asks = vocab.PRICE.search(text) or (re.search(r"多少钱", text) and _is_a_product_name(text, anywhere=True))  # 「长岛冰茶卖多少钱」
    return bool(asks) and _core_data_signals(r) <= {"营业额"} and r.data == r.data_core \
        and not re.search(r"卖了|营业额|销售额|营收|流水|业绩", text)


def _someone_elses_card(r: _Reading, text: str) -> bool:
    """「一个女的说是客人姐姐，想查她弟弟卡里还有多少钱」: someone other than the cardholder wants a
    member's balance; the question is whether to tell them. Sales figures a boss wants are
    still a data request (「他想知道上周哪家店卖得最好」)."""
    return _core_data_signals(r) == {"会员余额"} and bool(vocab.THIRD_PARTY_WANTS.search(text))


@dataclass
class _Asked:
    """A question being routed: its text, what the signal table read in it, the intents' scores."""

    text: str
    today: date | None
    r: _Reading
    scores: dict
    turn: Turn

    def why(self, *intents) -> str:
        hits = self.r.hits
        return "；".join(f"{n}：{'、'.join(vocab.labels(hits, n))}（{self.scores[n]} 分）" for n in intents if vocab.labels(hits, n))


STATUS_MAX_CHARS = 40  # a question about a proposal's status is short; longer ones ask a rule
PAGE_REQUEST_MAX_CHARS = 24  # 「查看审计记录」: a request to see a page, not a question


def _decides_a_proposal(q: _Asked) -> Route | None:
    """「确认提案7」: a proposal is confirmed or rejected by a person on its card (the chat page,
    /proposals/, the admin), never by the assistant; the answer says where, instead of refusing."""
    said = q.turn.said
    if vocab.ASKS_WHERE_IT_STANDS.search(said):
        return None
    m = vocab.DECIDE_PROPOSAL.search(said)
    after = None if m else vocab.DECIDE_PROPOSAL_AFTER.search(said)
    # 「确认提案」 right after the proposal was made in this thread was declined as unrelated to the store.
    this = None if m or after else (q.turn.proposal_id and vocab.DECIDE_THIS.fullmatch(said))
    if not (m or after or this):
        return None
    pk = str(next(g for g in m.groups()[1:] if g) if m else after.group(1) if after else q.turn.proposal_id)
    return Route(ACTION, f"确认或驳回提案 #{pk}：在提案卡片上完成，助手不代为决定", handler="decide_in_chat",
                 target={"proposal": pk})


def _withdraws_a_proposal(q: _Asked) -> Route | None:
    """「撤回刚才那个工单」「算了先不补了」 right after this thread made a proposal, or 「撤回提案3」: the
    proposer takes it back through the audited service (it was answered from the rule on 撤销核销).
    A bare 「算了」 takes nothing back (a_reply_to_nothing_asked says what is still waiting), and what
    someone else cancelled (「客人把外卖取消了」「他说不要了」) is no withdrawal."""
    said = q.turn.said.strip()
    if (len(said) > vocab.WITHDRAW_MAX_CHARS or q.turn.pending or not q.turn.signed_in or not vocab.WITHDRAW_PROPOSAL.search(said)
            or vocab.ASKS_SOMETHING.search(said) or vocab.NOT_A_PROPOSAL.search(said) or vocab.SOMEONE_ELSE.search(said)):
        return None
    number = vocab.PROPOSAL_NUMBER.search(said)
    pk = next(g for g in number.groups() if g) if number else q.turn.proposal_id
    if not pk:
        return None
    return Route(ACTION, f"撤回提案 #{pk}（只有提交人可以撤回）", handler="withdraw_in_chat", target={"proposal": str(pk)})


def _asks_for_a_page(q: _Asked) -> Route | None:
    """「查看审计记录」: a short request to see a page of the product gets its address."""
    said = q.turn.said.strip()
    if len(said) > PAGE_REQUEST_MAX_CHARS or not vocab.SHOW_ME.search(said):
        return None
    page = next(((name, url, also) for pattern, name, url, also in vocab.PAGES if pattern.search(said)), None)
    if page is None:
        return None
    name, url, also = page
    return Route(ACTION, f"找页面：{name}（{url}）", handler="point_to_page",
                 target={"name": name, "url": str(url), "also": str(also)})


def _asks_where_proposals_stand(q: _Asked) -> Route | None:
    """「我提的补货申请批了没」「有哪些待我确认的补货申请」「提案6是什么」: the asker's proposals
    themselves, not a rule about proposals (「补货申请被拒了怎么办」 asks for the rule)."""
    said = q.turn.said.strip()
    if not q.turn.signed_in or len(said) > STATUS_MAX_CHARS or vocab.ASKS_HOW.search(said):
        return None
    if number := vocab.PROPOSAL_NUMBER.search(said):
        pk = int(next(g for g in number.groups() if g))
        # 「提案6是什么」 was declined as unrelated to the store.
        return Route(ACTION, f"查提案 #{pk}", handler="proposal_status", target={"proposal": pk})
    awaiting = bool(vocab.AWAITING_ME.search(said))
    # 「科罗娜为什么被拒了」: a product named with 被拒 asks about its restock proposal.
    product_refused = bool(vocab.WHY_REFUSED.search(said)) and _is_a_product_name(said, anywhere=True)
    if not (awaiting or product_refused or vocab.PROPOSAL_STATUS.search(said)):
        return None
    kind = "restock" if "补货" in said or product_refused else "ticket" if re.search(r"工单|客诉|投诉", said) else None
    return Route(ACTION, "查提案进度：" + ("待我确认的提案" if awaiting else "我提交的提案"), handler="proposal_status",
                 target={"awaiting_me": awaiting, "kind": kind})


def _a_reply_to_nothing_asked(q: _Asked) -> Route | None:
    """「算了」「五箱吧」 with no restock or ticket waiting for a reply were searched in the rules
    (and filed as unanswered questions): say that nothing waits, and how to start one."""
    said = q.turn.said
    if q.turn.pending or not (vocab.BARE_CANCEL.fullmatch(said) or vocab.BARE_QUANTITY.fullmatch(said)):
        return None
    return Route(ACTION, "只回了数量或「算了」，但没有等待回复的补货申请或工单", handler="nothing_pending",
                 target={"cancel": bool(vocab.BARE_CANCEL.fullmatch(said)), "proposal": q.turn.proposal_id})


def asked_step(said: str) -> int | None:
    """「刚才说的第二步是啥」 → 2; None when the message asks for no numbered item."""
    m = vocab.STEP_AGAIN.fullmatch(said or "")
    if m is None:
        return None
    try:
        return cn_number(m.group("n"))
    except ValueError:
        return None


def _a_step_of_the_last_answer(q: _Asked) -> Route | None:
    """「第二步是啥」 right after an answer that listed steps: that step, from that answer (it was
    searched in the SOPs on its own and answered from an unrelated list)."""
    n = asked_step(q.turn.said)
    if n is None or not (q.turn.steps or q.turn.answered):  # an answer with no numbered lines: said so, not searched
        return None
    return Route(POLICY, f"问上一条回答里的第 {n} 条", handler="repeat_step", target={"n": n})


def _changes_the_ticket(q: _Asked) -> Route | None:
    """「严重程度改成严重」 right after a complaint ticket was proposed: that field, changed on it."""
    if not q.turn.ticket or not q.turn.proposal_id or not (m := vocab.CHANGE_THE_TICKET.fullmatch(q.turn.said)):
        return None
    from workflow.models import Ticket

    value, field = m.group("value"), m.group("field")
    severity = value in Ticket.Severity.values
    if not (severity or value in Ticket.Category.values) or (m.group("verb") == "算" and not field):
        return None  # 「算其他」 alone, or a value a ticket does not have
    if field and bool(vocab.SEVERITY_FIELD.search(field)) != severity:
        value = ""  # 「类别改成严重」: which was meant is asked back
    return Route(ACTION, f"修改刚提交的客诉工单提案 #{q.turn.proposal_id}：{value or '字段和取值对不上'}", handler="ticket_change",
                 target={"proposal": q.turn.proposal_id, "value": value})


def _details_for_the_ticket(q: _Asked) -> Route | None:
    """「他吃了一口 现在没不舒服 桌号A5」 right after a complaint ticket was proposed: more of that
    complaint, not a rules question (it was answered from 外卖差评与退款, and the ticket kept only
    the first sentence). Never a question, figures or a request of its own."""
    said = q.turn.said.strip()
    if (not q.turn.ticket or not q.turn.proposal_id or vocab.ASKS_SOMETHING.search(said) or q.scores[DATA]
            or q.scores[ACTION] or vocab.CANCEL_A_PROPOSAL.search(said) or not vocab.COMPLAINT_DETAIL.search(said)):
        return None
    return Route(ACTION, f"补充刚提交的客诉工单提案 #{q.turn.proposal_id}", handler="ticket_details",
                 target={"proposal": q.turn.proposal_id})


def small_talk_kind(said: str) -> str | None:
    """「你好」「谢谢」「好的」「拜拜」 or only emoji: which kind of talk (None: a question or request)."""
    text = (said or "").strip().lower()
    if not text:
        return None
    if not vocab.SMALL_TALK_ANY.fullmatch(text):  # 👍 and 👌 are an acknowledgement, other emoji alone nothing
        return "symbols" if vocab.ONLY_SYMBOLS.fullmatch(text) else None
    # 「好的谢谢」 is thanks, 「你好在吗」 a greeting: the kind of the most telling part.
    for kind in ("about", "bye", "thanks", "greeting", "laugh", "ack"):
        if vocab.SMALL_TALK[kind].search(text):
            return kind
    return None


def _small_talk(q: _Asked) -> Route | None:
    """A greeting, thanks or acknowledgement with no restock or ticket waiting for a reply (there
    「好的」 answers it): a line back, never an SOP section or an unanswered question."""
    if q.turn.pending or (kind := small_talk_kind(q.turn.said)) is None:
        return None
    return Route(ACTION, SMALL_TALK_REASON, handler="small_talk", target={"kind": kind})


SMALL_TALK_REASON = "寒暄或回应，不是问题，也不是请求"  # the chat page badges it 闲聊 by this reason


def _action_words(q: _Asked) -> Route | None:
    if q.scores[ACTION] >= 3:
        return Route(ACTION, f"动作请求 — {q.why(ACTION)}", q.scores)
    return None


def _restock_a_product(q: _Asked) -> Route | None:
    if (m := vocab.RESTOCK_A_PRODUCT.fullmatch(q.text)) and _is_a_product_name(m.group("what")):
        return Route(ACTION, f"动作请求 — 补 +商品名「{m.group('what')}」", q.scores)
    if (m := vocab.PRODUCT_TO_RESTOCK.fullmatch(q.text)) and _is_a_product_name(m.group("what")):
        return Route(ACTION, f"动作请求 — 商品名「{m.group('what')}」+ 补", q.scores)
    return None


def _stock_left_of_a_product(q: _Asked) -> Route | None:
    if q.r.policy_core == 0 and vocab.STOCK_LEFT.search(q.text) and _is_a_product_name(q.text, anywhere=True):
        return Route(DATA, f"问某个商品还有多少（库存）— {q.why(DATA) or '商品名 + 还有多少'}", q.scores)
    return None


def _out_of_the_stores_world(q: _Asked) -> Route | None:
    if q.scores[OUT_OF_SCOPE] >= 3 and not _about_the_store(q.text, q.r):
        top = max((h for h in q.r.hits if h.signal.intent == OUT_OF_SCOPE), key=lambda h: h.score)
        return Route(OUT_OF_SCOPE, f"与门店运营无关 — {q.why(OUT_OF_SCOPE)}", q.scores, decline=vocab.DECLINE[top.signal.name])
    return None


def _two_periods_compared(q: _Asked) -> Route | None:
    if q.r.policy_core == 0 and vocab.FIGURE_COMPARE.search(q.text) and _names_two_periods(q.text, q.today):
        return Route(DATA, f"两段时间的经营数据对比 — {q.why(DATA)}", q.scores)
    return None


def _data_words_about_a_rule(q: _Asked) -> Route | None:
    """Data words with no store or member named, about a price or about whether something may be done."""
    if not q.r.is_data or _names_its_subject(q.text):
        return None
    if _asks_a_price(q.text, q.r):
        return Route(POLICY, f"问的是价格（酒水单），不是销售数据 — {q.why(POLICY, DATA)}", q.scores)
    if _someone_elses_card(q.r, q.text) or (vocab.PUBLISHES.search(q.text) and _data_only_describes(q.text)):
        return Route(POLICY, f"问的是能不能这样做（别人要查会员的卡，或要把数字发到社交媒体）— {q.why(POLICY, DATA)}", q.scores)
    if _peak_only_says_when(q):
        return Route(POLICY, f"「高峰」只是说在什么时候，没有问哪个时段最忙 — {q.why(POLICY, DATA)}", q.scores)
    return None


def _peak_only_says_when(q: _Asked) -> bool:
    """The rush is the only data word, said as the time something happens (「午高峰…最多几分钟要出」),
    with no period named and the busiest hours not asked for."""
    periods = any(h.signal.name == "时间范围" for h in q.r.hits)
    return (_core_data_signals(q.r) == {"高峰时段"} and not periods and bool(vocab.PEAK_AS_A_TIME.search(q.text))
            and not vocab.PEAK_ASKED.search(q.text))


def _question_words_ask_for_data(q: _Asked) -> Route | None:
    # 「全公司现在哪些店哪些货库存不够」: 哪些 / 多久 ask *for* the data; no rule word is there.
    if q.r.is_data and q.r.is_policy and _only_question_words(q.r) and not _data_only_describes(q.text):
        return Route(DATA, f"数据问题（问句词问的就是数据）— {q.why(DATA, POLICY)}", q.scores)
    return None


def _rules_and_data(q: _Asked) -> Route | None:
    if not (q.r.is_data and q.r.is_policy):
        return None
    if not _names_its_subject(q.text) and _data_only_describes(q.text):
        return Route(POLICY, f"问的是规则（数据词只是在描述情况，没有问数字）— {q.why(POLICY, DATA)}", q.scores)
    if _asks_both(q.text, q.r):
        return Route(BOTH, f"既问规则又问数据 — {q.why(DATA, POLICY)}", q.scores)
    return Route(POLICY, f"问的是规则（数据词只是话题，没有指明门店或会员）— {q.why(POLICY, DATA)}", q.scores)


def _a_rise_of_something_else(q: _Asked) -> Route | None:
    # 「今天上证指数涨了还是跌了」: a rise or a fall of something that is not the store's (no figure,
    # store, member or word of the store's world): no query tool answers it.
    if q.r.is_data and _core_data_signals(q.r) <= {"涨跌"} and not _names_its_subject(q.text) and not vocab.about_the_store(q.text) \
            and not (q.turn.after_data and vocab.AGAINST_THE_NAMED.match(q.turn.said)):
        return Route(OUT_OF_SCOPE, f"与门店运营无关 — 问涨跌，却没有说是门店的哪项数字（{q.why(DATA)}）", q.scores,
                     decline=vocab.DECLINE["与门店无关"])
    return None


def _data(q: _Asked) -> Route | None:
    if not q.r.is_data:
        return None
    if not _names_its_subject(q.text) and _data_sets_the_scene(q.text):
        return Route(POLICY, f"数据词只是交代情况，问的是后面的做法 — {q.why(POLICY, DATA)}", q.scores)
    return Route(DATA, f"数据问题 — {q.why(DATA)}", q.scores)


def _data_sets_the_scene(text: str) -> bool:
    """「毛肚断货了，从隔壁店调一点，多久要交接完？」: the data words tell what happened and another
    clause asks what to do (no clause with a data word asks for a figure)."""
    clauses = [c for c in _CLAUSES.split(text) if c.strip()]
    asks_elsewhere = any(_read(c).data_core == 0 and (_ASKS.search(c) or re.search(r"多久|多长时间", c)) for c in clauses)
    return asks_elsewhere and _data_only_describes(text)


def _policy(q: _Asked) -> Route | None:
    return Route(POLICY, f"规则问题 — {q.why(POLICY)}", q.scores) if q.r.is_policy else None


def _a_bare_product_name(q: _Asked) -> Route | None:
    if (m := vocab.BARE_NAME.fullmatch(q.text.strip())) and _is_a_product_name(m.group("what")):
        # Undecided: it may fill a pending restock's product (「补货」 → 「科罗娜」), and an LLM may read it.
        return Route(DATA, f"只说了商品名「{m.group('what')}」：问它的哪项数据", q.scores, decided=False)
    return None


# A message that is a period and nothing else (「上周」「这个月」「到目前为止」).
_ONLY_A_PERIOD_MAX_CHARS = 12
_AROUND_A_PERIOD = re.compile(r"[，。？！?!、\s]+")
_PARTICLE_AFTER_A_PERIOD = re.compile(r"[呢的吧啊]+$")


def _only_a_period(q: _Asked) -> Route | None:
    """「上周」 alone was declined as unrelated to the store, and 「到目前为止」 answered from the
    closest rule: a period says when, and the question is which figure (the data planner asks,
    or a follow-up keeps the last one's)."""
    said = _PARTICLE_AFTER_A_PERIOD.sub("", _AROUND_A_PERIOD.sub("", q.text))
    hits = [h for h in q.r.hits if h.signal.name == "时间范围"]
    if not hits or len(hits) != len(q.r.hits) or len(said) > _ONLY_A_PERIOD_MAX_CHARS or hits[0].signal.regex.sub("", said):
        return None
    return Route(DATA, "只说了时间：问这段时间的哪项数据", q.scores, decided=False)


# The routing rules, in order: the first that reads the question routes it. Its name is in the
# trace (Route.rule); a question none of them reads is searched as a rules question, undecided.
# The first four are requests the product answers itself (Route.handler), not questions.
ROUTING_RULES: tuple[tuple[str, Callable[[_Asked], Route | None]], ...] = (
    ("decides_a_proposal", _decides_a_proposal), ("withdraws_a_proposal", _withdraws_a_proposal), ("asks_for_a_page", _asks_for_a_page),
    ("asks_where_proposals_stand", _asks_where_proposals_stand), ("a_reply_to_nothing_asked", _a_reply_to_nothing_asked),
    ("a_step_of_the_last_answer", _a_step_of_the_last_answer), ("small_talk", _small_talk),
    ("changes_the_ticket", _changes_the_ticket), ("details_for_the_ticket", _details_for_the_ticket),
    ("action_words", _action_words), ("restock_a_product", _restock_a_product),
    ("stock_left_of_a_product", _stock_left_of_a_product), ("out_of_the_stores_world", _out_of_the_stores_world),
    ("two_periods_compared", _two_periods_compared), ("data_words_about_a_rule", _data_words_about_a_rule),
    ("question_words_ask_for_data", _question_words_ask_for_data), ("rules_and_data", _rules_and_data),
    ("a_rise_of_something_else", _a_rise_of_something_else), ("data", _data), ("policy", _policy),
    ("a_bare_product_name", _a_bare_product_name), ("only_a_period", _only_a_period),
)


def route_by_rules(question: str, today: date | None = None, turn: Turn | None = None) -> Route:
    """`today`: the store's date the question is asked on (the two-period check reads periods);
    `turn`: the message as typed and its thread (None: the question alone, asked by someone signed in)."""
    text = question or ""
    r = _read(text)
    q = _Asked(text, today, r, {intent: vocab.score(r.hits, intent) for intent in (ACTION, DATA, POLICY, OUT_OF_SCOPE)},
               turn or Turn(text))
    for name, rule in ROUTING_RULES:
        if (decision := rule(q)) is not None:
            decision.rule = name
            return decision
    return Route(POLICY, "规则未能判定，按规则问题检索（由可答性评分决定是否拒答）" + (f" — {q.why(POLICY, DATA)}" if q.scores[POLICY] or q.scores[DATA] else ""),
                 q.scores, decided=False, rule="undecided")


ROUTER_PROMPT = (
    "你是门店运营助手的意图分类器。只输出一个词：policy（问门店制度/SOP/规则/产品知识）、data（问销售、库存、会员余额等经营数据）、"
    "both（两者都问）、action（要求帮忙补货或建工单）、out_of_scope（与门店运营无关）。"
)


def route(question: str, llm=None, today: date | None = None, turn: Turn | None = None) -> Route:
    """Rules first; the LLM classifies only what the rules leave undecided, when one is configured."""
    decision = route_by_rules(question, today, turn)
    if decision.decided or llm is None or not llm.available:
        return decision
    try:
        answer = llm.chat([{"role": "system", "content": ROUTER_PROMPT}, {"role": "user", "content": question}], max_tokens=8)
    except Exception as exc:  # LLM down: keep the rule decision, say so
        decision.reason += f"（LLM 分类失败：{type(exc).__name__}）"
        return decision
    word = (answer or "").strip().lower().split()[0] if (answer or "").strip() else ""
    if word in INTENTS:
        route_ = Route(word, f"规则未能判定，LLM 分类为 {word}", decision.scores, layer="llm")
        if word == OUT_OF_SCOPE:
            route_.decline = vocab.DECLINE["与门店无关"]
        return route_
    decision.reason += f"（LLM 输出无法识别：{answer[:20]!r}）"
    return decision
