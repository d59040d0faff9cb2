"""The admin index as a manager's desk: pending proposals, unanswered questions and low
stock of the stores the user works in (reads only; every figure comes from the same
selectors and tools as the API and the chat)."""
from django import template

register = template.Library()


@register.simple_tag(takes_context=True)
def manager_dashboard(context) -> dict:
    from agent.models import UnansweredQuestion
    from ops.models import Store
    from ops.tools import run_tool
    from workflow.models import Proposal
    from workflow.selectors import proposals_visible

    user = context["request"].user
    stores = list(Store.objects.for_user(user, "ops.view_inventory"))
    pending = list(proposals_visible(user).filter(status=Proposal.Status.PENDING).order_by("-created_at")[:8])
    pending_count = proposals_visible(user).filter(status=Proposal.Status.PENDING).count()
    unanswered = (UnansweredQuestion.objects.restrict(user).filter(resolved=False).exclude(source=UnansweredQuestion.Source.OFF_TOPIC)
                  .select_related("user"))
    low = []
    for store in stores:
        low += run_tool("low_stock", {"store": store.code}, user=user).rows
    return {
        # Who may not open the unanswered list sees no card: 「0 未解答的问题 · 没有未解答的问题」 told
        # head office and staff there were none.
        "can_see_unanswered": user.has_perm("agent.view_unansweredquestion"),
        "stores": stores, "pending": pending, "pending_count": pending_count,
        "unanswered": list(unanswered[:8]), "unanswered_count": unanswered.count(),
        "low_stock": low[:10], "low_stock_count": len(low),
    }
