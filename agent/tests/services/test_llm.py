"""LLM clients against a local HTTP server that mirrors the real API shapes."""
import pytest

from agent.llm import LLMUnavailable, OllamaLLM, OpenAICompatibleLLM, strip_reasoning, trim_history
from agent.tests.fakes import ollama_chat, ollama_chat_stream, openai_chat, openai_chat_stream


def test_ollama_client_payload_and_think_stripping(fake_http):
    fake_http.routes["/api/chat"] = ollama_chat("<think>先想一想……</think>先道歉并更换酒水[1]。")
    llm = OllamaLLM(fake_http.url, "qwen2.5:7b")
    assert llm.chat([{"role": "user", "content": "酒有异味"}]) == "先道歉并更换酒水[1]。"
    _, body, _ = fake_http.requests[0]
    assert body["keep_alive"] == "30m" and body["stream"] is False
    assert body["options"]["temperature"] == 0.2
    assert llm._client._trust_env is False


def test_openai_compatible_client(fake_http):
    fake_http.routes["/v1/chat/completions"] = openai_chat("本金可以跨店使用[1]。", reasoning="用户问的是……")
    llm = OpenAICompatibleLLM(fake_http.url + "/v1", "deepseek-chat", api_key="sk-test")
    assert llm.chat([{"role": "user", "content": "会员卡能跨店用吗"}]) == "本金可以跨店使用[1]。"
    _, body, headers = fake_http.requests[0]
    assert body["temperature"] == 0.2 and body["model"] == "deepseek-chat"
    assert headers["Authorization"] == "Bearer sk-test"


def test_server_errors_and_bad_shapes_raise_llm_unavailable(fake_http):
    fake_http.routes["/api/chat"] = lambda body: (500, {"error": "model 'x' not found"})
    with pytest.raises(LLMUnavailable):
        OllamaLLM(fake_http.url, "x").chat([{"role": "user", "content": "hi"}])
    fake_http.routes["/v1/chat/completions"] = lambda body: (200, {"unexpected": True})
    with pytest.raises(LLMUnavailable):
        OpenAICompatibleLLM(fake_http.url + "/v1", "m").chat([{"role": "user", "content": "hi"}])
    with pytest.raises(LLMUnavailable):
        OllamaLLM("http://127.0.0.1:9", "m", timeout=1).chat([{"role": "user", "content": "hi"}])


def test_strip_reasoning_handles_truncated_tags_and_lead_noise():
    assert strip_reasoning("思考中</think>答案[1]") == "答案[1]"
    # One lead phrase is dropped (「好的，」 or 「根据资料，」), the answer itself never.
    assert strip_reasoning("好的，先道歉。") == "先道歉。"
    assert strip_reasoning("根据提供的资料，先道歉。") == "先道歉。"
    assert strip_reasoning("好的，根据资料，先道歉。") == "根据资料，先道歉。"
    assert strip_reasoning("先道歉，好的服务从道歉开始。") == "先道歉，好的服务从道歉开始。"


def test_history_is_trimmed_by_budget_in_whole_turns():
    turns = [("问题一" * 50, "回答一" * 50), ("问题二", "回答二"), ("问题三", "回答三")]
    messages = trim_history(turns, budget=40)
    assert [m["content"] for m in messages] == ["问题二", "回答二", "问题三", "回答三"]
    assert messages[0]["role"] == "user"
    assert trim_history(turns, budget=2) == []


def test_openai_compatible_streaming_hands_over_each_piece_as_it_arrives(fake_http):
    # With an LLM configured the chat page shows the answer as it is written (#29).
    pieces = ["<think>先看", "资料</think>", "先向客人", "道歉，", "撤下酒水[1]。"]
    fake_http.routes["/v1/chat/completions"] = openai_chat_stream(pieces, reasoning=["用户问的是异味"])
    llm = OpenAICompatibleLLM(fake_http.url + "/v1", "deepseek-chat", api_key="sk-test")
    seen = []
    text = llm.chat_stream([{"role": "user", "content": "酒有异味"}], on_delta=seen.append)
    assert text == "先向客人道歉，撤下酒水[1]。"
    assert seen == ["先向客人", "道歉，", "撤下酒水[1]。"]  # reasoning never shown, the answer piece by piece
    _, body, headers = fake_http.requests[0]
    assert body["stream"] is True and headers["Authorization"] == "Bearer sk-test"


def test_ollama_streaming_hands_over_each_piece_as_it_arrives(fake_http):
    fake_http.routes["/api/chat"] = ollama_chat_stream(["本金", "可以跨店", "使用[1]。"])
    seen = []
    assert OllamaLLM(fake_http.url, "qwen2.5:7b").chat_stream([{"role": "user", "content": "x"}], on_delta=seen.append) == "本金可以跨店使用[1]。"
    assert seen == ["本金", "可以跨店", "使用[1]。"]


def test_a_stream_that_breaks_raises_llm_unavailable(fake_http):
    fake_http.routes["/v1/chat/completions"] = lambda body: (200, [b"data: {not json\n\n"], "text/event-stream")
    with pytest.raises(LLMUnavailable):
        OpenAICompatibleLLM(fake_http.url + "/v1", "m").chat_stream([{"role": "user", "content": "x"}], on_delta=lambda t: None)
