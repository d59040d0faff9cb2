"""`manage.py mcp --stdio --user NAME`: StoreMind's MCP server on stdin/stdout.

stdout carries protocol messages only: everything else (logging, warnings, stray prints
from libraries) goes to stderr.
"""
import logging
import sys

import anyio
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Run the MCP server over stdio as --user (HTTP: serve storemind.asgi with uvicorn; the endpoint is /mcp, a person's API token required)."

    def add_arguments(self, parser):
        parser.add_argument("--stdio", action="store_true", required=True)
        parser.add_argument("--user", required=True, help="the user whose role and stores every tool call is checked against")

    def handle(self, *args, **opts):
        real_stdout = sys.stdout
        sys.stdout = sys.stderr  # nothing but protocol messages may reach the real stdout
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
        user = get_user_model().objects.filter(username=opts["user"], is_active=True).first()
        if user is None:
            raise CommandError(f"no active user {opts['user']!r}")
        from mcpserver.server import serve_stdio

        sys.stdout = real_stdout  # stdio_server claims fd 1 itself and diverts strays to stderr
        anyio.run(serve_stdio, user)
