"""A section's text as HTML: its Markdown tables as tables, the rest as escaped lines. The chat
page's answers (agent.templatetags) and the knowledge owner's preview read tables here."""
from __future__ import annotations

import re
from collections.abc import Callable

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from .chunking import TABLE_RULE

# A Markdown table row as SOPs and parsed Word/Excel tables write them (「| 充值金额 | 赠送金额 |」);
# in an answer a citation may follow it.
TABLE_ROW = re.compile(r"^\s*\|.*\|\s*(\[D?\d+\]\s*)*$")
_REF = re.compile(r"\[(D?\d+)\]")


def table_html(lines: list[str], inline: Callable[[str], str]) -> str:
    """Rows of one Markdown table → a <table> (the first row its header); `inline` renders a
    cell's text. Citations after a row are kept, below the table."""
    refs, rows = [], []
    for line in lines:
        if TABLE_RULE.match(line):
            continue
        body, _, tail = line.rstrip().rpartition("|")
        refs.extend(_REF.findall(tail))
        rows.append([c.strip() for c in body.strip().lstrip("|").split("|")])
    if not rows:
        return ""
    head, *body = rows
    html = ['<div class="answer-table-wrap"><table class="answer-table"><thead><tr>']
    html += [f"<th>{inline(c)}</th>" for c in head] + ["</tr></thead><tbody>"]
    for r in body:
        html += ["<tr>"] + [f"<td>{inline(c)}</td>" for c in r] + ["</tr>"]
    html.append("</tbody></table>")
    html += [inline(f"[{ref}]") for ref in dict.fromkeys(refs)]
    html.append("</div>")
    return "".join(html)


def text_html(text: str, inline: Callable[[str], str] = escape) -> SafeString:
    """Lines with <br>, each run of table rows a table (a Word table in the preview was raw 「| … |」 text)."""
    out, table = [], []

    def flush():
        if table:
            out.append(table_html(table, inline))
            table.clear()

    for line in (text or "").split("\n"):
        if TABLE_ROW.match(line):
            table.append(line)
            continue
        flush()
        out.append(inline(line) + "<br>")
    flush()
    html = "".join(out)
    return mark_safe(html[:-4] if html.endswith("<br>") else html)
