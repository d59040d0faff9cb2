"""Every bench owns its database: `bench workflow` leaves proposals (audited, never deleted)
that made `bench ops`'s re-seed refuse to reset when both shared `<name>_bench`."""
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection

from core.bench import bench_database_name, use_bench_database


def test_bench_database_names_are_per_target_and_never_the_real_one():
    names = {bench_database_name("storemind", t) for t in ("ops", "retrieval", "workflow")}
    assert names == {"storemind_bench_ops", "storemind_bench_retrieval", "storemind_bench_workflow"}
    assert bench_database_name("storemind_bench_ops", "workflow") == "storemind_bench_workflow"


@pytest.fixture
def restore_database(django_db_blocker):
    original = connection.settings_dict["NAME"]
    with django_db_blocker.unblock():
        yield
        connection.close()
        connection.settings_dict["NAME"] = settings.DATABASES["default"]["NAME"] = original


def test_ops_bench_reseeds_after_the_workflow_bench_left_proposals(restore_database):
    from ops.models import Order, Store
    from ops.services import roles_ensure
    from ops.tests.factories import make_user
    from workflow.models import Proposal
    from workflow.services import proposal_create

    use_bench_database("workflow")
    roles_ensure()
    if not Store.objects.exists():
        call_command("seed_ops", "--days", "1", "--orders", "20", verbosity=0)
    user = make_user(f"bench_db_staff_{Proposal.objects.count()}", role="staff", stores=["GZ-TH"])
    store = Store.objects.get(code="GZ-TH")
    proposal_create(user=user, kind="restock", store=store, source="api", idempotency_key=f"bench-db:{user.pk}",
                    payload={"lines": [{"sku": "B001", "quantity": 1, "unit": "箱", "reason": "bench"}]})
    assert Proposal.objects.filter(store=store).exists()

    use_bench_database("ops")  # what `bench ops` does before it re-seeds
    call_command("seed_ops", "--reset", "--orders", "40", "--days", "2", verbosity=0)  # refused to reset when shared
    assert Order.objects.exists() and not Proposal.objects.exists()


def test_each_bench_asks_for_its_own_database(monkeypatch):
    import knowledge.bench
    import ops.bench
    import workflow.bench

    class Chosen(Exception):
        pass

    chosen = []

    def record(*args):
        chosen.append(args)
        raise Chosen

    monkeypatch.setattr(knowledge.bench, "_real_corpus_figures", lambda cmd: {"_vocabulary": []})
    for module, fn in ((ops.bench, "bench_ops"), (workflow.bench, "bench_workflow"), (knowledge.bench, "bench_retrieval")):
        monkeypatch.setattr(module, "use_bench_database", record)
        with pytest.raises(Chosen):
            getattr(module, fn)(None, {"chunks": 10, "orders": 10, "queries": 1})
    assert len({bench_database_name("storemind", *args) for args in chosen}) == 3


def test_the_retrieval_bench_loads_its_synthetic_corpus_with_every_column_the_models_require(restore_database):
    # `bench retrieval` failed at its COPY (knowledge_sentence.generated has no database default)
    # after the generated question forms were added: every figure of #26's 100k-chunk target was unmeasurable.
    import io

    from knowledge.bench import _load_synthetic
    from knowledge.models import Chunk, Sentence

    class Out:
        stderr = io.StringIO()

    use_bench_database("retrieval")
    _load_synthetic(Out(), 20, 384, [("门店", 5), ("酒水", 3), ("补货", 2), ("盘点", 1)])
    assert Chunk.objects.count() == 20
    assert Sentence.objects.filter(kind="alias", generated=True).count() == 10
    assert not Sentence.objects.filter(kind="sentence", generated=True).exists()
