"""The people most agent tests ask as: a bartender and the manager of 广州天河店 (GZ-TH)."""
import pytest

from ops.tests.factories import make_user


@pytest.fixture
def staff():
    return make_user("agent_staff", role="staff", stores=["GZ-TH"])


@pytest.fixture
def manager():
    return make_user("agent_manager", role="manager", stores=["GZ-TH"])
