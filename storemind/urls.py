from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from .views import health, ready

urlpatterns = [
    path("health", health, name="health"),
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("ready", ready, name="ready"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("agent.urls_web")),
    path("", include("workflow.urls_web")),
    path("api/v1/", include("ops.urls")),
    path("api/v1/", include("knowledge.urls")),
    path("api/v1/", include("agent.urls")),
    path("api/v1/", include("workflow.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
]

handler404 = "storemind.api.handler404"
handler500 = "storemind.api.handler500"
