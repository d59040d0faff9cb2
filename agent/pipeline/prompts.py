"""Every prompt the pipeline sends an LLM, in one place: the answer's system prompt, the grey-zone
judge and the query rewrite. Each returns the chat messages; the token limits go with them."""
from __future__ import annotations

ANSWER_SYSTEM = """你是连锁酒吧/餐饮门店的运营助手，回答店员和店长的问题。规则：
1. 只根据给出的参考资料和经营数据回答，不要编造；资料里没有的就说"现有资料没有相关规定"。
2. 每句话后面标注来源编号：参考资料用 [1] [2]，经营数据用 [D1] [D2]，不要混用。
3. 金额、天数、温度等数字必须原样引用。
4. 经营数据有多行时，逐行列出，不要只挑其中一条。
5. 用简洁的中文回答，不超过 200 字，不要输出思考过程。"""

JUDGE_MAX_TOKENS = 4
REWRITE_MAX_TOKENS = 24


def judge(question: str, top) -> list[dict]:
    """Can the top section answer the question? The model says OK or MISS."""
    return [
        {"role": "system", "content": "判断参考资料能否回答问题。只输出 OK 或 MISS。"},
        {"role": "user", "content": f"问题：{question}\n\n参考资料：\n{top.section_path}\n{top.text}"},
    ]


def rewrite(rules_query: str) -> list[dict]:
    """Two to four search words the SOPs might use for the question."""
    return [
        {"role": "system", "content": "把店员的问题改写成门店制度文档里可能使用的 2 到 4 个检索词，用空格分隔，只输出检索词。"},
        {"role": "user", "content": rules_query},
    ]
