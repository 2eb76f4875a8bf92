"""Streamed tool-call arguments as an agent meets them: the reference server on loopback,
the official ``openai`` client, Qwen3 (its real tokenizer and chat template) writing a
file through a tool call. Streaming, the file arrives in many ``function.arguments``
pieces while the call is written; joined, they are exactly the arguments of the same
request not streamed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.serving.test_server import Running, start

WRITE_FILE = {
    "type": "function",
    "function": {
        "name": "write_file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
}
FILE = "".join(f'def f{i}(x):\n    return x * {i}  # "{i}" é\n\n' for i in range(120))
ARGS = {"path": "src/f.py", "content": FILE}


def output(xml: bool) -> str:
    """What the model writes: a short answer, then the call in Hermes JSON or in
    Qwen3-Coder's XML (both as Qwen3's chat templates write them)."""
    if xml:
        params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in ARGS.items())
        call = f"<function=write_file>\n{params}</function>"
    else:
        call = json.dumps({"name": "write_file", "arguments": ARGS}, ensure_ascii=False)
    return f"<think>\nWrite the file.\n</think>\n\nWriting it.\n<tool_call>\n{call}\n</tool_call>"


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with start() as running:
        yield _client(running)


def _client(running: Running) -> openai.OpenAI:
    return openai.OpenAI(base_url=running.base_url, api_key="unused", max_retries=0, timeout=60)


@pytest.mark.parametrize("xml", [False, True], ids=["hermes", "coder-xml"])
def test_a_file_write_streams_its_arguments(client: openai.OpenAI, xml: bool) -> None:
    request: dict[str, Any] = {
        "model": "qwen3",
        "messages": [{"role": "user", "content": "Write src/f.py."}],
        "tools": [WRITE_FILE],
        "extra_body": {"simulated_output": output(xml)},
    }
    whole = client.chat.completions.create(**request)
    [call] = whole.choices[0].message.tool_calls or []
    assert call.function.name == "write_file"
    assert json.loads(call.function.arguments) == ARGS
    assert whole.choices[0].finish_reason == "tool_calls"

    pieces: list[str] = []
    names: list[str] = []
    ids: set[str] = set()
    content = ""
    finish = None
    for chunk in client.chat.completions.create(**request, stream=True):
        for choice in chunk.choices:
            content += choice.delta.content or ""
            finish = choice.finish_reason or finish
            for tc in choice.delta.tool_calls or []:
                assert tc.index == 0
                if tc.id:
                    ids.add(tc.id)
                assert tc.function is not None
                if tc.function.name:
                    names.append(tc.function.name)
                if tc.function.arguments:
                    pieces.append(tc.function.arguments)
    assert names == ["write_file"] and len(ids) == 1  # the header comes once
    assert "".join(pieces) == call.function.arguments  # byte for byte, as not streamed
    assert len(pieces) >= 10
    assert (content, finish) == ("Writing it.", "tool_calls")
