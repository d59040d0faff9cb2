from django.apps import AppConfig


class McpServerConfig(AppConfig):
    # Not "mcp": that name belongs to the SDK package this app is built on.
    name = "mcpserver"
    verbose_name = "MCP 服务"
