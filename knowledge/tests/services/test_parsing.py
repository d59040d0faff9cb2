"""Uploaded files → sections (knowledge/parsing): real files built with the libraries that
write them, and one test per kind of bad file."""
import io
import re
import zipfile
from pathlib import Path

import pytest

from knowledge.parsing import FileRejected, files_in, parse_file
from knowledge.parsing.safety import decode_text, sniff

NOTO = Path("/usr/share/fonts/opentype/noto")


def docx_bytes(build) -> bytes:
    import docx

    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def by_heading(parsed):
    return {s.heading: s for s in parsed.sections}


# --- Word ----------------------------------------------------------------------------------

def test_docx_headings_from_styles_lists_and_a_table_with_merged_cells():
    def build(d):
        d.core_properties.title = "门店开闭店作业标准"
        d.add_heading("一、目的", level=1)
        d.add_paragraph("统一开店与闭店的作业。")
        d.add_heading("二、开店流程", level=1)
        d.add_heading("2.1 开店前检查", level=2)
        d.add_paragraph("检查冷藏温度。", style="List Number")
        d.add_paragraph("核对备用金 800 元。", style="List Number")
        d.add_paragraph("戴好工牌。", style="List Bullet")
        t = d.add_table(rows=3, cols=3)
        for (r, c), text in {(0, 0): "物料", (0, 1): "温度", (0, 2): "保质期", (1, 0): "鲜奶", (1, 1): "0–5℃", (1, 2): "48 小时",
                             (2, 1): "0–5℃", (2, 2): "72 小时"}.items():
            t.cell(r, c).text = text
        t.cell(1, 0).merge(t.cell(2, 0))  # 鲜奶 spans two rows
        wide = d.add_table(rows=1, cols=2)
        wide.cell(0, 0).merge(wide.cell(0, 1)).text = "合并表头"

    parsed = parse_file("开闭店.docx", docx_bytes(build))
    assert parsed.title == "门店开闭店作业标准" and parsed.kind == "docx" and parsed.warnings == []
    sections = by_heading(parsed)
    assert sections["2.1 开店前检查"].path == ["二、开店流程", "2.1 开店前检查"]
    text = sections["2.1 开店前检查"].text
    assert "1. 检查冷藏温度。" in text and "2. 核对备用金 800 元。" in text and "- 戴好工牌。" in text
    assert "| 物料 | 温度 | 保质期 |" in text
    assert text.count("| 鲜奶 |") == 2  # the merged cell's value on both rows
    assert "| 合并表头 | 合并表头 |" in text  # merged across: repeated in every column it spans


def test_docx_without_heading_styles_takes_headings_from_numbering():
    lines = ["第一章 总则", "第一条 为规范门店作业，制定本制度。", "第二章 开店", "一、开店前准备", "1. 提前 30 分钟到岗。",
             "2. 打开空调和照明。", "（一）收银准备", "备用金 800 元。", "1.1 冷柜检查", "冷柜温度不高于 5℃。"]
    parsed = parse_file("制度.docx", docx_bytes(lambda d: [d.add_paragraph(line) for line in lines]))
    assert parsed.warnings == ["没有识别到标题样式，已按编号识别标题"]
    sections = by_heading(parsed)
    assert sections["第一章 总则"].text == "第一条 为规范门店作业，制定本制度。"  # an article with a sentence is body text
    assert sections["一、开店前准备"].path == ["第二章 开店", "一、开店前准备"]
    assert "1. 提前 30 分钟到岗。" in sections["一、开店前准备"].text  # a step, not a heading
    assert sections["（一）收银准备"].path == ["第二章 开店", "一、开店前准备", "（一）收银准备"]
    assert sections["1.1 冷柜检查"].text == "冷柜温度不高于 5℃。"


def test_docx_with_no_headings_at_all_says_so():
    parsed = parse_file("通知.docx", docx_bytes(lambda d: d.add_paragraph("本周六门店提前一小时闭店，请各位同事知悉。")))
    assert parsed.warnings == ["没有识别到标题，已按段落切分"] and parsed.sections[0].path == []


# --- PDF -----------------------------------------------------------------------------------

def pdf_bytes(pages, *, password=None) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_font("noto", fname=str(NOTO / "NotoSansCJK-Regular.ttc"))
    pdf.add_font("noto", style="B", fname=str(NOTO / "NotoSansCJK-Bold.ttc"))
    if password:
        pdf.set_encryption(owner_password="owner", user_password=password)
    for page in pages:
        pdf.add_page()
        for kind, value in page:
            if kind == "table":
                pdf.set_font("noto", size=11)
                with pdf.table() as table:
                    for row in value:
                        cells = table.row()
                        for cell in row:
                            cells.cell(cell)
            else:
                pdf.set_font("noto", size={"title": 20, "h1": 15, "p": 11}[kind])
                pdf.multi_cell(0, 8, value, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


needs_cjk_font = pytest.mark.skipif(not (NOTO / "NotoSansCJK-Regular.ttc").exists(),
                                    reason="needs Debian's fonts-noto-cjk (make test installs it)")


@needs_cjk_font
def test_pdf_pages_headings_by_size_and_numbering_and_a_table():
    data = pdf_bytes([
        [("title", "原料验收与储存规范"), ("h1", "一、验收标准"), ("p", "冷藏原料到货温度不得高于 5℃，超过的一律拒收。"),
         ("table", [("物料", "储存温度", "保质期"), ("鲜奶", "0–5℃", "48 小时"), ("珍珠", "常温", "4 小时")])],
        [("h1", "二、储存要求"), ("p", "先进先出，开封后贴效期标签。"), ("p", "2.1 冷冻品"), ("p", "冷冻品储存温度不高于 -18℃。")],
    ])
    parsed = parse_file("验收.pdf", data)
    assert parsed.title == "原料验收与储存规范"
    sections = by_heading(parsed)
    assert sections["一、验收标准"].page == 1 and sections["二、储存要求"].page == 2
    assert "| 鲜奶 | 0–5℃ | 48 小时 |" in sections["一、验收标准"].text
    assert sections["2.1 冷冻品"].path == ["二、储存要求", "2.1 冷冻品"] and "-18℃" in sections["2.1 冷冻品"].text


def test_a_pdf_without_a_text_layer_is_refused_as_needing_ocr():
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.rect(20, 20, 100, 60, style="F")  # a page with only a picture-like shape, as a scan has
    with pytest.raises(FileRejected) as exc:
        parse_file("扫描件.pdf", bytes(pdf.output()))
    assert exc.value.code == "no_text_layer" and "需要先做 OCR" in exc.value.message


@needs_cjk_font
def test_a_password_protected_pdf_is_refused():
    with pytest.raises(FileRejected) as exc:
        parse_file("加密.pdf", pdf_bytes([[("p", "内部资料。")]], password="secret"))
    assert exc.value.code == "encrypted"


# --- Excel, CSV ----------------------------------------------------------------------------

def xlsx_bytes(build) -> bytes:
    import openpyxl

    wb = openpyxl.Workbook()
    build(wb)
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def test_xlsx_sheets_are_sections_with_their_header_row_and_merged_cells_filled():
    def build(wb):
        ws = wb.active
        ws.title = "审批权限"
        ws.append(["事项", "金额", "审批人"])
        ws.append(["退款", "50 元以内", "值班经理"])
        ws.append([None, "50–200 元", "店长"])
        ws.merge_cells("A2:A3")
        other = wb.create_sheet("效期")
        other.append(["物料", "保质期"])
        other.append(["鲜奶", "48 小时"])

    parsed = parse_file("权限.xlsx", xlsx_bytes(build))
    sections = by_heading(parsed)
    assert set(sections) == {"审批权限", "效期"}
    assert "| 事项 | 金额 | 审批人 |" in sections["审批权限"].text
    assert "| 退款 | 50–200 元 | 店长 |" in sections["审批权限"].text  # the merged 退款 repeated


def test_a_sheet_of_one_sentence_a_row_is_prose_not_a_table():
    # A 「说明」 sheet holding one sentence was stored as 「| 超过保质期的酒水必须倒掉… |\n|---|」: a
    # table whose only row is its header, shown in chat with a body row reading 「---」.
    def build(wb):
        ws = wb.active
        ws.title = "说明"
        ws.append(["超过保质期的酒水必须倒掉，并在损耗表登记。"])
        ws.append([None, "开瓶后写上日期。"])

    section = by_heading(parse_file("开瓶酒水.xlsx", xlsx_bytes(build)))["说明"]
    assert section.text == "超过保质期的酒水必须倒掉，并在损耗表登记。\n开瓶后写上日期。" and "|" not in section.text


def test_a_question_answer_sheet_becomes_one_section_per_question_with_it_as_an_alias():
    def build(wb):
        ws = wb.active
        ws.title = "常见问题"
        ws.append(["问题", "答案"])
        ws.append(["鲜奶开封后能放多久", "冷藏保存不超过 48 小时。"])
        ws.append(["珍珠煮好后多久报废", "4 小时。"])

    parsed = parse_file("问答.xlsx", xlsx_bytes(build))
    section = by_heading(parsed)["鲜奶开封后能放多久"]
    assert section.path == ["常见问题", "鲜奶开封后能放多久"] and section.aliases == ["鲜奶开封后能放多久"]
    assert section.text == "冷藏保存不超过 48 小时。"


def test_a_gbk_csv_is_read_as_chinese_not_garbled():
    data = "物料,保质期\n鲜奶,48 小时\n珍珠,4 小时\n".encode("gbk")
    parsed = parse_file("效期.csv", data)
    assert parsed.sections[0].path == ["效期"] and "| 鲜奶 | 48 小时 |" in parsed.sections[0].text


def test_a_gbk_text_file_is_read_as_chinese():
    parsed = parse_file("通知.txt", "一、闭店时间\n周六提前一小时闭店。\n".encode("gbk"))
    assert parsed.sections[0].heading == "一、闭店时间" and parsed.sections[0].text == "周六提前一小时闭店。"
    assert decode_text("鲜奶".encode("utf-8-sig")) == "鲜奶"


# --- PowerPoint, HTML, Markdown -----------------------------------------------------------

def test_pptx_slides_titled_by_their_title_placeholder_with_tables_and_speaker_notes():
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "新品：青禾乌龙鲜奶"
    slide.placeholders[1].text_frame.text = "中杯 500ml，标准糖 30ml 果糖"
    slide.notes_slide.notes_text_frame.text = "培训时强调：鲜奶开封 48 小时内用完。"
    table_slide = deck.slides.add_slide(deck.slide_layouts[5])
    table_slide.shapes.title.text = "价格表"
    table = table_slide.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(6), Inches(1)).table
    for (r, c), text in {(0, 0): "杯型", (0, 1): "价格", (1, 0): "中杯", (1, 1): "16 元"}.items():
        table.cell(r, c).text = text
    out = io.BytesIO()
    deck.save(out)
    sections = by_heading(parse_file("培训.pptx", out.getvalue()))
    assert "中杯 500ml" in sections["新品：青禾乌龙鲜奶"].text and "备注：培训时强调" in sections["新品：青禾乌龙鲜奶"].text
    assert sections["新品：青禾乌龙鲜奶"].page == 1 and "| 中杯 | 16 元 |" in sections["价格表"].text


def test_html_headings_lists_and_tables_become_markdown_and_scripts_are_dropped():
    html = ("<html><head><title>收银规范</title><style>p{}</style></head><body><script>alert(1)</script>"
            "<h2>一、找零</h2><ul><li>唱收唱付</li><li>当面点清</li></ul>"
            "<h2>二、长短款</h2><table><tr><th>差额</th><th>处理</th></tr><tr><td>50 元以内</td><td>值班经理登记</td></tr></table>"
            "</body></html>")
    parsed = parse_file("收银.html", html.encode())
    sections = by_heading(parsed)
    assert parsed.title == "收银规范" and "alert" not in "".join(s.text for s in parsed.sections)
    assert "- 唱收唱付" in sections["一、找零"].text and "50 元以内" in sections["二、长短款"].text
    assert "|" in sections["二、长短款"].text


def test_markdown_keeps_front_matter_headings_and_its_question_aliases():
    md = "---\ntitle: 冷饮\naudience: manager\n---\n# 冷饮\n\n## 冰块\n\n制冰机每周清洗。\n\n常见问法：冰块多久换\n"
    parsed = parse_file("冷饮.md", md.encode())
    assert parsed.title == "冷饮" and parsed.meta["audience"] == "manager"
    assert by_heading(parsed)["冰块"].aliases == ["冰块多久换"] and by_heading(parsed)["冰块"].text == "制冰机每周清洗。"


# --- bad files: a clear reason each, never an empty document -------------------------------

def test_the_type_is_read_from_the_content_not_the_extension():
    with pytest.raises(FileRejected) as exc:
        parse_file("制度.docx", b"just some text, not a Word file")
    assert exc.value.code == "wrong_type"
    with pytest.raises(FileRejected) as exc:
        parse_file("图片.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00")
    assert exc.value.code == "wrong_type"


def test_an_empty_file_is_refused():
    with pytest.raises(FileRejected) as exc:
        parse_file("空.docx", b"")
    assert exc.value.code == "empty"


def test_a_file_over_the_size_limit_is_refused(settings):
    settings.SM_UPLOAD_MAX_MB = 1
    with pytest.raises(FileRejected) as exc:
        parse_file("大.txt", "字".encode() * (400 * 1024))
    assert exc.value.code == "too_large"


def test_an_encrypted_office_file_is_refused():
    import msoffcrypto.format.ooxml

    plain = io.BytesIO(docx_bytes(lambda d: d.add_paragraph("机密")))
    encrypted = io.BytesIO()
    msoffcrypto.format.ooxml.OOXMLFile(plain).encrypt("secret", encrypted)
    with pytest.raises(FileRejected) as exc:
        parse_file("机密.docx", encrypted.getvalue())
    assert exc.value.code == "encrypted"


def _rezip(data: bytes, extra: dict[str, bytes] | None = None, replace: dict[str, bytes] | None = None) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item, (replace or {}).get(item.filename, src.read(item)))
        for name, body in (extra or {}).items():
            dst.writestr(name, body)
    return out.getvalue()


def test_a_macro_enabled_office_file_is_refused():
    data = _rezip(docx_bytes(lambda d: d.add_paragraph("宏")), extra={"word/vbaProject.bin": b"\x00" * 64})
    with pytest.raises(FileRejected) as exc:
        parse_file("宏.docm", data)
    assert exc.value.code == "macro"


def test_malformed_xml_in_a_word_file_is_refused():
    data = _rezip(docx_bytes(lambda d: d.add_paragraph("坏")), replace={"word/document.xml": b"<w:document><w:body><w:p>"})
    with pytest.raises(FileRejected) as exc:
        parse_file("坏.docx", data)
    assert exc.value.code == "malformed"


@pytest.mark.parametrize("name,damage", [
    ("坏.docx", lambda data: _rezip(data, replace={"word/document.xml": b"<w:document><w:body><w:p>"})),  # XMLSyntaxError
    ("半截.docx", lambda data: data[: len(data) // 2]),  # File is not a zip file
    ("半截.xlsx", lambda data: data[: len(data) // 2]),
])
def test_a_damaged_file_is_refused_in_the_owners_words_not_the_parsers(name, damage):
    # The upload page showed 「…（File is not a zip file）」 and 「…（XMLSyntaxError）」.
    with pytest.raises(FileRejected) as exc:
        parse_file(name, damage(docx_bytes(lambda d: d.add_paragraph("坏"))))
    assert "已损坏" in exc.value.message and "另存" in exc.value.message
    assert not re.search(r"[A-Za-z]{4,}", exc.value.message.replace("Word", "").replace("Excel", "")), exc.value.message


def test_an_entity_declaration_in_office_xml_is_refused():
    bomb = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><w:document/>'
    data = _rezip(docx_bytes(lambda d: d.add_paragraph("x")), replace={"word/document.xml": bomb})
    with pytest.raises(FileRejected) as exc:
        parse_file("实体.docx", data)
    assert exc.value.code == "malformed"


def test_a_zip_bomb_is_refused():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.txt", b"0" * (40 * 1024 * 1024))  # 40 MB of zeros in ~40 KB
    with pytest.raises(FileRejected) as exc:
        files_in("一批.zip", out.getvalue())
    assert exc.value.code == "zip_bomb"


def test_a_path_leaving_its_folder_in_a_zip_is_refused():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("../../etc/cron.d/x.md", b"# x")
    with pytest.raises(FileRejected) as exc:
        files_in("一批.zip", out.getvalue())
    assert exc.value.code == "path_traversal"


def test_a_zip_of_documents_is_unpacked_into_its_files():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("制度/a.md", "# 甲\n\n## 一\n\n内容。".encode())
        z.writestr("__MACOSX/制度/._a.md", b"junk")
        z.writestr("制度/b.txt", "一、标题\n内容。".encode("gbk"))
    files = files_in("一批.zip", out.getvalue())
    assert [name for name, _ in files] == ["制度/a.md", "制度/b.txt"]
    assert sniff("b.txt", files[1][1]) == "txt"


def test_an_old_binary_office_file_is_asked_to_be_saved_as_the_new_format():
    with pytest.raises(FileRejected) as exc:
        parse_file("旧.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512)
    assert exc.value.code == "unsupported" and ".docx" in exc.value.message


def test_an_empty_section_is_warned_about_in_the_preview():
    parsed = parse_file("空节.md", "# 甲\n\n## 一、有内容\n\n内容。\n\n## 二、空的\n\n## 三、父节\n\n### 3.1 子节\n\n子节内容。\n".encode())
    assert parsed.warnings == ["有 1 个空章节：二、空的"]  # 三、父节 has a subsection: not empty
