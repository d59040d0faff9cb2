from django.urls import path

from . import views

app_name = "workflow"
urlpatterns = [
    path("proposals/", views.proposals, name="proposals"),
    path("proposals/<int:pk>/<str:action>", views.decide, name="decide"),
]
