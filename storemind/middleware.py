"""Request metadata for audit rows: a request id and the client address, per request."""
import uuid

from workflow.services import request_meta


class AuditContextMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        rid = (request.headers.get("X-Request-ID") or uuid.uuid4().hex)[:64]
        token = request_meta.set({"request_id": rid, "remote_addr": request.META.get("REMOTE_ADDR")})
        try:
            response = self.get_response(request)
        finally:
            request_meta.reset(token)
        response["X-Request-ID"] = rid
        return response
