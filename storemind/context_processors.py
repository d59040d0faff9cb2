def role(request):
    from ops.selectors import user_role

    user = getattr(request, "user", None)
    return {"role": user_role(user) if user is not None and user.is_authenticated else ""}
