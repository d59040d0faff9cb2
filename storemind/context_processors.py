def role(request):
    """The user's role and whether answers show the execution trace (managers and developers who chose so)."""
    from agent.models import UserPreference
    from agent.services import can_see_details
    from core.roles import DEFAULT_WHO_GRANTS, WHO_GRANTS, role_label

    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"role": "", "can_see_details": False, "show_details": False, "who_grants": DEFAULT_WHO_GRANTS}
    role_name = role_label(user)  # display only; derived from permissions
    allowed = can_see_details(user)
    shown = allowed and UserPreference.objects.filter(user=user, show_details=True).exists()
    return {"role": role_name, "can_see_details": allowed, "show_details": shown,
            "who_grants": WHO_GRANTS.get(role_name, DEFAULT_WHO_GRANTS)}
