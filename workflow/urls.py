from django.urls import path

from .api.views import AuditView, ProposalConfirmView, ProposalRejectView, ProposalsView, ProposalView, ProposalWithdrawView

app_name = "workflow-api"
urlpatterns = [
    path("proposals", ProposalsView.as_view(), name="proposals"),
    path("proposals/<int:pk>", ProposalView.as_view(), name="proposal"),
    path("proposals/<int:pk>/withdraw", ProposalWithdrawView.as_view(), name="proposal-withdraw"),
    path("proposals/<int:pk>/confirm", ProposalConfirmView.as_view(), name="proposal-confirm"),
    path("proposals/<int:pk>/reject", ProposalRejectView.as_view(), name="proposal-reject"),
    path("audit", AuditView.as_view(), name="audit"),
]
