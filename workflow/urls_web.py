from django.urls import path

from . import views

app_name = "workflow"
urlpatterns = [
    path("proposals/", views.proposals, name="proposals"),
    path("audit/", views.audit, name="audit"),
    path("proposals/<int:pk>/<str:action>", views.decide, name="decide"),
]
