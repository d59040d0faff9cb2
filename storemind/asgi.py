"""ASGI entry point: Django for everything, the MCP Streamable HTTP endpoint at /mcp.

Serve with:  uvicorn storemind.asgi:application --host 127.0.0.1 --port 8000
(lifespan events go to the MCP app, whose session manager needs them; Django has none).
"""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "storemind.settings")
django_app = get_asgi_application()

from mcpserver.server import http_app  # noqa: E402  (needs Django set up first)
from storemind import embedded_db  # noqa: E402

mcp_app = http_app(on_database_outage=lambda: embedded_db.restart_embedded_database())


async def application(scope, receive, send):
    if scope["type"] == "lifespan":
        return await mcp_app.app(scope, receive, send)
    if scope["type"] == "http" and (scope["path"] == "/mcp" or scope["path"].startswith("/mcp/")):
        return await mcp_app(scope, receive, send)
    return await django_app(scope, receive, send)
