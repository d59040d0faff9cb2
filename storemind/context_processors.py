def role(request):
    """The user's role and whether answers show the execution trace (managers and developers who chose so)."""
    from agent.models import UserPreference
    from ops.selectors import user_role

    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"role": "", "can_see_details": False, "show_details": False}
    role_name = user_role(user)
    allowed = user.is_superuser or role_name == "manager"
    shown = allowed and UserPreference.objects.filter(user=user, show_details=True).exists()
    return {"role": role_name, "can_see_details": allowed, "show_details": shown}
