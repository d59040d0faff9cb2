from django.urls import path

from .api.views import DocumentDetailView, DocumentFileView, DocumentPublishView, DocumentsView, KnowledgeSearchView

app_name = "knowledge-api"
urlpatterns = [
    path("knowledge/search", KnowledgeSearchView.as_view(), name="search"),
    path("knowledge/documents", DocumentsView.as_view(), name="documents"),
    path("knowledge/documents/<int:pk>", DocumentDetailView.as_view(), name="document"),
    path("knowledge/documents/<int:pk>/publish", DocumentPublishView.as_view(), name="document-publish"),
    path("knowledge/documents/<int:pk>/file", DocumentFileView.as_view(), name="document-file"),
]
