"""The one-query permission backend answers exactly what Django's ModelBackend answers."""
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Permission

from core.auth import OneQueryModelBackend
from ops.tests.factories import make_user

pytestmark = pytest.mark.django_db


def fresh(user):
    return get_user_model().objects.get(pk=user.pk)  # no permission cache yet


@pytest.mark.parametrize("role", ["staff", "manager", "hq", "pos", None])
def test_the_same_permissions_as_django_in_one_query(role, django_assert_num_queries):
    user = make_user(f"auth_backend_{role}", role=role, stores=["GZ-TH"])
    user.user_permissions.add(Permission.objects.get(codename="add_inventory"))  # one of the user's own too
    expected = ModelBackend().get_all_permissions(fresh(user))
    assert "ops.add_inventory" in expected
    subject = fresh(user)
    with django_assert_num_queries(1):
        assert OneQueryModelBackend().get_all_permissions(subject) == expected
        assert subject.has_perm("ops.add_inventory")  # served from the cache: no second query


def test_inactive_anonymous_and_superusers_as_django():
    inactive = make_user("auth_backend_inactive", role="manager", stores=["GZ-TH"])
    inactive.is_active = False
    assert OneQueryModelBackend().get_all_permissions(inactive) == set()
    root = get_user_model().objects.create_superuser("auth_backend_root", "r@example.com", "pw-123456")
    assert OneQueryModelBackend().get_all_permissions(fresh(root)) == ModelBackend().get_all_permissions(fresh(root))
