"""A document scoped to one store is never cited to another store's staff: chat (the HTMX
page), REST (search and chat) and MCP (search, ask, documents) alike, while its own store's
staff and head office get it. The permission matrix's row 「读只适用于 A 店的文档」."""
import io
import json

import pytest
from django.test import Client

from knowledge.documents import document_publish, document_upload
from mcpserver.server import dispatch
from ops.tests.factories import make_user

pytestmark = pytest.mark.django_db
QUESTION = "雪峰冰桶多久换一次"
TITLE = "天河店雪峰冰桶规范"


def _docx() -> bytes:
    import docx

    d = docx.Document()
    d.core_properties.title = TITLE
    d.add_heading("一、雪峰冰桶", level=1)
    d.add_paragraph("雪峰冰桶 4 小时更换一次，冰铲单独存放。")
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


@pytest.fixture
def scoped():
    manager = make_user("scope_manager_th", role="manager", stores=["GZ-TH"])
    version = document_upload(user=manager, name="天河冰桶.docx", data=_docx(), stores=["GZ-TH"])
    document_publish(version=version, user=manager, run_now=True)
    return version.document


def _mcp_text(result) -> str:
    """The tool result as a client reads it: its text and its structured content (citations)."""
    return " ".join(getattr(c, "text", "") for c in result.content) + json.dumps(result.structured_content or {}, ensure_ascii=False)


@pytest.mark.parametrize("who, stores, sees", [("scope_staff_th", ["GZ-TH"], True), ("scope_staff_ft", ["SZ-FT"], False),
                                               ("scope_manager_ft", ["SZ-FT"], False), ("scope_hq", [], True)])
def test_a_store_scoped_document_reaches_its_store_and_head_office_only(scoped, who, stores, sees):
    role = "hq" if who == "scope_hq" else ("manager" if "manager" in who else "staff")
    user = make_user(who, role=role, stores=stores)
    client = Client()
    client.force_login(user)
    page = client.post("/", {"query": QUESTION}, HTTP_HX_REQUEST="true").content.decode()
    assert (TITLE in page) is sees, page[:500]
    found = client.get("/api/v1/knowledge/search", {"q": QUESTION, "k": 10}).json()
    assert any(h["document"] == TITLE for h in found["hits"]) is sees
    answer = client.post("/api/v1/chat", {"query": QUESTION}, content_type="application/json").json()
    assert any(c["document"] == TITLE for c in answer["citations"]) is sees
    listed = [d["title"] for d in client.get("/api/v1/knowledge/documents").json()]
    assert (TITLE in listed) is sees
    assert (client.get(f"/api/v1/knowledge/documents/{scoped.pk}").status_code == 200) is sees
    assert (client.get(f"/api/v1/knowledge/documents/{scoped.pk}/file").status_code == 200) is sees
    assert (TITLE in _mcp_text(dispatch(user, "search_knowledge", {"query": QUESTION, "k": 10}))) is sees
    assert (TITLE in _mcp_text(dispatch(user, "ask", {"query": QUESTION}))) is sees
    assert (TITLE in _mcp_text(dispatch(user, "list_documents", {}))) is sees
