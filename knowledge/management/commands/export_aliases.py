"""`manage.py export_aliases [--output PATH] [--all]`: the question aliases managers added in
the admin, as Markdown for the corpus owners (to fold into the SOPs' 常见问法 lines), grouped
by document and section; aliases whose section no longer exists are listed apart."""
from django.core.management.base import BaseCommand

from knowledge.selectors import aliases_with_status


class Command(BaseCommand):
    help = "Write the question aliases added in the admin as Markdown (grouped by document and section; orphans apart)."

    def add_arguments(self, parser):
        parser.add_argument("--output", help="write to this file instead of stdout")
        parser.add_argument("--all", action="store_true", help="also the aliases that come from the corpus itself")

    def handle(self, *args, **opts):
        rows = aliases_with_status(include_corpus=opts["all"])
        lines = ["# 常见问法（后台添加）", "", "把这些问法并入对应章节的「常见问法：」一行，下次导入后即由制度文档维护。", ""]
        current_doc = current_section = None
        for row in (r for r in rows if not r["orphan"]):
            if row["document_path"] != current_doc:
                current_doc, current_section = row["document_path"], None
                lines += [f"## {row['document_title']}（`{row['document_path']}`）", ""]
            if row["section_path"] != current_section:
                current_section = row["section_path"]
                lines += [f"### {row['section_path']}", ""]
            lines.append(f"- {row['question']}（{row['who']} · {row['when']}）")
        orphans = [r for r in rows if r["orphan"]]
        if orphans:
            lines += ["", "## 孤立问法（章节已不存在，请重新指定章节或删除）", ""]
            lines += [f"- {r['question']} → `{r['document_path']}` · {r['section_path']}（{r['who']} · {r['when']}）" for r in orphans]
        text = "\n".join(lines).rstrip() + "\n"
        if opts["output"]:
            with open(opts["output"], "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            self.stdout.write(text, ending="")
        where = opts["output"] or "stdout"
        self.stderr.write(f"export_aliases: {len(rows) - len(orphans)} aliases, {len(orphans)} orphans → {where}")
