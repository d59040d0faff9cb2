from django.apps import AppConfig


class WorkflowConfig(AppConfig):
    name = "workflow"
