"""Files the knowledge tests upload: a Word document built with python-docx, and a SOP whose words
no other document of the test index uses."""
import io


def docx(title: str, sections: dict[str, str]) -> bytes:
    import docx as python_docx

    d = python_docx.Document()
    d.core_properties.title = title
    for heading, text in sections.items():
        d.add_heading(heading, level=1)
        d.add_paragraph(text)
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


# Words no other document of the test index uses, so the hashing embedder's retrieval finds them.
SOP = {"一、冰块管理": "雪峰制冰机每周二深度清洁一次，冰铲单独存放，雪峰冰桶 4 小时更换。",
       "二、鲜榨果汁": "蜜橘鲜榨橙汁现点现做，制作后 30 分钟内未售出的报废。"}
