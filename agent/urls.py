from django.urls import path

from .api.views import ChatTaskView, ChatView

app_name = "agent-api"
urlpatterns = [
    path("chat", ChatView.as_view(), name="chat"),
    path("chat/tasks/<str:task_id>", ChatTaskView.as_view(), name="chat-task"),
]
