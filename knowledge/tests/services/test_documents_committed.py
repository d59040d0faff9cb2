"""Document services outside any test transaction, as the admin's (non-atomic) views call them.
Each test removes what it wrote from the shared, committed test database (the audit log is
append-only: its rows stay, their actor set to none)."""
from core.models import AuditLog
from knowledge.documents import document_upload, version_edit
from knowledge.models import Document
from knowledge.tests.files import docx
from ops.tests.factories import make_user


def test_a_draft_is_edited_in_a_transaction_of_its_own(django_db_setup, django_db_blocker):
    """The admin's views are not atomic: an edit locks its version (select_for_update) inside its own
    transaction. The decorator slipped onto a helper once and every admin edit raised
    TransactionManagementError while tests, each inside a transaction, passed."""
    from django.db import connection

    with django_db_blocker.unblock():
        assert not connection.in_atomic_block
        _remove("doc_txn_hq")  # what an interrupted run left
        try:
            user = make_user("doc_txn_hq", role="hq", stores=[])
            version = document_upload(user=user, name="txn.docx", data=docx("事务里的草稿", {"一、冰块": "冰铲单独存放。"}))
            edited = version_edit(version=version, user=user, section=0, heading="一、冰块与冰铲")
            assert edited.sections[0]["path"] == ["一、冰块与冰铲"]
            assert AuditLog.objects.filter(action="document_edited", actor=user).count() == 1
        finally:
            _remove("doc_txn_hq")


def _remove(username: str) -> None:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        return
    uploaded = list(Document.objects.filter(versions__created_by=user).values_list("pk", flat=True))
    Document.objects.filter(pk__in=uploaded).delete()
    user.delete()
