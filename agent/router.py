"""Intent routing: sentence patterns first, an LLM only for what the rules leave undecided.

Signals are counted by occurrence (findall), not by pattern: 「深圳福田店热销排行前五」
has three data words and must count as three, or it would fall under the threshold and
be answered from documents. Every decision carries a readable reason.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

POLICY, DATA, BOTH, ACTION, OUT_OF_SCOPE = "policy", "data", "both", "action", "out_of_scope"
INTENTS = (POLICY, DATA, BOTH, ACTION, OUT_OF_SCOPE)
THRESHOLD = 2  # a strong signal alone, or two weak ones

# (pattern, weight, label)
ACTION_SIGNALS = [
    (r"(帮我|给我|请|麻烦|替我)[^，。？！]{0,12}(补|订|进|下单|申请|加)[^，。？！]{0,6}\d*\s*[一二两三四五六七八九十百\d]*\s*(箱|瓶|件|桶|份)", 3, "请求补货"),
    (r"(帮我|给我|请|麻烦)[^，。？！]{0,6}(补货|申请补货|提交补货|下补货单)", 3, "请求补货"),
    (r"(帮我|给我|请|麻烦)?[^，。？！]{0,4}(建|开|提|创建|登记|提交)(一?个|一?张|一下)?[^，。？！]{0,4}(工单|投诉单|客诉单)", 3, "请求建工单"),
]
DATA_SIGNALS = [
    (r"卖了多少|卖得?(怎么样|如何)|销量|销售额|营业额|营收|流水|业绩", 2, "销售数据"),
    (r"排行|排名|热销|卖得最好|最畅销|卖最多|前\s*[0-9一二三四五六七八九十]+\s*(名|个|款)?|top\s*\d+", 1, "排行"),
    (r"库存|缺货|快没了|低于安全|还剩多少|剩多少", 2, "库存"),
    (r"客单价|订单数|多少单|几单|成交", 2, "订单指标"),
    (r"高峰|最忙|哪个时段|几点(最|人)多", 2, "时段"),
    (r"余额(还有|有)?多少|还有多少(钱|余额)|查.{0,6}余额", 2, "会员余额"),
    (r"(对比|比较|比一比|哪家店|哪个店|各店|各门店)", 1, "门店对比"),
    (r"(今天|昨天|前天|上周|本周|这周|上个?月|本月|这个月|最近\s*\d+\s*天|近\s*\d+\s*天|周末|\d+月\d+[日号])", 1, "时间范围"),
]
POLICY_SIGNALS = [
    (r"能[^，。？！]{0,12}[吗嘛么]|可以[^，。？！]{0,12}[吗嘛么]|能不能|可不可以|行不行|允许", 2, "能不能"),
    (r"怎么(办|处理|做|弄|算|调|退|回复|消毒|登记|判断|看)|咋(办|处理|整|弄)|如何|怎样", 2, "怎么办"),
    (r"规定|规则|流程|制度|标准|要求|政策|条款|须知|注意事项", 2, "规定"),
    (r"什么情况|哪些情况|什么时候|多久|几天|几点|多少钱|多少度|几度|谁(来)?(批|审批|负责|处理)|要谁", 1, "细节"),
    (r"是什么|什么意思|区别|有什么|哪些|多厚|多长", 1, "知识"),
    (r"客人|顾客|店员|员工|新人|店长|会员|储值|优惠券|团购|发票|存酒|包厢|扎啤|威士忌|黑牌|鸡尾酒|外卖|退款|退卡|投诉", 1, "门店话题"),
]
OUT_OF_SCOPE_SIGNALS = [
    (r"天气|股票|基金|彩票|写(一首)?诗|写作文|翻译|讲个?笑话|你是谁|你叫什么|新闻|比赛结果|电影|菜谱|减肥|作业", 3, "与门店无关"),
]


@dataclass
class Route:
    intent: str
    reason: str
    scores: dict = field(default_factory=dict)
    layer: str = "rules"
    decided: bool = True

    def as_dict(self) -> dict:
        return {"intent": self.intent, "reason": self.reason, "scores": self.scores, "layer": self.layer}


def _score(text: str, signals) -> tuple[int, list[str]]:
    total, hits = 0, []
    for pattern, weight, label in signals:
        found = re.findall(pattern, text, flags=re.IGNORECASE)
        if found:
            total += weight * len(found)
            hits.append(f"{label}×{len(found)}")
    return total, hits


def route_by_rules(question: str) -> Route:
    text = question or ""
    scores, labels = {}, {}
    for name, signals in ((ACTION, ACTION_SIGNALS), (DATA, DATA_SIGNALS), (POLICY, POLICY_SIGNALS), (OUT_OF_SCOPE, OUT_OF_SCOPE_SIGNALS)):
        scores[name], labels[name] = _score(text, signals)

    def why(*names):
        return "；".join(f"{n}：{'、'.join(labels[n])}（{scores[n]} 分）" for n in names if labels[n])

    if scores[ACTION] >= 3:
        return Route(ACTION, f"动作请求 — {why(ACTION)}", scores)
    # A policy signal made only of topic words doesn't count against a data question.
    policy_core = scores[POLICY] - len(re.findall(POLICY_SIGNALS[-1][0], text))
    if scores[DATA] >= THRESHOLD and policy_core >= THRESHOLD:
        return Route(BOTH, f"既问规则又问数据 — {why(DATA, POLICY)}", scores)
    if scores[DATA] >= THRESHOLD and scores[DATA] > 0:
        return Route(DATA, f"数据问题 — {why(DATA)}", scores)
    if scores[OUT_OF_SCOPE] >= 3 and scores[POLICY] < THRESHOLD:
        return Route(OUT_OF_SCOPE, f"与门店运营无关 — {why(OUT_OF_SCOPE)}", scores)
    if scores[POLICY] >= THRESHOLD:
        return Route(POLICY, f"规则问题 — {why(POLICY)}", scores)
    return Route(POLICY, "规则未能判定，按规则问题检索（由检索分闸门决定是否拒答）" + (f" — {why(POLICY, DATA)}" if labels[POLICY] or labels[DATA] else ""), scores, decided=False)


ROUTER_PROMPT = (
    "你是门店运营助手的意图分类器。只输出一个词：policy（问门店制度/SOP/规则/产品知识）、data（问销售、库存、会员余额等经营数据）、"
    "both（两者都问）、action（要求帮忙补货或建工单）、out_of_scope（与门店运营无关）。"
)


def route(question: str, llm=None) -> Route:
    """Rules first; the LLM classifies only what the rules leave undecided, when one is configured."""
    decision = route_by_rules(question)
    if decision.decided or llm is None or not llm.available:
        return decision
    try:
        answer = llm.chat([{"role": "system", "content": ROUTER_PROMPT}, {"role": "user", "content": question}], max_tokens=8)
    except Exception as exc:  # LLM down: keep the rule decision, say so
        decision.reason += f"（LLM 分类失败：{type(exc).__name__}）"
        return decision
    word = (answer or "").strip().lower().split()[0] if (answer or "").strip() else ""
    if word in INTENTS:
        return Route(word, f"规则未能判定，LLM 分类为 {word}", decision.scores, layer="llm")
    decision.reason += f"（LLM 输出无法识别：{answer[:20]!r}）"
    return decision
