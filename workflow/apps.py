from django.apps import AppConfig


class WorkflowConfig(AppConfig):
    name = "workflow"
    verbose_name = "提案与审计"
