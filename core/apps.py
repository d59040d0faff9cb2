from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "核心：审计与权限"
