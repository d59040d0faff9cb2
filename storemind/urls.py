from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from .views import health, ready

# The admin is part of the product: its own name, a manager's desk as the index, and the
# product's login page (logout already lands there through LOGOUT_REDIRECT_URL).
admin.site.site_header = admin.site.site_title = "StoreMind 门店运营后台"
admin.site.index_title = "工作台"
admin.site.site_url = "/"
admin.site.index_template = "admin/storemind_index.html"

urlpatterns = [
    path("health", health, name="health"),
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("ready", ready, name="ready"),
    path("admin/login/", RedirectView.as_view(url="/accounts/login/", query_string=True)),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("agent.urls_web")),
    path("", include("workflow.urls_web")),
    path("api/v1/", include("ops.urls")),
    path("api/v1/", include("knowledge.urls")),
    path("api/v1/", include("agent.urls")),
    path("api/v1/", include("workflow.urls")),
    path("channels/", include("channels.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
]

handler404 = "storemind.api.handler404"
handler500 = "storemind.api.handler500"
