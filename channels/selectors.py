"""Reads for the channels views and services."""
from __future__ import annotations

from django.utils import timezone

from .models import BindingLink, Identity


def binding_link_open(token: str, ttl) -> BindingLink | None:
    """The binding link with this token, if it is unused and not expired."""
    link = BindingLink.objects.filter(token=token).first()
    if link is None or link.used_at is not None or link.created_at < timezone.now() - ttl:
        return None
    return link


def user_for(platform: str, external_id: str):
    """The StoreMind user a platform id is bound to (active or not), or None."""
    identity = Identity.objects.select_related("user").filter(platform=platform, external_id=external_id).first()
    return identity.user if identity else None
