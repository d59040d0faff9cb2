"""Platform callbacks and the binding page. Thin: the adapters verify and parse, the services
record and answer. A callback is acknowledged as soon as it is recorded (the platforms wait 5 s
at most and then deliver again); the answer follows from a Celery task."""
from __future__ import annotations

import logging

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from core.errors import Conflict, NotFound, refusal_of

from . import services
from .models import Platform
from .platforms.base import CallbackRejected
from .platforms.feishu import Challenge

log = logging.getLogger(__name__)


def _queue_answer(inbound_id: int) -> None:
    from .tasks import answer_inbound_task

    answer_inbound_task.delay(inbound_id)


@csrf_exempt
@require_http_methods(["GET", "POST"])
def callback(request, platform: str):
    if platform not in Platform.values or not services.configured(platform):
        raise Http404("这个消息渠道没有配置。")
    adapter = services.adapter(platform)
    try:
        if request.method == "GET":
            if platform != Platform.WECOM:
                raise CallbackRejected("GET is only WeCom's URL verification", status=405)
            return HttpResponse(adapter.verify_url(request.GET), content_type="text/plain; charset=utf-8")
        if platform == Platform.WECOM:
            events = adapter.parse(request.GET, request.body, request.content_type)
        else:
            events = adapter.parse(request.headers, request.body)
    except Challenge as challenge:
        return JsonResponse({"challenge": challenge.challenge})
    except CallbackRejected as exc:
        # Why is logged for the operator; the caller gets the status alone (no oracle on the crypto).
        log.warning("%s callback refused (%s): %s", platform, exc.status, exc, exc_info=exc.__cause__ is not None)
        return JsonResponse({"error": "回调被拒绝"}, status=exc.status)
    for event in events:
        inbound, created = services.inbound_record(platform, event)
        if created:
            transaction.on_commit(lambda pk=inbound.pk: _queue_answer(pk))
    return HttpResponse("success", content_type="text/plain") if platform == Platform.WECOM else JsonResponse({})


@login_required
@require_http_methods(["GET", "POST"])
def bind(request, token: str):
    """A one-time link sent to an unbound platform user: opened in a browser, logged in, one
    press binds that platform account to this StoreMind account."""
    from .selectors import binding_link_open

    link = binding_link_open(token, services.BINDING_LINK_TTL)
    context = {"link": link, "platform": Platform(link.platform).label if link else ""}
    if request.method == "POST":
        try:
            identity = services.bind_with_link(token=token, user=request.user)
            context["bound"] = identity
        except (NotFound, Conflict, PermissionDenied) as exc:
            refusal = refusal_of(exc)
            context["error"] = refusal.message
            return render(request, "channels/bind.html", context, status=refusal.status)
    elif link is None:
        context["error"] = "这个绑定链接已失效，请在企业微信 / 钉钉 / 飞书里再发一条消息获取新链接。"
        return render(request, "channels/bind.html", context, status=404)
    return render(request, "channels/bind.html", context)
