"""Tool calls through the reference server, as an agent loop meets them: real HTTP on
loopback, the official ``openai`` client, streaming and not, for every family with a
tool-call format.

Each case is a fixture of the public CanIToolCall corpus (see ``canitoolcall_replay``): the
simulated engine writes the fixture's recorded output, the request offers the fixture's
tools, and what the client receives (``message`` / the assembled ``delta`` s) is judged by
the corpus' own checks against the fixture's expected content, reasoning and calls.

The served template is a minimal one whose generation prompt is the one the fixture
records (the stand-in tokenizers have no template, and the corpus states the prompt the
model saw); the families' real templates are exercised in ``test_server.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from canitoolcall import checks
from canitoolcall.fixtures import Fixture
from canitoolcall.pytest_plugin import family_for
from canitoolcall.results import Observation, ParsedToolCall, ParseResult, Status

from reasonspan.serving.app import ServedModel, Server
from reasonspan.serving.engine import SimulatedServingEngine
from tests.serving.test_server import Running, extra
from tests.support.canitoolcall_replay import REFERENCE, corpus
from tests.support.fixtures import tokenizer

CASES = [
    "qwen3-hermes/parallel-two-calls-thinking",
    "qwen3-hermes/parallel-mixed-tools-text-before-no-thinking",
    "qwen3-hermes/instruct2507-parallel-calls",
    "gpt-oss/vllm-sequential-calls",
    "qwen3-xml/q38-parallel-calls",
    "qwen3-xml/coder-parallel-calls",
    "glm/glm47-parallel-same-tool",
    "glm/glm45-parallel-mixed-nested",
    "deepseek/v31-parallel-two-calls",
    "deepseek/v32-reasoning-parallel-text-before",
    "deepseek/v41-reasoning-parallel-text-before",
    "deepseek/v3-parallel-two-calls",
    "kimi/k26-parallel-three-tools",
    "kimi/k3-parallel-same-tool",
    "mistral/v11-parallel-calls",
    "mistral/v3-parallel-calls",
    "llama/l4-meta-pythonic-parallel",
    "llama/l3-sglang-text-before-python-tag",
    "gemma4/parallel-two-calls-thinking",
]
"""One or more fixtures per corpus family (parallel calls where the corpus has them): 10
reasoning/tool families served over HTTP."""

_BY_ID = {f.id: f for f in corpus()}


def _template(fixture: Fixture) -> str:
    prompt = fixture.generation_prompt or ""
    return (
        "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}{% raw %}" + prompt + "{% endraw %}{% endif %}"
    )


def _model(fixture: Fixture) -> ServedModel:
    ref = REFERENCE[fixture.tokenizer.repo if fixture.tokenizer else fixture.models[0]]
    kwargs = dict(ref.kwargs)
    if ref.switch is not None and fixture.thinking is not None:
        kwargs[ref.switch] = fixture.thinking
    return ServedModel(
        fixture.id,
        tokenizer(ref.tokenizer),
        ref.parser,
        chat_template=_template(fixture),
        chat_template_kwargs=kwargs,
    )


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    models = [_model(_BY_ID[c]) for c in CASES]
    engine = SimulatedServingEngine(max_batch=16, tokens_per_step=3)
    # Not warmed: no request here has a response_format, and warming builds an llguidance
    # tokenizer for each of the ~15 tokenizers (110-180 MB and 1.5-3.5 s each); the warm-up
    # itself is tested in test_server_stalls.
    with Running(Server(models, engine, warm_up=False)) as running:
        yield openai.OpenAI(base_url=running.base_url, api_key="unused", max_retries=0, timeout=30)


def _request(fixture: Fixture) -> dict[str, Any]:
    return {
        "model": fixture.id,
        "messages": [{"role": "user", "content": "Please use the tools."}],
        "tools": list(fixture.tools),
        "extra_body": {"simulated_output": fixture.raw_output},
    }


def _judge(fixture: Fixture, got: ParseResult, mode: str) -> None:
    rows = checks.run_checks(fixture, family_for(fixture), Observation(nonstream=got, streams={}))
    bad = [f"{r.check}: {r.detail}" for r in rows if r.status in (Status.FAIL, Status.ERROR)]
    assert checks.case_status(rows) in (Status.PASS, Status.SOFT_PASS), f"{mode}: {bad}"


@pytest.mark.parametrize("case", CASES)
def test_non_streaming(client: openai.OpenAI, case: str) -> None:
    fixture = _BY_ID[case]
    resp = client.chat.completions.create(**_request(fixture))
    choice = resp.choices[0]
    message = choice.message
    calls = message.tool_calls or []
    assert message.role == "assistant"  # sent back as history as it is
    for call in calls:
        assert call.type == "function" and call.id.startswith("call_")
        assert isinstance(json.loads(call.function.arguments), dict)
    assert len({c.id for c in calls}) == len(calls)
    if fixture.expected is not None and fixture.expected.tool_calls:
        assert choice.finish_reason == "tool_calls"
    got = ParseResult(
        content=message.content or None,
        reasoning_content=extra(message, "reasoning") or None,
        tool_calls=tuple(ParsedToolCall(c.function.name, c.function.arguments) for c in calls),
    )
    _judge(fixture, got, "non-streaming")


@pytest.mark.parametrize("case", CASES)
def test_streaming(client: openai.OpenAI, case: str) -> None:
    """The first delta of a call has its index, id, type and name; later ones only
    argument text; indices increase in order; the pieces assemble to the whole calls."""
    fixture = _BY_ID[case]
    reasoning, content, finish = "", "", None
    calls: dict[int, list[str]] = {}
    ids: dict[int, str] = {}
    for chunk in client.chat.completions.create(stream=True, **_request(fixture)):
        for ch in chunk.choices:
            reasoning += extra(ch.delta, "reasoning") or ""
            content += ch.delta.content or ""
            finish = ch.finish_reason or finish
            for tc in ch.delta.tool_calls or []:
                if tc.index not in calls:
                    assert tc.index == len(calls), "calls arrive in order"
                    assert tc.id and tc.type == "function" and tc.function and tc.function.name
                    ids[tc.index] = tc.id
                    calls[tc.index] = [tc.function.name, ""]
                else:
                    assert not tc.id and not (tc.function and tc.function.name)
                if tc.function is not None:
                    calls[tc.index][1] += tc.function.arguments or ""
    if fixture.expected is not None and fixture.expected.tool_calls:
        assert finish == "tool_calls"
    assert len(set(ids.values())) == len(ids)
    got = ParseResult(
        content=content or None,
        reasoning_content=reasoning or None,
        tool_calls=tuple(ParsedToolCall(n, a) for _, (n, a) in sorted(calls.items())),
    )
    _judge(fixture, got, "streaming")
