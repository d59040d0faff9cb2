"""The chat page streams an LLM-written answer as it is written (#29). Not in a test
transaction: the turn runs in a thread of its own, which sees committed rows only."""
from django.test import Client

from agent.models import Message
from ops.tests.factories import make_user

HX = {"HTTP_HX_REQUEST": "true"}


def test_with_an_llm_the_answer_is_streamed_as_it_is_written_then_the_finished_turn(settings, fake_http, django_db_setup, django_db_blocker):
    # #29: with an LLM configured the answer streams as it is written (a fake streaming
    # OpenAI-compatible server); the last line is the turn as stored, guards applied.
    import json as jsonlib

    from django.contrib.auth import get_user_model

    from agent.tests.fakes import openai_chat, openai_chat_stream

    pieces = ["先向客人道歉，", "当面撤下酒水，", "免费更换[1]。"]
    stream, plain = openai_chat_stream(pieces), openai_chat("OK")
    fake_http.routes["/v1/chat/completions"] = lambda body: stream(body) if body.get("stream") else plain(body)
    settings.SM_LLM_BACKEND, settings.SM_OPENAI_BASE = "openai", fake_http.url + "/v1"
    with django_db_blocker.unblock():  # committed: the turn runs in a thread of its own
        get_user_model().objects.filter(username="view_stream_staff").delete()
        user = make_user("view_stream_staff", role="staff", stores=["GZ-TH"])
        try:
            c = Client()
            c.force_login(user)
            page = c.get("/").content.decode()
            assert 'data-stream="1"' in page
            r = c.post("/", {"query": "客人说酒有异味怎么办", "stream": "1"}, **HX)
            assert r.streaming and r["Content-Type"].startswith("application/x-ndjson")
            events = [jsonlib.loads(line) for line in b"".join(r.streaming_content).decode().splitlines() if line.strip()]
            deltas = [e["delta"] for e in events if "delta" in e]
            assert deltas == pieces, events
            final = events[-1]
            assert "html" in final and final["thread_id"]
            stored = Message.objects.filter(conversation__user=user, role="assistant").latest("id")
            assert "先向客人道歉" in stored.content and 'class="turn"' in final["html"] and "先向客人道歉" in final["html"]
            # Without an LLM there is nothing to stream: the page asks the usual way.
            settings.SM_LLM_BACKEND = "none"
            assert 'data-stream="1"' not in c.get("/").content.decode()
            plain_turn = c.post("/", {"query": "客人说酒有异味怎么办", "stream": "1"}, **HX)
            assert not plain_turn.streaming and 'class="turn"' in plain_turn.content.decode()
        finally:
            get_user_model().objects.filter(username="view_stream_staff").delete()
