"""The knowledge owner's workflow (knowledge/documents.py) over the services and REST: upload →
draft → preview corrections → publish → answer → new version → rollback, scope enforced in
retrieval, bad files refused with nothing written, every step audited."""
import io

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from rest_framework.test import APIClient

from core.models import AuditLog
from knowledge.documents import document_publish, document_rollback, document_scope_set, document_upload, version_edit
from knowledge.models import Chunk, Document, DocumentVersion
from knowledge.selectors import search, visibility_for
from knowledge.tests.files import SOP, docx
from ops.tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    return {"manager": make_user("doc_manager", role="manager", stores=["GZ-TH"]),
            "hq": make_user("doc_hq", role="hq", stores=[]),
            "staff_th": make_user("doc_staff_th", role="staff", stores=["GZ-TH"]),
            "staff_ft": make_user("doc_staff_ft", role="staff", stores=["SZ-FT"])}


def publish_now(version, user):
    return document_publish(version=version, user=user, run_now=True)


def test_upload_makes_a_draft_that_answers_nothing_until_published(people):
    data = docx("冰块与果汁规范", SOP)
    version = document_upload(user=people["hq"], name="冰块与果汁.docx", data=data)
    assert version.status == "draft" and version.number == 1 and version.document.source == "upload"
    assert [s["path"] for s in version.sections] == [["一、冰块管理"], ["二、鲜榨果汁"]]
    assert not Chunk.objects.filter(document=version.document).exists()
    assert AuditLog.objects.filter(action="document_uploaded", actor=people["hq"]).count() == 1  # this test's user
    # The same bytes again: the same draft, nothing twice.
    again = document_upload(user=people["hq"], name="冰块与果汁.docx", data=data)
    assert again.pk == version.pk and DocumentVersion.objects.filter(document=version.document).count() == 1

    published = publish_now(version, people["hq"])
    assert published.status == "published" and published.chunks == 2
    result = search("雪峰冰桶多久换一次", user=people["staff_th"], k=3)
    assert result.top.document == "冰块与果汁规范" and result.top.version == 1
    assert AuditLog.objects.filter(action="document_published", actor=people["hq"]).count() == 1


def test_a_correction_in_the_preview_is_audited_and_published_as_corrected(people):
    version = document_upload(user=people["hq"], name="a.docx", data=docx("冰块与果汁规范", SOP))
    version_edit(version=version, user=people["hq"], section=0, heading="一、冰块与制冰机")
    version_edit(version=version, user=people["hq"], section=1, enabled=False)
    row = AuditLog.objects.filter(action="document_edited", actor=people["hq"]).order_by("pk").first()
    assert row.before["heading"] == "一、冰块管理" and row.after["heading"] == "一、冰块与制冰机"
    publish_now(version, people["hq"])
    paths = set(Chunk.objects.filter(document=version.document).values_list("section_path", flat=True))
    assert paths == {"冰块与果汁规范 > 一、冰块与制冰机"}  # the disabled section is not in the index
    with pytest.raises(ValidationError, match="不能再改"):
        version_edit(version=version, user=people["hq"], section=0, heading="又改")


def test_a_new_version_replaces_the_old_one_atomically_and_rollback_restores_it(people):
    v1 = publish_now(document_upload(user=people["hq"], name="a.docx", data=docx("冰块与果汁规范", SOP)), people["hq"])
    changed = {**SOP, "二、鲜榨果汁": "蜜橘鲜榨橙汁现点现做，制作后 15 分钟内未售出的报废。", "三、柠檬水": "柠檬片当天用完。"}
    v2 = document_upload(user=people["hq"], name="a-v2.docx", data=docx("冰块与果汁规范", changed))
    assert v2.document_id == v1.document_id and v2.number == 2
    assert v2.diff == {"added": ["三、柠檬水"], "removed": [], "changed": ["二、鲜榨果汁"]}
    # Until v2 is indexed, v1 keeps answering.
    assert "30 分钟" in search("蜜橘鲜榨橙汁做好多久没卖掉要报废", user=people["staff_th"], k=1).top.text
    publish_now(v2, people["hq"])
    top = search("蜜橘鲜榨橙汁做好多久没卖掉要报废", user=people["staff_th"], k=1).top
    assert "15 分钟" in top.text and top.version == 2
    v1.refresh_from_db()
    assert v1.status == "superseded" and v1.sections[1]["text"].endswith("30 分钟内未售出的报废。")  # still readable
    document_rollback(document=v1.document, user=people["hq"], number=1)
    v1.refresh_from_db()
    from knowledge.documents import version_index

    version_index(v1.pk, people["hq"].pk)  # the task (eager Celery runs it on commit)
    top = search("蜜橘鲜榨橙汁做好多久没卖掉要报废", user=people["staff_th"], k=1).top
    assert "30 分钟" in top.text and top.version == 1
    assert AuditLog.objects.filter(action="document_rollback_requested", actor=people["hq"]).count() == 1


def test_a_document_scoped_to_one_store_never_reaches_another_stores_staff(people):
    version = document_upload(user=people["manager"], name="天河.docx", data=docx("天河店冰块规范", SOP), stores=["GZ-TH"])
    publish_now(version, people["manager"])
    mine = search("雪峰冰桶多久换一次", user=people["staff_th"], k=5)
    theirs = search("雪峰冰桶多久换一次", user=people["staff_ft"], k=5)
    assert any(h.document == "天河店冰块规范" for h in mine.hits)
    assert not any(h.document == "天河店冰块规范" for h in theirs.hits)
    for ranking in theirs.rankings.values():  # not in any channel's candidates either
        assert not any(h.document == "天河店冰块规范" for h in ranking)
    assert not Document.objects.visible_to(people["staff_ft"]).filter(pk=version.document_id).exists()
    assert not Document.objects.visible_to(None).filter(pk=version.document_id).exists()  # no user: fails closed
    # Head office sees every store's.
    assert any(h.document == "天河店冰块规范" for h in search("雪峰冰桶多久换一次", user=people["hq"], k=5).hits)
    # A scope change applies at once, audited.
    document_scope_set(document=version.document, user=people["hq"], stores=["GZ-TH", "SZ-FT"])
    assert any(h.document == "天河店冰块规范" for h in search("雪峰冰桶多久换一次", user=people["staff_ft"], k=5).hits)
    assert AuditLog.objects.filter(action="document_scope_changed", actor=people["hq"]).count() == 1


def test_a_store_manager_manages_only_their_stores_documents(people):
    # Naming no store means the manager's own (a manager of one store was refused for leaving its
    # only box unticked): never every store.
    own = document_upload(user=people["manager"], name="全部.docx", data=docx("全公司冰块规范", SOP))
    from ops.models import Store

    assert own.meta["scope"]["stores"] == [Store.objects.get(code="GZ-TH").pk] and not own.meta["scope"]["cities"]
    with pytest.raises(PermissionDenied, match="只能适用于自己的门店"):
        document_upload(user=people["manager"], name="福田.docx", data=docx("福田冰块规范", SOP), stores=["SZ-FT"])
    chain = publish_now(document_upload(user=people["hq"], name="c.docx", data=docx("全公司果汁规范", SOP)), people["hq"])
    with pytest.raises(PermissionDenied):
        document_upload(user=people["manager"], name="c2.docx", data=docx("全公司果汁规范", {"一、x": "改过"}), stores=["GZ-TH"],
                        document=chain.document)
    with pytest.raises(PermissionDenied):
        document_upload(user=people["staff_th"], name="s.docx", data=docx("员工上传", SOP), stores=["GZ-TH"])
    assert AuditLog.objects.filter(action="permission_denied", actor=people["staff_th"]).exists()


def test_a_bad_file_is_a_400_with_its_reason_and_nothing_is_written(people):
    before = (Document.objects.count(), DocumentVersion.objects.count())
    with pytest.raises(ValidationError) as exc:
        document_upload(user=people["hq"], name="x.docx", data=b"not a word file")
    assert "内容却是纯文本" in exc.value.message_dict["file"][0]
    assert (Document.objects.count(), DocumentVersion.objects.count()) == before


def test_rest_upload_publish_detail_list_and_download(people):
    api = APIClient()
    api.force_authenticate(people["hq"])
    data = docx("冰块与果汁规范", SOP)
    r = api.post("/api/v1/knowledge/documents", {"file": io.BytesIO(data), "audience": "staff", "title": ""}, format="multipart")
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["status"] == "draft" and body["version"] == 1 and len(body["sections"]) == 2 and body["warnings"] == []
    doc_id = body["id"]
    with pytest.raises(AssertionError):  # nothing answers before publishing
        assert search("雪峰冰桶多久换一次", user=people["staff_th"], k=1).top.document == "冰块与果汁规范"
    from django.test import TestCase

    with TestCase.captureOnCommitCallbacks(execute=True):
        r = api.post(f"/api/v1/knowledge/documents/{doc_id}/publish", {}, format="json")
    assert r.status_code == 202 and r.json()["status"] == "indexing"
    detail = api.get(f"/api/v1/knowledge/documents/{doc_id}").json()
    assert detail["status"] == "published" and detail["version"] == 1 and detail["versions"][0]["chunks"] == 2
    assert doc_id in [d["id"] for d in api.get("/api/v1/knowledge/documents").json()]
    file = api.get(f"/api/v1/knowledge/documents/{doc_id}/file")
    assert file.status_code == 200 and file.content == data and "filename*=UTF-8''" in file["Content-Disposition"]

    staff = APIClient()
    staff.force_authenticate(people["staff_th"])
    assert staff.post("/api/v1/knowledge/documents", {"file": io.BytesIO(data)}, format="multipart").status_code == 403
    assert staff.get(f"/api/v1/knowledge/documents/{doc_id}").json()["can_manage"] is False
    bad = api.post("/api/v1/knowledge/documents", {"file": io.BytesIO(b"")}, format="multipart")
    assert bad.status_code == 400 and "file" in bad.json()
    unknown = api.post("/api/v1/knowledge/documents", {"file": io.BytesIO(data), "color": "red"}, format="multipart")
    assert unknown.status_code == 400 and "color" in str(unknown.json())


def test_rest_delete_takes_a_document_out_of_answers_once_and_audits_it(people):
    # DELETE /knowledge/documents/{id} was a 405: a head-office system could upload and publish but not withdraw.
    version = publish_now(document_upload(user=people["hq"], name="a.docx", data=docx("冰块与果汁规范", SOP)), people["hq"])
    doc_id = version.document_id
    assert search("雪峰冰桶多久换一次", user=people["staff_th"], k=1).top.document == "冰块与果汁规范"
    staff, hq = APIClient(), APIClient()
    staff.force_authenticate(people["staff_th"])
    hq.force_authenticate(people["hq"])
    assert staff.delete(f"/api/v1/knowledge/documents/{doc_id}").status_code == 404  # not theirs to manage
    assert Document.objects.get(pk=doc_id).archived_at is None
    assert hq.delete(f"/api/v1/knowledge/documents/{doc_id}?force=1").status_code == 400  # unknown parameter
    r = hq.delete(f"/api/v1/knowledge/documents/{doc_id}")
    assert r.status_code == 204, r.content
    assert not Chunk.objects.filter(document_id=doc_id).exists()
    assert doc_id not in [d["id"] for d in hq.get("/api/v1/knowledge/documents").json()]
    hit = search("雪峰冰桶多久换一次", user=people["staff_th"], k=1).top
    assert hit is None or hit.document != "冰块与果汁规范"
    assert AuditLog.objects.filter(action=AuditLog.Action.DOCUMENT_DELETED, actor=people["hq"]).count() == 1
    assert hq.delete(f"/api/v1/knowledge/documents/{doc_id}").status_code == 404  # gone: nothing written twice
    assert AuditLog.objects.filter(action=AuditLog.Action.DOCUMENT_DELETED).count() == 1
    assert DocumentVersion.objects.filter(document_id=doc_id).exists()  # the versions stay for the audit trail


def test_rest_patch_rescopes_a_document_at_once_and_audits_it(people):
    # Over REST a head-office system could upload, publish and delete a document, not change whom it reaches.
    version = publish_now(document_upload(user=people["hq"], name="a.docx", data=docx("冰块与果汁规范", SOP)), people["hq"])
    url = f"/api/v1/knowledge/documents/{version.document_id}"
    staff, hq, manager = APIClient(), APIClient(), APIClient()
    staff.force_authenticate(people["staff_ft"])
    hq.force_authenticate(people["hq"])
    manager.force_authenticate(people["manager"])
    assert search("雪峰冰桶多久换一次", user=people["staff_ft"], k=1).top.document == "冰块与果汁规范"
    r = hq.patch(url, {"stores": ["GZ-TH"]}, format="json")
    assert r.status_code == 200 and r.json()["stores"] == ["GZ-TH"], r.content
    hit = search("雪峰冰桶多久换一次", user=people["staff_ft"], k=1).top  # 福田 no longer reads it
    assert hit is None or hit.document != "冰块与果汁规范"
    assert search("雪峰冰桶多久换一次", user=people["staff_th"], k=1).top.document == "冰块与果汁规范"
    row = AuditLog.objects.get(action=AuditLog.Action.DOCUMENT_SCOPE_CHANGED, actor=people["hq"])
    assert row.after["stores"] != row.before["stores"]
    assert hq.patch(url, {"stores": ["GZ-TH"]}, format="json").status_code == 200  # the same again: nothing written
    assert AuditLog.objects.filter(action=AuditLog.Action.DOCUMENT_SCOPE_CHANGED).count() == 1
    assert hq.patch(url, {"title": "x"}, format="json").status_code == 400  # unknown field
    assert hq.patch(url, {"stores": "GZ-TH"}, format="json").status_code == 400  # not a list
    # Checked by the documented body (ScopeIn), each error under its field.
    for bad, field in (({"audience": "boss"}, "audience"), ({"stores": [""]}, "stores"), ({"cities": {"a": 1}}, "cities")):
        r = hq.patch(url, bad, format="json")
        assert r.status_code == 400 and field in r.json(), (bad, r.content)
    assert hq.patch(url, {"stores": ["三里屯店"]}, format="json").status_code == 400
    assert hq.patch(url, {}, format="json").status_code == 400
    assert staff.patch(url, {"audience": "manager"}, format="json").status_code == 404  # not theirs to manage
    widened = manager.patch(url, {"stores": []}, format="json")  # 天河's manager manages it now, but not for every store
    assert widened.status_code == 403 and "自己的门店" in widened.json()["detail"]
    assert hq.patch(url, {"audience": "manager"}, format="json").json()["audience"] == "manager"


def test_citations_name_the_version_and_a_pdf_page(people):
    from agent.compose import number_sources
    from agent.templatetags.storemind import source_label

    version = publish_now(document_upload(user=people["hq"], name="a.docx", data=docx("冰块与果汁规范", SOP)), people["hq"])
    v2 = document_upload(user=people["hq"], name="b.docx", data=docx("冰块与果汁规范", {**SOP, "三、柠檬": "柠檬片当天用完。"}))
    publish_now(v2, people["hq"])
    hit = search("雪峰冰桶多久换一次", user=people["staff_th"], k=1).top
    citation = number_sources([hit], None).citations[0]
    assert citation["version"] == 2 and source_label(citation) == "冰块与果汁规范（v2） › 一、冰块管理"
    assert source_label({**citation, "page": 3}).endswith("· 第 3 页")
    assert version.document.current_version_id == v2.pk or Document.objects.get(pk=version.document_id).current_version_id == v2.pk
    assert visibility_for(people["staff_th"]).scope  # a store's staff carry their store's scope tokens


def test_a_deleted_document_leaves_the_index_and_the_list_audited(people):
    from knowledge.documents import document_delete

    version = publish_now(document_upload(user=people["hq"], name="a.docx", data=docx("冰块与果汁规范", SOP)), people["hq"])
    with pytest.raises(PermissionDenied):
        document_delete(document=version.document, user=people["manager"])  # chain-wide: head office's
    document_delete(document=version.document, user=people["hq"])
    assert not Chunk.objects.filter(document=version.document).exists()
    assert not Document.objects.visible_to(people["hq"]).filter(pk=version.document_id).exists()
    assert AuditLog.objects.get(action="document_deleted", actor=people["hq"]).before["title"] == "冰块与果汁规范"
    version.refresh_from_db()
    assert version.sections  # still readable

