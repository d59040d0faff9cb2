from django.urls import path

from . import views

app_name = "channels"
urlpatterns = [
    path("<str:platform>/callback", views.callback, name="callback"),
    path("bind/<str:token>", views.bind, name="bind"),
]
