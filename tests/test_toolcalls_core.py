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
from typing import Any

import anyio
import pytest
from fixtures import tokenizer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reasonspan.runtime.labels import CONTENT, TOOL, TOOL_CALL
from reasonspan.runtime.streams import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall

import reasonspan

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
    split = reasonspan.TextSplitter(p, PROMPT, tools=TOOLS)
    r, c, calls = [], [], []
    bounds = [0, *sorted(set(cuts)), len(ids)]
    for a, b in itertools.pairwise(bounds):
        x, y = split.feed(ids[a:b])
        r.append(x)
        c.append(y)
        calls += split.take_tool_calls()
    x, y = split.finish()
    return "".join(r) + x, "".join(c) + y, calls + split.take_tool_calls()


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
