"""What a deployment asks of the reference server besides the protocols, over real HTTP:
``/health``, ``/metrics`` (read back with ``prometheus_client``'s own text parser),
``/tokenize`` and ``/detokenize`` against the model's tokenizer and chat template."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from reasonspan.serving import render_prompt_ids
from reasonspan.serving.app import ServedModel, Server
from reasonspan.serving.engine import SimulatedServingEngine
from tests.serving.test_server import HISTORY, Running, expected, script
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer


def _root(running: Running) -> str:
    return running.base_url.removesuffix("/v1")


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name, tuple(sorted(s.labels.items()))] = s.value
    return out


def test_health_is_ok_only_while_serving() -> None:
    server = Server(
        [ServedModel("qwen3", tokenizer(FAMILY_TOKENIZERS["qwen3"]), "qwen3")],
        SimulatedServingEngine(),
        warm_up=False,
    )
    assert server.state == "starting"
    with Running(server) as r:
        ok = httpx.get(f"{_root(r)}/health")
        assert (ok.status_code, ok.json()) == (200, {"status": "ok"})
    assert server.state == "stopped"


def test_metrics_count_requests_tokens_and_first_tokens(running: Running) -> None:
    root = _root(running)
    before = _samples(httpx.get(f"{root}/metrics").text)
    out = script("qwen3", which=1)
    reasoning_tokens = expected("qwen3", HISTORY, out)[2]
    client = openai.OpenAI(base_url=running.base_url, api_key="u", max_retries=0)
    for stream in (False, True):
        resp: Any = client.chat.completions.create(
            model="qwen3", messages=HISTORY, stream=stream, extra_body={"simulated_output": out}
        )
        if stream:
            list(resp)
    claude = anthropic.Anthropic(base_url=root, api_key="u", max_retries=0)
    with claude.messages.stream(
        model="qwen3",
        max_tokens=4096,
        messages=[{"role": "user", "content": "Hi"}],
        extra_body={"simulated_output": out},
    ) as s:
        s.get_final_message()
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="nope", messages=HISTORY)
    running.wait_idle()
    response = httpx.get(f"{root}/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    after = _samples(response.text)

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0) - before.get(key, 0)

    assert grew("reasonspan_requests_total", protocol="chat.completions", status="200") == 2
    assert grew("reasonspan_requests_total", protocol="chat.completions", status="404") == 1
    assert grew("reasonspan_requests_total", protocol="messages", status="200") == 1
    n_out = len(tokenizer(FAMILY_TOKENIZERS["qwen3"]).encode(out))
    assert grew("reasonspan_tokens_total", channel="reasoning") == 3 * reasoning_tokens
    assert grew("reasonspan_tokens_total", channel="answer") == 3 * (n_out - reasoning_tokens)
    assert after["reasonspan_requests_running", (("protocol", "chat.completions"),)] == 0
    ttft = "reasonspan_time_to_first_token_seconds_count"
    assert grew(ttft, protocol="chat.completions") == 1  # the streaming one
    assert grew(ttft, protocol="messages") == 1
    assert after["reasonspan_step_seconds_count", ()] > 0


def test_tokenize_and_detokenize(running: Running) -> None:
    root = _root(running)
    tok = tokenizer(FAMILY_TOKENIZERS["qwen3"])
    text = "Hello <think> world"
    got = httpx.post(f"{root}/tokenize", json={"model": "qwen3", "prompt": text}).json()
    assert got["tokens"] == tok.encode(text) and got["count"] == len(got["tokens"])
    assert got["max_model_len"] == running.server.max_model_len
    chat = httpx.post(f"{root}/tokenize", json={"model": "qwen3", "messages": HISTORY}).json()
    assert chat["tokens"] == render_prompt_ids(tok, HISTORY)
    back = httpx.post(f"{root}/detokenize", json={"model": "qwen3", "tokens": got["tokens"]})
    assert back.json() == {"prompt": text}


def test_ops_errors_are_openai_shaped(running: Running) -> None:
    root = _root(running)
    both = httpx.post(f"{root}/tokenize", json={"model": "qwen3"})
    assert both.status_code == 400 and both.json()["error"]["param"] == "prompt"
    missing = httpx.post(f"{root}/tokenize", json={"model": "nope", "prompt": "x"})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"
    outside = httpx.post(f"{root}/detokenize", json={"model": "qwen3", "tokens": [10**9]})
    assert outside.status_code == 400 and outside.json()["error"]["param"] == "tokens"
    wrong = httpx.get(f"{root}/tokenize")
    assert wrong.status_code == 405 and "error" in wrong.json()
