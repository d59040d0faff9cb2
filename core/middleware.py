"""Request metadata for audit rows: a request id, the client address and the channel, per request."""
import uuid

from .audit import request_meta
from .ratelimit import client_address


def _address(request) -> str | None:
    address = client_address(request)
    return None if address == "-" else address


class AuditContextMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        rid = (request.headers.get("X-Request-ID") or uuid.uuid4().hex)[:64]
        channel = "rest" if request.path.startswith("/api/") else "admin" if request.path.startswith("/admin/") else "web"
        token = request_meta.set({"request_id": rid, "remote_addr": _address(request), "channel": channel})
        try:
            response = self.get_response(request)
        finally:
            request_meta.reset(token)
        response["X-Request-ID"] = rid
        return response
