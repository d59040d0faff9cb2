"""The MCP prompts: the three things people ask, worded so a client's model uses the tools."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PromptDef:
    name: str
    title: str
    description: str
    arguments: tuple[tuple[str, str, bool], ...]  # (name, description, required)
    template: str

    def render(self, args: dict[str, str]) -> str:
        return self.template.format(**{k: v or "（未指定）" for k, v in args.items()})


PROMPTS = (
    PromptDef("rule_question", "制度问题", "按门店制度文档回答一个问题，每句话注明出处。",
              (("question", "要问的制度问题，如「客人说酒有异味怎么办」", True),),
              "请用 StoreMind 的 ask 工具（或先用 search_knowledge 查找）回答这个门店制度问题：{question}\n"
              "只根据检索到的制度章节回答，每句话后注明出处（《文档》› 章节）；制度里没有的，直接说没有，不要编。"),
    PromptDef("data_question", "经营数据", "用白名单数据工具查询一家门店或全部门店的经营数据。",
              (("question", "要查的经营问题，如「上周卖了多少」「哪天生意最好」", True),
               ("store", "门店名称、编码或别名（list_stores）；省略时是你能查看的全部门店", False)),
              "请用 StoreMind 的 query_ops 工具回答这个经营数据问题：{question}\n门店：{store}\n"
              "先用 list_stores 确认门店名，选一个合适的工具（store_sales、daily_trend、top_products …），"
              "按工具返回的数字作答，不要估算。"),
    PromptDef("restock", "补货提案", "为一家门店提交补货提案（店长确认之前不会下单）。",
              (("store", "门店名称、编码或别名", True), ("product", "商品名称、别名或编码（list_products）", True),
               ("quantity", "数量，如 20 或「2箱」", False)),
              "请为门店「{store}」的商品「{product}」准备补货提案，数量：{quantity}。\n"
              "先用 query_ops 的 product_stock 看在库、安全库存和建议补货量；数量未指定时用建议量。"
              "然后用 propose_restock 提交（只是提案，要店长确认才会下单），并把提案编号和状态告诉我。"),
)


PROMPTS_BY_NAME = {p.name: p for p in PROMPTS}
