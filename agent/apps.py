from django.apps import AppConfig


class AgentConfig(AppConfig):
    name = "agent"
