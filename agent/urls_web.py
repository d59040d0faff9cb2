from django.urls import path

from . import views

app_name = "chat"
urlpatterns = [
    path("", views.chat, name="index"),
    path("chat/tasks/<str:task_id>", views.chat_task, name="task"),
    path("messages/<int:message_id>/feedback", views.feedback, name="feedback"),
]
