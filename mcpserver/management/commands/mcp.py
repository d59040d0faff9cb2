"""`manage.py mcp --stdio --token TOKEN` (or SM_MCP_TOKEN): StoreMind's MCP server on
stdin/stdout, acting as the person whose API token it is.

`--user NAME` is kept for a machine's own operators: whoever can run manage.py there can
read the database anyway, so it trusts the shell and acts as NAME without a secret. A POS
device token is refused, as over HTTP.

stdout carries protocol messages only: everything else (logging, warnings, stray prints
from libraries) goes to stderr.
"""
import logging
import os
import sys

import anyio
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from rest_framework.exceptions import APIException


class Command(BaseCommand):
    help = ("Run the MCP server over stdio as the owner of --token / SM_MCP_TOKEN (a person's API token), or as "
            "--user NAME (trusts whoever runs it). HTTP: serve storemind.asgi with uvicorn; the endpoint is /mcp.")

    def add_arguments(self, parser):
        parser.add_argument("--stdio", action="store_true", required=True)
        parser.add_argument("--token", help="a person's API token (manage.py issue_token); default: $SM_MCP_TOKEN")
        parser.add_argument("--user", help="act as this user without a token: anyone at this shell can, so only for operators")

    def handle(self, *args, **opts):
        real_stdout = sys.stdout
        sys.stdout = sys.stderr  # nothing but protocol messages may reach the real stdout
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
        user = self._user(opts)
        from mcpserver.server import serve_stdio

        sys.stdout = real_stdout  # stdio_server claims fd 1 itself and diverts strays to stderr
        anyio.run(serve_stdio, user)

    def _user(self, opts):
        key = opts["token"] or os.environ.get("SM_MCP_TOKEN", "")
        if key and opts["user"]:
            raise CommandError("give --token (or SM_MCP_TOKEN) or --user, not both")
        if key:
            from ops.authentication import authenticate_key

            try:
                user, token = authenticate_key(key.strip(), address="stdio")
            except APIException as exc:
                raise CommandError(f"MCP token refused: {exc.detail}") from None
            if token.store_id:
                raise CommandError("a POS device token only writes orders and stock adjustments; "
                                   "MCP needs a person's token (manage.py issue_token --user NAME)")
            return user
        if not opts["user"]:
            raise CommandError("say who the MCP client acts as: --token TOKEN, SM_MCP_TOKEN, or --user NAME")
        user = get_user_model().objects.filter(username=opts["user"], is_active=True).first()
        if user is None:
            raise CommandError(f"no active user {opts['user']!r}")
        return user
