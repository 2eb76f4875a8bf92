"""nemotron_v3: NVIDIA Nemotron 3's tool calls, on Qwen3's real tokenizer with Nemotron 3's
special tokens (``qwen-3_base_with_nemotron_v3_special_tokens``: ``<think>``, ``</think>``,
``<tool_call>``, ``</tool_call>`` are one token each, as in Nemotron 3's vocabulary).

Facts: Nemotron 3 Nano's chat template (``NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja``, in
llama.cpp's ``models/templates``) ends the prompt with ``<|im_start|>assistant\\n<think>\\n``
(thinking on) or ``<think></think>`` (off) and writes each call as
``<tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE\\n</parameter>\\n</function>\\n
</tool_call>\\n`` (strings raw, mappings and lists as JSON, anything else through Jinja's
``|string``); vLLM's ``nemotron_v3`` parser reads it with its ``qwen3`` XML engine.

Every output is assembled from pieces the test knows (reasoning, text, calls rendered as the
template renders them from the test's own arguments), and the expected split and calls are
built from the same pieces. Every output also goes through every path (``TextSplitter``
split at every offset and at random offsets, the runtime read as chunks and as SSE).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import reasonspan
from reasonspan import (
    InvalidOptionError,
    Label,
    ReasoningParser,
)
from tests.support import family_cases as fc
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path

# Nemotron 3's markers are the same special tokens as Qwen3's (all already there).
FIXTURE = "qwen-3_base_with_nemotron_v3_special_tokens"
ADDED_TOKENS = (
    "<|im_start|>",
    "<|im_end|>",
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

FAMILY = "nemotron_v3"
TOK = tokenizer(FAMILY_TOKENIZERS[FAMILY])
PROMPT_ON = TOK.encode("<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n")
PROMPT_OFF = TOK.encode("<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think></think>")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "n": {"type": "integer"},
        "x": {"type": "number"},
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


def raw(value: Any) -> str:
    """A value as the template writes it: strings as they are, mappings and lists as JSON,
    anything else through Jinja's ``|string`` (Python's ``True``, ``3``, ``1.5``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def call(name: str, args: dict[str, Any]) -> str:
    params = "".join(f"<parameter={k}>\n{raw(v)}\n</parameter>\n" for k, v in args.items())
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>\n"


def canon(name: str, args: dict[str, Any]) -> tuple[str, str]:
    return name, json.dumps(args, sort_keys=True, ensure_ascii=False)


def got(res: reasonspan.ParseResult) -> list[tuple[str, str]]:
    return [canon(c.name, json.loads(c.arguments)) for c in res.tool_calls]


TYPED = {"s": "3", "n": 3, "x": 1.5, "b": True, "o": {"k": [1, "two", None]}, "a": [1, -2]}


def test_the_call_markers_are_single_tokens() -> None:
    for marker in ("<tool_call>", "</tool_call>", "<think>", "</think>"):
        assert TOK.single_token_id(marker) is not None, marker


def test_a_call_after_reasoning_then_a_second_one() -> None:
    out = "plan\n</think>\nSure.\n" + call("put", TYPED) + call("ping", {})
    res = every_path(parser, PROMPT_ON, TOK.encode(out), TOOLS)
    assert got(res) == [canon("put", TYPED), canon("ping", {})]
    # Nemotron 3 keeps the text as written; only the gap before a call is layout.
    assert (res.reasoning, res.content) == ("plan\n", "\nSure.")
    assert int(Label.TOOL_CALL) in res.labels


def test_a_call_ends_reasoning_without_the_end_marker() -> None:
    out = "plan " + call("put", {"s": "x"})
    res = every_path(parser, PROMPT_ON, TOK.encode(out), TOOLS)
    assert got(res) == [canon("put", {"s": "x"})]
    assert res.reasoning == "plan " and not res.content  # reasoning as written


def test_values_are_typed_from_the_schema_and_text_stays_text() -> None:
    # Jinja's |string writes Python's True; a string property keeps what looks typed.
    for text in ["3", "true", "null", '{"a": 1}', "  two  spaces  ", "x </tool_call> y"]:
        out = "p</think>" + call("put", {"s": text, "b": True, "n": 7})
        res = parser().parse(TOK.encode(out), PROMPT_ON, tools=TOOLS)
        assert got(res) == [canon("put", {"s": text, "b": True, "n": 7})], text


def test_a_call_cut_by_the_end_of_the_output_is_not_returned() -> None:
    before = TOK.encode("p</think>Checking.\n")
    ids = TOK.encode(call("put", {"s": "Paris", "n": 3}).rstrip("\n"))
    for keep in range(1, len(ids)):
        res = parser().parse(before + ids[:keep], PROMPT_ON, tools=TOOLS)
        assert res.tool_calls == [], TOK.decode(ids[:keep])
        assert res.content == "Checking."


@pytest.mark.parametrize(
    "body",
    [
        "<tool_call>\n<function=put>\nstray text\n</function>\n</tool_call>",
        "<tool_call>\n<parameter=s>\nno function\n</parameter>\n</tool_call>",
        "<tool_call>{not xml}</tool_call>",
    ],
)
def test_a_malformed_body_goes_back_to_the_content_verbatim(body: str) -> None:
    out = "p</think>" + body + " then the answer"
    res = every_path(parser, PROMPT_ON, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.content == body + " then the answer"


def test_thinking_off_reads_calls_from_the_start() -> None:
    p = parser(enable_thinking=False)
    out = "Sure.\n" + call("put", {"n": 1})
    res = every_path(lambda: parser(enable_thinking=False), PROMPT_OFF, TOK.encode(out), TOOLS)
    assert not p.is_prompt_in_reasoning(PROMPT_OFF)
    assert got(res) == [canon("put", {"n": 1})]
    assert (res.reasoning, res.content) == (None, "Sure.")


def test_without_tools_the_call_stays_in_the_content() -> None:
    out = "p</think>" + call("put", {"n": 1})
    res = parser().parse(TOK.encode(out), PROMPT_ON)
    assert res.tool_calls == [] and res.content == call("put", {"n": 1})


PIECES = ["Sure. ", "\n", "多 🙂", "a < b", "<b>x</b> "]
VALUES: dict[str, list[Any]] = {
    "s": ["3", "x </tool_call> y", "a </parameter> b", "  pad  ", "line\nbreak"],
    "n": [0, -7, 123456],
    "b": [True, False],
    "o": [{}, {"k": {"d": [1, None]}}],
    "a": [[], [1, 2, 3]],
}


@pytest.mark.parametrize("seed", range(6))
def test_random_outputs_give_the_test_s_calls_on_every_path(seed: int) -> None:
    rng = random.Random(seed)
    text = rng.choice(["", "plan\n</think>\n"])
    want = []
    for _ in range(rng.randint(1, 3)):
        text += rng.choice(PIECES)
        args = {k: rng.choice(v) for k, v in VALUES.items() if rng.random() < 0.5}
        text += call("put", args)
        want.append(canon("put", args))
    res = every_path(parser, PROMPT_ON, TOK.encode(text), TOOLS)
    assert got(res) == want, text


# ---------------------------------------------------------------------- matrix rows

NEMO_Q = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
NEMO_ON = NEMO_Q + "<think>\n"
NEMO_OFF = NEMO_Q + "<think></think>"


def test_as_qwen3() -> None:
    assert fc.in_reasoning("nemotron_v3", NEMO_ON)
    assert fc.texts(fc.split("nemotron_v3", "plan\n</think>\n\nHello", prompt=NEMO_ON)) == (
        "plan\n",
        "\n\nHello",
    )
    assert fc.texts(fc.split("nemotron_v3", "<think>plan</think>Hello")) == ("plan", "Hello")
    res = fc.split("nemotron_v3", "still going", prompt=NEMO_ON)
    assert fc.texts(res) == ("still going", None) and not res.reasoning_as_content
    assert fc.texts(fc.split("nemotron_v3", "</think>Hello", prompt=NEMO_ON)) == (None, "Hello")
    call = '<tool_call>\n{"name": "f"}\n</tool_call>'
    assert fc.texts(fc.split("nemotron_v3", "use f" + call, prompt=NEMO_ON)) == ("use f", call)
    # Repeated </think> in content is dropped; a later <think> opens a block again.
    assert fc.texts(fc.split("nemotron_v3", "a</think>b</think>c<think>d</think>e")) == (
        "ad",
        "bce",
    )


def test_thinking_off_content_and_leaked_block() -> None:
    off = {"enable_thinking": False}
    assert not fc.in_reasoning("nemotron_v3", NEMO_OFF, off)
    res = fc.split("nemotron_v3", "Hello", prompt=NEMO_OFF, kwargs=off)
    assert fc.texts(res) == (None, "Hello") and not res.reasoning_as_content
    # A block the model writes anyway is split off when an answer follows it ...
    res = fc.split("nemotron_v3", "<think>greet</think>Hello", prompt=NEMO_OFF, kwargs=off)
    assert fc.texts(res) == ("greet", "Hello") and not res.reasoning_as_content
    # ... and is the answer when nothing follows it.
    res = fc.split("nemotron_v3", "<think>Hello there</think>", prompt=NEMO_OFF, kwargs=off)
    assert fc.texts(res) == (None, "Hello there")
    assert res.reasoning_as_content and res.reasoning_tokens == 0
    assert Label.REASONING not in res.labels


def test_force_nonempty_content() -> None:
    force = {"force_nonempty_content": True}
    res = fc.split("nemotron_v3", "only thoughts", prompt=NEMO_ON, kwargs=force)
    assert fc.texts(res) == (None, "only thoughts")
    assert res.reasoning_as_content and not res.reasoning_ended
    assert res.content_token_ids == [t for t in res.token_ids]
    res = fc.split("nemotron_v3", "thoughts</think>", prompt=NEMO_ON, kwargs=force)
    assert fc.texts(res) == (None, "thoughts") and res.reasoning_ended
    # Content (a tool call counts) means no swap; nor does the default without the switch.
    call = "<tool_call>\n{}\n</tool_call>"
    res = fc.split("nemotron_v3", "t" + call, prompt=NEMO_ON, kwargs=force)
    assert fc.texts(res) == ("t", call) and not res.reasoning_as_content
    res = fc.split("nemotron_v3", "thoughts</think>", prompt=NEMO_ON)
    assert fc.texts(res) == ("thoughts", None) and not res.reasoning_as_content
    with pytest.raises(InvalidOptionError):
        fc.parser_for("nemotron_v3", {"force_nonempty_content": "yes"})


def test_stream_signals_the_swap_at_finish() -> None:
    """Streaming labels + the finish() signal == parse(), for every cut of the output."""
    parser = fc.parser_for("nemotron_v3", {"force_nonempty_content": True})
    assert parser.may_return_reasoning_as_content
    assert not fc.parser_for("nemotron_v3").may_return_reasoning_as_content
    ids = parser.tokenizer.encode("a b c d</think>")
    whole = parser.parse(ids, prompt_token_ids=parser.tokenizer.encode(NEMO_ON))
    for cut in range(len(ids) + 1):
        parser.reset()
        first = parser.stream(ids[:cut], True)
        second = parser.stream(ids[cut:], first.is_still_reasoning)
        assert not first.reasoning_as_content and not second.reasoning_as_content
        tail = parser.finish()
        assert tail.reasoning_as_content
        streamed = first.labels + second.labels + tail.labels
        assert streamed.replace(bytes([Label.REASONING]), bytes([Label.CONTENT])) == whole.labels
    # reset() forgets what the last request saw.
    parser.reset()
    parser.stream(parser.tokenizer.encode("x</think>answer"), True)
    assert not parser.finish().reasoning_as_content
    parser.reset()
    parser.stream(parser.tokenizer.encode("y</think>"), True)
    assert parser.finish().reasoning_as_content


def test_multi_turn_history() -> None:
    history = (
        "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\n<think>\nold\n</think>\n\nA1"
        "<|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n"
    )
    assert fc.in_reasoning("nemotron_v3", history + "<think>\n")
    assert fc.in_reasoning("nemotron_v3", history)
    assert not fc.in_reasoning("nemotron_v3", history, {"enable_thinking": False})
    assert not fc.in_reasoning("nemotron_v3", history + "<think></think>")


# ---------------------------------------------------------------------- fidelity

SWAPS = [
    fc.Split(
        "forced, only thoughts",
        "only thoughts",
        None,
        "only thoughts",
        NEMO_Q + "<think>\n",
        {"force_nonempty_content": True},
    ),
    fc.Split(
        "forced, empty answer",
        "a b</think>",
        None,
        "a b",
        NEMO_Q + "<think>\n",
        {"force_nonempty_content": True},
    ),
    fc.Split(
        "forced, answer",
        "plan</think>Hi",
        "plan",
        "Hi",
        NEMO_Q + "<think>\n",
        {"force_nonempty_content": True},
    ),
    fc.Split(
        "off, leaked block only",
        "<think>Hello</think>",
        None,
        "Hello",
        NEMO_Q + "<think></think>",
        {"enable_thinking": False},
    ),
    fc.Split(
        "off, leaked block then answer",
        "<think>g</think>Hi",
        "g",
        "Hi",
        NEMO_Q + "<think></think>",
        {"enable_thinking": False},
    ),
]


@pytest.mark.parametrize("case", fc.params(SWAPS))
@fc.SETTINGS
@given(data=st.data())
def test_splitter_holds_what_the_swap_may_move(data: st.DataObject, case: fc.Split) -> None:
    """TextSplitter, fed any split, returns parse()'s text: reasoning that becomes the
    content is never returned as reasoning first."""
    fc.check_split(data, "nemotron_v3", case)
