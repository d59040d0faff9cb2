from django.urls import path

from . import views

app_name = "chat"
urlpatterns = [
    path("", views.chat, name="index"),
    path("chat/tasks/<str:task_id>", views.chat_task, name="task"),
    path("messages/<int:message_id>/feedback", views.feedback, name="feedback"),
    path("threads/", views.threads, name="threads"),
    path("threads/<str:thread_id>/rename", views.thread_rename, name="thread-rename"),
    path("threads/<str:thread_id>/delete", views.thread_delete, name="thread-delete"),
    path("preferences", views.preferences, name="preferences"),
]
