"""The shared tool-call extractor, on Qwen3's real tokenizer (Hermes JSON calls).

Outputs are assembled by the test from pieces whose meaning the test knows (reasoning
text, answer text, calls with known names and arguments), so the expected calls and text
are the test's own. The properties: ``parse()``, ``TextSplitter`` over any split and the
async runtime over any k-token steps give the same labels, text and calls; every token is
labelled once; a call cut by the end of the output is never returned; a malformed call
body goes back to the content verbatim.
"""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.labels import CONTENT, TOOL, TOOL_CALL
from reasonspan.runtime.core.tool_format import ToolFormat
from reasonspan.runtime.parser import registry
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
from tests.runtime.test_fuzz_paths import _kwargs, _parser, parsed, runtime_paths, split
from tests.support.fixtures import tokenizer
from tests.support.hostile import CALLS
from tests.support.paths import every_path, gather, split_at

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
    assert ids.count(TOK.single_token_id("</tool_call>")) == 2
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


def _stream(
    p: reasonspan.ReasoningParser, ids: list[int], cuts: list[int]
) -> tuple[str, str, list[ToolCall]]:
    return split_at(p, PROMPT, ids, cuts, TOOLS)


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
    r, c, calls = _stream(parser(), ids, cuts)
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
    first_close = ids.index(TOK.single_token_id("</tool_call>"))
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


def _trims_gaps(fmt: ToolFormat | None, family: str) -> bool:
    # Llama 4: text after ``<|python_end|>`` still loses the call (a limit of its own,
    # worked on apart from this one); its bare ``[`` list runs to the end of the output.
    return fmt is not None and fmt.trim_gaps and bool(fmt.close) and family != "llama4_pythonic"


# Read from each family's class, so that collecting builds no parser; ``declared`` reads
# its format from the checkpoint, and the fixture's declaration trims.
GAP_FAMILIES = [
    (f, k)
    for f in sorted(CALLS)
    for k in _kwargs(f)
    if f == "declared" or _trims_gaps(registry.get_parser_class(f).spec.tool_calls, f)
]
"""Every family whose calls have a close marker (text can follow them) and whose format
trims the whitespace around them (``ToolFormat.trim_gaps``)."""


def test_the_gap_families_are_the_parsers_that_trim() -> None:
    computed = {
        (f, k) for f in CALLS for k in _kwargs(f) if _trims_gaps(_parser(f, k).spec.tool_calls, f)
    }
    assert computed == set(GAP_FAMILIES)


@pytest.mark.parametrize(("family", "kwargs"), GAP_FAMILIES)
def test_every_trimming_family_keeps_one_separator(family: str, kwargs: str) -> None:
    """Each family's own call markup between two answer texts, through every path: the
    text before the call (as the family gives it for the same output without the call),
    one separator, the text after."""
    p = _parser(family, kwargs)
    end = p.tokenizer.decode(p.end_marker_token_ids()) if p.spec.end else ""
    prefix = "Hmm." + end if end else ""
    before = parsed(p, p.tokenizer.encode(prefix + "Before."))[1]
    rng = random.Random(family + kwargs)
    for template in CALLS[family]:
        call_text = template.replace("V", "[1]")
        for ws_before, ws_after, sep in [
            ("\n\n", "\n\n", "\n\n"),
            (" ", "\n", " "),
            ("", "\n", "\n"),
            ("\n", "", "\n"),
        ]:
            text = prefix + "Before." + ws_before + call_text + ws_after + "After."
            ids = p.tokenizer.encode(text)
            want = parsed(p, ids)
            assert want[1] == before + sep + "After.", (template, text)
            assert len(want[2]) == 1, (template, text)
            assert split(p, ids, rng) == want, text
            ((chunks, sse),) = anyio.run(runtime_paths, p, [ids], rng.randrange(1 << 30))
            assert chunks == want, ("chunks", text)
            assert sse == want, ("sse", text)
