"""The request's ``stop`` through the reference server, with the
official openai client over loopback HTTP as in test_server.py: the answer ends before the
first stop string, finish_reason is "stop", the engine stops generating, and a bad
``stop`` is a 400 naming the field."""

from __future__ import annotations

import httpx
import openai

from tests.serving.test_server import HISTORY, Running, expected, extra, stream_text

MODEL = "qwen3"
ANSWER = "The weather in Oslo is mild."
OUTPUT = (
    "<think>\nThe user asks about weather. END of plan? No: go on.\n</think>\n\n"
    + ANSWER
    + " END Then a long tail the client never asked for."
)


def test_stop_ends_the_answer_before_the_match(client: openai.OpenAI, running: Running) -> None:
    reasoning, content, _, _ = expected(MODEL, HISTORY, OUTPUT)
    assert content.startswith(ANSWER + " END")  # the stop string is in the answer
    assert "END" in reasoning  # and in the reasoning, where it does not apply
    resp = client.chat.completions.create(
        model=MODEL, messages=HISTORY, stop=["END"], extra_body={"simulated_output": OUTPUT}
    )
    msg = resp.choices[0].message
    assert (extra(msg, "reasoning"), msg.content) == (reasoning, ANSWER + " ")
    assert resp.choices[0].finish_reason == "stop"
    running.wait_idle()  # the engine was told to stop: nothing is left generating


def test_stop_while_streaming_and_a_single_string(client: openai.OpenAI) -> None:
    reasoning, _, _, _ = expected(MODEL, HISTORY, OUTPUT)
    r, c, finish, usage, _ = stream_text(
        client,
        model=MODEL,
        messages=HISTORY,
        stop=" mild",
        stream_options={"include_usage": True},
        extra_body={"simulated_output": OUTPUT},
    )
    assert (r, c, finish) == (reasoning, "The weather in Oslo is", "stop")
    assert usage is not None


def test_without_a_match_the_answer_is_whole(client: openai.OpenAI) -> None:
    reasoning, content, _, _ = expected(MODEL, HISTORY, OUTPUT)
    resp = client.chat.completions.create(
        model=MODEL, messages=HISTORY, stop=["nowhere"], extra_body={"simulated_output": OUTPUT}
    )
    msg = resp.choices[0].message
    assert (extra(msg, "reasoning"), msg.content) == (reasoning, content)


def test_an_empty_stop_string_is_a_400_naming_stop(running: Running) -> None:
    body = {"model": MODEL, "messages": HISTORY, "stop": ["ok", ""]}
    resp = httpx.post(f"{running.base_url}/chat/completions", json=body, timeout=30)
    assert resp.status_code == 400
    assert resp.json()["error"]["param"] == "stop"
