"""plamo3 (PLaMo 3): tool requests, and a tag fragment at the end of the output.

Tokenizer: ``qwen-2.5_base_with_plamo3_special_tokens`` (Qwen2.5's real tokenizer plus PLaMo
3's tag pieces ``<|plamo:begin_``, ``<|plamo:end_``, ``:plamo|>`` and ``<|plamo:tag|>``,
``<|plamo:msg|>``, ``<|plamo:constrain|>``: no PLaMo tokenizer ships offline). Every tag is
several tokens, as in PLaMo's vocabulary.

Facts: vLLM's ``plamo3`` tool parser (``vllm/tool_parsers/plamo3_tool_parser.py``) and its
tests (``tests/tool_parsers/test_plamo3_tool_parser.py``): a block
``<|plamo:begin_tool_requests:plamo|>`` of requests (name tags, arguments tags with
``<|plamo:constrain|>json<|plamo:msg|>``, JSON arguments) closed by
``<|plamo:end_tool_requests:plamo|>`` and ``<|plamo:tag|>``; its reasoning parser's
``strip_trailing_partial_marker`` (``tests/reasoning/test_plamo3_reasoning_parser.py``).
Expected calls and text are built here from the pieces the test chose; each output goes
through ``parse()``, ``TextSplitter`` at every offset and random sets of offsets, and the
runtime (chunks and SSE, 1 and 3 tokens a step) (:func:`tests.support.paths.every_path`).
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

# PLaMo 3: its markers are built from these pieces with ordinary text between them
# (tests/families/test_matrix_added_tokens_a.py).
FIXTURE = "qwen-2.5_base_with_plamo3_special_tokens"
ADDED_TOKENS = (
    "<|plamo:begin_",
    "<|plamo:end_",
    ":plamo|>",
    "<|plamo:tag|>",
    "<|plamo:msg|>",
    "<|plamo:constrain|>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# enable_thinking).
KWARGS = [{}, {"enable_thinking": False}]

# One call to f(a=V) in each form of the tool-call format architectures/plamo3.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
    "<|plamo:begin_tool_name:plamo|>f<|plamo:end_tool_name:plamo|>"
    '<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{"a": V}'
    "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
    "<|plamo:end_tool_requests:plamo|>",
)

TOK = tokenizer(FAMILY_TOKENIZERS["plamo3"])
BEGIN, END = "<|plamo:begin_think:plamo|>", "<|plamo:end_think:plamo|>"
REQUESTS, REQUESTS_END = "<|plamo:begin_tool_requests:plamo|>", "<|plamo:end_tool_requests:plamo|>"
EOT = "<|plamo:tag|>"
R = "I need the weather."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    },
    {"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}},
]


def make(**kwargs: Any) -> ReasoningParser:
    return reasonspan.create_parser_sync("plamo3", TOK, kwargs)


def request(name: str, arguments: str) -> str:
    """One request as vLLM's tests write it (``_tool_call``)."""
    return (
        f"<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>{name}"
        "<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|>"
        f"<|plamo:constrain|>json<|plamo:msg|>{arguments}<|plamo:end_tool_arguments:plamo|>"
        "<|plamo:end_tool_request:plamo|>"
    )


def block(*requests: str) -> str:
    return f"{REQUESTS}{''.join(requests)}{REQUESTS_END}{EOT}"


def want(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


def run(text: str, **kwargs: Any) -> reasonspan.ParseResult:
    return every_path(lambda: make(**kwargs), None, TOK.encode(text), TOOLS)


# ------------------------------------------------------------- a tag cut short at the end


@pytest.mark.parametrize(
    ("output", "reasoning", "content"),
    [
        # vLLM: "reasoning text<|plamo:end_thin" is safe up to "reasoning text".
        ("visible<|plamo:end_", "visible", None),
        ("visible<|plamo:end_think", "visible", None),
        (f"r{END}visible<|plamo:end_", "r", "visible"),
        (f"r{END}visible<|plamo:end_think:plamo|", "r", "visible"),
        # vLLM's tool parser test: "Answer<|plamo:begin_" is content "Answer".
        (f"r{END}Answer<|plamo:begin_", "r", "Answer"),
        (f"r{END}Answer.<|plamo:begin_tool_req", "r", "Answer."),
        # A fragment of "<|plamo:" in ordinary tokens (vLLM strips those too).
        (f"r{END}Answer<|pla", "r", "Answer"),
        # The space before "<|" shares its token: it stays text (vLLM: "a " too).
        (f"r{END}a <|pla", "r", "a "),
        # Only a fragment at the very end: one the output goes past is text.
        (f"r{END}a <|plx", "r", "a <|plx"),
        # The end of turn ends the output: a fragment right before it is no text either.
        (f"r{END}visible<|plamo:end_{EOT}ignored", "r", "visible"),
        (f"thinking<|plamo:end_thi{EOT}", "thinking", None),
        (f"r{END}a <|pla{EOT}<|plamo:end_", "r", "a "),
    ],
)
def test_a_tag_fragment_at_the_end_is_not_text(
    output: str, reasoning: str, content: str | None
) -> None:
    res = run(output)
    assert (res.reasoning, res.content) == (reasoning, content)
    if content is not None and "plx" not in content:
        # The fragment's tokens are decided, counted in neither channel.
        assert res.labels[-1] == Label.DELIMITER


def test_a_fragment_without_tools_too() -> None:
    ids = TOK.encode(f"{BEGIN}r{END}visible<|plamo:end_")
    for skip in (True, False):
        res = make().parse(ids, skip_special_tokens=skip)
        assert (res.reasoning, res.content) == ("r", "visible")


# ---------------------------------------------------------------------------- tool calls


def test_a_call_after_reasoning() -> None:
    """vLLM: ``Checking the weather.`` + a block with ``get_weather {"city": "Tokyo"}``."""
    call = block(request("get_weather", '{"city": "Tokyo"}'))
    res = run(f"{R}{END}Checking the weather.{call}")
    assert (res.reasoning, res.content) == (R, "Checking the weather.")
    assert res.tool_calls == [want("get_weather", {"city": "Tokyo"})]


def test_the_block_ends_reasoning() -> None:
    res = run(f"{BEGIN}{R}{block(request('ping', '{}'))}")
    assert (res.reasoning, res.content, res.tool_calls) == (R, None, [want("ping", {})])


def test_two_calls_and_a_tag_inside_an_argument() -> None:
    text_arg = {"city": f"say {REQUESTS_END} and <|plamo:end_tool_arguments:plamo|>"}
    out = block(
        request("get_weather", json.dumps(text_arg)),
        request("ping", '{"n": 1, "o": {"a": [1, 2]}}'),
    )
    res = run(f"{R}{END}{out}")
    assert res.tool_calls == [
        want("get_weather", text_arg),
        want("ping", {"n": 1, "o": {"a": [1, 2]}}),
    ]
    assert (res.reasoning, res.content) == (R, None)


def test_a_bad_call_drops_itself_and_keeps_its_sibling() -> None:
    """vLLM drops the whole block for one malformed request; here only that request."""
    res = run(f"{R}{END}{block(request('ping', '[1]'), request('ping', '{}'))}")
    assert res.tool_calls == [want("ping", {})]


def test_a_malformed_block_goes_back_to_the_content_verbatim() -> None:
    bad = f"{REQUESTS}<|plamo:begin_tool_request:plamo|>oops{REQUESTS_END}"
    res = make().parse(TOK.encode(f"{R}{END}Hmm {bad}"), tools=TOOLS, skip_special_tokens=False)
    assert res.tool_calls == []
    assert (res.reasoning, res.content) == (R, f"Hmm {bad}")
    run(f"{R}{END}Hmm {bad}")  # every path agrees


async def cut_by_length(ids: list[int], sse: bool) -> Answer:
    rt = ReasoningRuntime()
    stream = rt.add("r", make(), None, tools=TOOLS, sse=sse)
    for i in range(0, len(ids), 2):
        rt.step([stream.engine_id], ids[i : i + 2], [0, len(ids[i : i + 2])])
    rt.finish("r", "length")
    return await (read_sse(stream) if sse else read_chunks(stream))


@pytest.mark.parametrize("keep", [60, -len(REQUESTS_END + EOT) - 5])
def test_a_call_cut_by_the_end_of_the_output_is_not_returned(keep: int) -> None:
    out = REQUESTS + request("get_weather", '{"city": "Rome"}') + REQUESTS_END
    ids = TOK.encode(f"{R}{END}Checking.{out[:keep]}")
    res = make().parse(ids, tools=TOOLS)
    assert (res.reasoning, res.content, res.tool_calls) == (R, "Checking.", [])
    for at in range(len(ids) + 1):
        assert split_at(make(), None, ids, [at], TOOLS) == (R, "Checking.", []), at
    for sse in (False, True):
        assert anyio.run(cut_by_length, ids, sse) == (R, "Checking.", [])


def test_thinking_off_reads_calls_and_ends_at_the_tag() -> None:
    res = run(f"Sure.{block(request('ping', '{}'))}ignored", enable_thinking=False)
    assert (res.reasoning, res.content, res.tool_calls) == (None, "Sure.", [want("ping", {})])


# ---------------------------------------------------------------------- matrix rows

REASONING = "Two and two make four."
ANSWER = "It is 4."

P_BEGIN = "<|plamo:begin_think:plamo|>"
P_END = "<|plamo:end_think:plamo|>"
P_TOOLS = "<|plamo:begin_tool_requests:plamo|>"
P_EOT = "<|plamo:tag|>"


def test_markers_are_several_tokens() -> None:
    tok = tokenizer(FAMILY_TOKENIZERS["plamo3"])
    for marker in (P_BEGIN, P_END, P_TOOLS):
        assert len(tok.encode(marker)) > 1


def test_reasoning_then_answer() -> None:
    res = fc.split("plamo3", f"{REASONING}{P_END}{ANSWER}")
    assert res.started_in_reasoning
    assert (res.reasoning, res.content) == (REASONING, ANSWER)
    assert "".join(fc.labelled(res, FAMILY_TOKENIZERS["plamo3"], Label.DELIMITER)) == P_END
    # A begin marker repeated inside reasoning is consumed.
    again = fc.split("plamo3", f"{P_BEGIN}{REASONING}{P_END}{ANSWER}")
    assert (again.reasoning, again.content) == (REASONING, ANSWER)


def test_tool_requests_end_reasoning() -> None:
    call = f'{P_TOOLS}<|plamo:begin_tool_request:plamo|>{{"x": 1}}'
    res = fc.split("plamo3", REASONING + call)
    assert (res.reasoning, res.content) == (REASONING, call)
    assert "".join(fc.labelled(res, FAMILY_TOKENIZERS["plamo3"], Label.TOOL)) == P_TOOLS


def test_end_of_turn_ends_reasoning_and_is_dropped_after_content() -> None:
    res = fc.split("plamo3", REASONING + P_EOT)
    assert (res.reasoning, res.content, res.reasoning_ended) == (REASONING, None, True)
    after = fc.split("plamo3", f"{REASONING}{P_END}{ANSWER}{P_EOT}")
    assert after.content == ANSWER


def test_thinking_off_is_all_content() -> None:
    out = f"{REASONING}{P_END}{ANSWER}"
    res = fc.split("plamo3", out, kwargs={"enable_thinking": False})
    assert (res.reasoning, res.content, res.started_in_reasoning) == (None, out, False)


def test_prompt_scan() -> None:
    history = f"<|plamo:msg|>user\nHi{P_EOT}<|plamo:msg|>assistant\n"
    assert fc.scan("plamo3", FAMILY_TOKENIZERS["plamo3"], history + P_BEGIN)
    assert not fc.scan("plamo3", FAMILY_TOKENIZERS["plamo3"], history + P_BEGIN + "x" + P_END)
    assert not fc.scan("plamo3", FAMILY_TOKENIZERS["plamo3"], f"<|plamo:msg|>user\nHi{P_EOT}")
