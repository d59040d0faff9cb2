from django.urls import path

from .api.views import KnowledgeSearchView

app_name = "knowledge-api"
urlpatterns = [path("knowledge/search", KnowledgeSearchView.as_view(), name="search")]
