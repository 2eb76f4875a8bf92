"""minicpmv (MiniCPM-V 4.5 / 4.6): thinking off drops a block the model writes anyway,
framing tokens are never text, and Qwen's ``<tool_call>`` calls (Hermes JSON or XML).

Tokenizer: ``qwen-3_base_with_minicpmv_special_tokens`` (Qwen3's real tokenizer, whose
``<think>``, ``</think>``, ``<tool_call>`` and ``<|im_end|>`` MiniCPM-V keeps, plus its
image tags: no MiniCPM-V tokenizer ships offline). The reserved markers are not tokens of
this vocabulary, so both their spellings are matched on bytes here.

Facts: vLLM's ``minicpmv`` parser (``vllm/parser/minicpmv.py``) and its tests
(``tests/parser/engine/test_minicpmv_reasoning.py``), whose cases the tables below repeat;
its engine tool parser reads Qwen3-Coder's XML calls. Each output goes through ``parse()``,
``TextSplitter`` at every offset and random sets of offsets, and the runtime (chunks and
SSE, 1 and 3 tokens a step) (:func:`tests.support.paths.every_path`).
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

# MiniCPM-V keeps Qwen3's tokens and adds its image/grounding tags
# (tests/families/test_matrix_added_tokens_a.py).
FIXTURE = "qwen-3_base_with_minicpmv_special_tokens"
ADDED_TOKENS = (
    "<image>",
    "</image>",
    "<slice>",
    "</slice>",
    "<image_id>",
    "</image_id>",
    "<ref>",
    "</ref>",
    "<box>",
    "</box>",
    "<quad>",
    "</quad>",
    "<point>",
    "</point>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# enable_thinking).
KWARGS = [{}, {"enable_thinking": True}]

# One call to f(a=V) in each form of the tool-call format architectures/minicpmv.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '<tool_call>\n{"name": "f", "arguments": {"a": V}}\n</tool_call>',
    "<tool_call>\n<function=f>\n<parameter=a>\nV\n</parameter>\n</function>\n</tool_call>",
)

TOK = tokenizer(FAMILY_TOKENIZERS["minicpmv"])
OFF: dict[str, Any] = {}
ON = {"enable_thinking": True}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    },
    {"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}},
]


def make(kwargs: dict[str, Any]) -> ReasoningParser:
    return reasonspan.create_parser_sync("minicpmv", TOK, kwargs)


def run(text: str, kwargs: dict[str, Any], tools: Any = TOOLS) -> reasonspan.ParseResult:
    return every_path(lambda: make(kwargs), None, TOK.encode(text), tools)


def hermes(name: str, args: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"


def xml(name: str, args: dict[str, Any]) -> str:
    params = "".join(
        f"<parameter={k}>\n{v if isinstance(v, str) else json.dumps(v)}\n</parameter>\n"
        for k, v in args.items()
    )
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


def want(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


# ------------------------------------------------------------------ vLLM's cases, thinking off


@pytest.mark.parametrize(
    ("output", "content"),
    [
        # test_plain_content_is_unchanged
        ("The answer is 42.", "The answer is 42."),
        # test_reserved_markers_are_removed
        (
            "<reserved_12>reasoning<reserved_13><|reserved_14|>tool call<|reserved_15|>",
            "reasoningtool call",
        ),
        # test_unrelated_reserved_text_is_unchanged
        ("<reserved_11>content<|reserved_16|>", "<reserved_11>content<|reserved_16|>"),
        # test_dangling_standard_think_end_is_removed
        ("first part </think>\n\nfinal part", "first part \n\nfinal part"),
        # test_truncated_standard_reasoning_does_not_leak
        ("prefix<think>private reasoning", "prefix"),
        # test_streaming_split_standard_markers (reasoning "": nothing of the block)
        ("<think>private reasoning</think>final answer", "final answer"),
        # test_streaming_split_reserved_markers
        ("<reserved_12>reasoning<|reserved_13|>final answer", "reasoningfinal answer"),
        # <|im_end|> is not text either
        ("Answer: 111<|im_end|>", "Answer: 111"),
    ],
)
def test_thinking_off_like_vllm(output: str, content: str) -> None:
    """vLLM's ``TestNonThinking``: reasoning is ``None`` for each, content as given."""
    res = run(output, OFF)
    assert (res.reasoning, res.content) == (None, content)
    kept = make(OFF).parse(TOK.encode(output), skip_special_tokens=False)
    assert (kept.reasoning, kept.content) == (None, content)


def test_thinking_off_block_tokens_are_decided_but_no_channel() -> None:
    ids = TOK.encode("Hi.<think>secret</think>Bye.")
    res = make(OFF).parse(ids)
    assert res.reasoning_token_ids == [] and res.reasoning_tokens == 0
    assert res.content_token_ids == TOK.encode("Hi.") + TOK.encode("Bye.")
    secret = TOK.encode("secret")
    assert [lab for t, lab in zip(ids, res.labels, strict=True) if t in secret] == [
        Label.DELIMITER
    ] * len(secret)


# ------------------------------------------------------------------- vLLM's cases, thinking on


@pytest.mark.parametrize(
    ("output", "reasoning", "content"),
    [
        # test_standard_think_tags_are_parsed
        ("<think>private reasoning</think>final answer", "private reasoning", "final answer"),
        # test_reserved_markers_are_removed (thinking)
        (
            "<think><reserved_12>private reasoning</think><|reserved_13|>final answer",
            "private reasoning",
            "final answer",
        ),
        # test_streaming_im_end_is_removed: reasoning "Answer: 111", no content
        ("Answer: 111<|im_end|>", "Answer: 111", None),
        # a repeated </think> in the answer is dropped, as Qwen3's
        ("r</think>a</think>b", "r", "ab"),
    ],
)
def test_thinking_on_like_vllm(output: str, reasoning: str, content: str | None) -> None:
    res = run(output, ON)
    assert (res.reasoning, res.content) == (reasoning, content)
    kept = make(ON).parse(TOK.encode(output), skip_special_tokens=False)
    assert (kept.reasoning, kept.content) == (reasoning, content)


# ---------------------------------------------------------------------------- tool calls


@pytest.mark.parametrize("write", [hermes, xml])
def test_a_call_after_reasoning_and_a_second_one(write: Any) -> None:
    first, second = {"city": "Paris", "days": 2}, {}
    out = f"<think>I need it.</think>Checking.{write('get_weather', first)}{write('ping', second)}"
    res = run(out, ON)
    assert (res.reasoning, res.content) == ("I need it.", "Checking.")
    assert res.tool_calls == [want("get_weather", first), want("ping", second)]


def test_a_call_ends_reasoning() -> None:
    res = run("I need it." + xml("get_weather", {"city": "Oslo"}), ON)
    assert (res.reasoning, res.content) == ("I need it.", None)
    assert res.tool_calls == [want("get_weather", {"city": "Oslo"})]


def test_thinking_off_reads_calls_even_after_a_dropped_block() -> None:
    call = hermes("get_weather", {"city": "Rome"})
    for out in (f"Sure.{call}", f"Sure.<think>hmm</think>{call}", f"Sure.<think>hmm{call}"):
        res = run(out, OFF)
        assert (res.reasoning, res.content) == (None, "Sure."), out
        assert res.tool_calls == [want("get_weather", {"city": "Rome"})], out


def test_a_malformed_call_goes_back_to_the_content_verbatim() -> None:
    bad = "<tool_call>not a call</tool_call>"
    res = make(ON).parse(TOK.encode(f"r</think>See {bad}"), tools=TOOLS, skip_special_tokens=False)
    assert (res.reasoning, res.content, res.tool_calls) == ("r", f"See {bad}", [])
    run(f"r</think>See {bad}", ON)  # every path agrees


async def cut_by_length(ids: list[int], sse: bool) -> Answer:
    rt = ReasoningRuntime()
    stream = rt.add("r", make(ON), None, tools=TOOLS, sse=sse)
    for i in range(0, len(ids), 2):
        rt.step([stream.engine_id], ids[i : i + 2], [0, len(ids[i : i + 2])])
    rt.finish("r", "length")
    return await (read_sse(stream) if sse else read_chunks(stream))


@pytest.mark.parametrize("write", [hermes, xml])
def test_a_call_cut_by_the_end_of_the_output_is_not_returned(write: Any) -> None:
    call = write("get_weather", {"city": "Rome"})
    ids = TOK.encode(f"r</think>Checking.{call[:-8]}")
    res = make(ON).parse(ids, tools=TOOLS)
    assert (res.reasoning, res.content, res.tool_calls) == ("r", "Checking.", [])
    for at in range(len(ids) + 1):
        assert split_at(make(ON), None, ids, [at], TOOLS) == ("r", "Checking.", []), at
    for sse in (False, True):
        assert anyio.run(cut_by_length, ids, sse) == ("r", "Checking.", [])


def test_values_typed_from_the_schema_in_xml() -> None:
    """XML parameters are bare text: ``2`` is an integer where the schema says so, and
    ``007`` stays a string for a string property."""
    res = run(xml("get_weather", {"city": "007", "days": 2}), OFF)
    assert res.tool_calls == [want("get_weather", {"city": "007", "days": 2})]


# ---------------------------------------------------------------------- matrix rows

REASONING = "Two and two make four."
ANSWER = "It is 4."

MINICPMV_TURN = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"


def test_thinking_is_off_by_default() -> None:
    res = fc.split("minicpmv", ANSWER, prompt=MINICPMV_TURN)
    assert not res.started_in_reasoning
    assert (res.reasoning, res.content) == (None, ANSWER)


def test_block_written_with_thinking_off_stays_out_of_the_answer() -> None:
    res = fc.split("minicpmv", f"<think>{REASONING}</think>{ANSWER}", prompt=MINICPMV_TURN)
    assert res.content == ANSWER
    assert res.reasoning is None  # dropped, as vLLM does (tests/families/test_minicpmv.py)


def test_enable_thinking_starts_in_reasoning() -> None:
    on = {"enable_thinking": True}
    for out in (f"<think>{REASONING}</think>{ANSWER}", f"{REASONING}</think>{ANSWER}"):
        res = fc.split("minicpmv", out, prompt=MINICPMV_TURN, kwargs=on)
        assert res.started_in_reasoning
        assert (res.reasoning, res.content) == (REASONING, ANSWER)


def test_tool_call_ends_reasoning() -> None:
    call = '<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>'
    res = fc.split("minicpmv", REASONING + call, kwargs={"enable_thinking": True})
    assert (res.reasoning, res.content) == (REASONING, call)
    assert fc.labelled(res, FAMILY_TOKENIZERS["minicpmv"], Label.TOOL) == ["<tool_call>"]


def test_refuses_a_switch_that_is_not_a_bool() -> None:
    assert fc.refused("minicpmv", {"enable_thinking": "yes"}).key == "enable_thinking"
