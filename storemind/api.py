"""One place that maps service exceptions to HTTP for every API view.

Services raise Django's ValidationError / PermissionDenied / ops.errors.Conflict;
views never build error responses by hand.
"""
from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from ops.errors import Conflict, NotFound


def _validation_detail(exc: DjangoValidationError):
    if hasattr(exc, "error_dict"):
        return {field: [str(m) for e in errs for m in e.messages] for field, errs in exc.error_dict.items()}
    return {"detail": [str(m) for m in exc.messages]}


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        return Response(_validation_detail(exc), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, DjangoPermissionDenied):
        return Response({"detail": str(exc) or "没有权限。"}, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, Conflict):
        body = {"detail": exc.message}
        body.update(exc.extra)
        return Response(body, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, NotFound):
        return Response({"detail": exc.message}, status=status.HTTP_404_NOT_FOUND)
    return drf_exception_handler(exc, context)


__all__ = ["exception_handler", "exceptions"]
