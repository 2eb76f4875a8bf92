"""The shared runner of the section-style tool calls: DeepSeek (V3-0324, V3.1, V3.2 DSML,
V4 DSML, V4.1 spaced DSML) and Kimi (K2 sections, K3 XTML). A family module declares its
:class:`Family` (parser, tokenizer, prompt, the renderer of its calls and what it writes
around them) and runs :data:`CHECKS` on it; its own quirks stay in its module.

Outputs are assembled by the test from pieces whose meaning it knows: reasoning text, answer
text and calls with known names and arguments, each written in the family's markup by a
renderer here that follows the family's template or encoder (the architectures' docstrings
say which). So the expected calls and text are the test's own, never the code's output.

Properties, per family: ``parse()``, ``TextSplitter`` over any split and the async runtime
over k-token steps give the same text and calls; the calls are those of the complete call
blocks, in order; a call cut by the end of the output is never returned (the calls completed
before it in the same block are); a malformed block goes back to the content verbatim.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import LoadedTokenizer
from reasonspan.runtime.core.labels import TOOL, TOOL_CALL
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import paths
from tests.support.fixtures import tokenizer

Args = dict[str, Any]
Call = tuple[str, Args]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "hourly": {"type": "boolean"},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "note",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "tags": {"type": "array"}},
            },
        },
    },
]


def dumps(args: Args) -> str:
    return json.dumps(args, ensure_ascii=False)


def expected(name: str, args: Args) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


# ---------------------------------------------------------------- renderers (the families'
# templates / encoders, written out from their documentation)


def deepseek_v3(calls: list[Call]) -> str:
    """DeepSeek-V3-0324's chat template: ``function<sep>NAME`` and a fenced JSON object."""
    return (
        "<｜tool▁calls▁begin｜>"
        + "\n".join(
            f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n{dumps(a)}\n```"
            "<｜tool▁call▁end｜>"
            for n, a in calls
        )
        + "<｜tool▁calls▁end｜>"
    )


def deepseek_v31(calls: list[Call]) -> str:
    """DeepSeek-V3.1's chat template: ``NAME<sep>{…}``, calls back to back."""
    return (
        "<｜tool▁calls▁begin｜>"
        + "".join(
            f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{dumps(a)}<｜tool▁call▁end｜>" for n, a in calls
        )
        + "<｜tool▁calls▁end｜>"
    )


def dsml(block: str, space: str = "") -> Callable[[list[Call]], str]:
    """DeepSeek's DSML encoder (encoding_dsv4.py): strings raw with string="true", anything
    else JSON with string="false"; V4.1 writes a space after the DSML token."""
    t = "｜DSML｜" + space

    def param(k: str, v: Any) -> str:
        s, text = ("true", v) if isinstance(v, str) else ("false", json.dumps(v))
        return f'<{t}parameter name="{k}" string="{s}">{text}</{t}parameter>'

    def render(calls: list[Call]) -> str:
        invokes = "\n".join(
            f'<{t}invoke name="{n}">\n'
            + "\n".join(param(k, v) for k, v in a.items())
            + f"\n</{t}invoke>"
            for n, a in calls
        )
        return f"\n\n<{t}{block}>\n{invokes}\n</{t}{block}>"

    return render


def kimi_k2(calls: list[Call]) -> str:
    """Kimi K2's chat template: the name in the id ``functions.NAME:IDX``."""
    return (
        "<|tool_calls_section_begin|>"
        + "".join(
            f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{dumps(a)}"
            "<|tool_call_end|>"
            for i, (n, a) in enumerate(calls)
        )
        + "<|tool_calls_section_end|>"
    )


def kimi_k3(calls: list[Call]) -> str:
    """Kimi K3's XTML: a raw string, or JSON with its type, per argument."""

    def arg(k: str, v: Any) -> str:
        if isinstance(v, str):
            kind, text = "string", v
        else:
            kind = {bool: "boolean", int: "number", list: "array"}[type(v)]
            text = json.dumps(v)
        return f'<|open|>argument key="{k}" type="{kind}"<|sep|>{text}<|close|>argument<|sep|>'

    return (
        "<|open|>tools<|sep|>"
        + "".join(
            f'<|open|>call tool="{n}" index="{i + 1}"<|sep|>'
            + "".join(arg(k, v) for k, v in a.items())
            + "<|close|>call<|sep|>"
            for i, (n, a) in enumerate(calls)
        )
        + "<|close|>tools<|sep|>"
    )


@dataclass(frozen=True)
class Family:
    """One section-style call format on one tokenizer, and what its model writes around it."""

    parser: str
    tok: str
    prompt: str
    render: Callable[[list[Call]], str]
    think: tuple[str, str] = ("", "")
    """What the model writes around its reasoning (empty: the family has none)."""
    answer: tuple[str, str] = ("", "")
    """What it writes around its answer text (K3's response channel)."""
    tail: str = ""
    """What it writes after its calls (K3's message closer)."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    leak: tuple[str, ...] = ()
    """Markup that must never show in the text of a well-formed output."""
    json_arguments: bool = False
    """Arguments are a JSON object (markers inside its strings are text)."""

    def tokenizer(self) -> LoadedTokenizer:
        return tokenizer(self.tok)

    def make(self) -> reasonspan.ReasoningParser:
        return reasonspan.create_parser_sync(self.parser, self.tokenizer(), self.kwargs)

    def prompt_ids(self) -> list[int]:
        return self.tokenizer().encode(self.prompt)


DS_PROMPT = "<｜User｜>Weather?<｜Assistant｜>"
K2_PROMPT = "<|im_user|>user<|im_middle|>Weather?<|im_end|><|im_assistant|>assistant<|im_middle|>"
K3_PROMPT = '<|open|>message role="assistant"<|sep|><|open|>think<|sep|>'

CLOSERS = (
    "<｜tool▁calls▁end｜>",
    "</｜DSML｜function_calls>",
    "</｜DSML｜tool_calls>",
    "</｜DSML｜ calls>",
    "<|tool_calls_section_end|>",
    "<|close|>tools<|sep|>",
)
"""The families' block closers."""

WEATHER: Call = ("get_weather", {"city": "Zürich", "days": 3, "hourly": True})
NOTE: Call = ("note", {"text": 'say "hi" <b> 東京 🙂\n', "tags": ["a", "b"]})


def output(fam: Family, reasoning: str, text: str, calls: list[Call]) -> str:
    out = ""
    if fam.think[1]:
        out += fam.think[0] + reasoning + fam.think[1]
    out += fam.answer[0] + text + fam.answer[1]
    if calls:
        out += fam.render(calls)
    return out + fam.tail


def reasoning_text_and_two_calls(fam: Family) -> None:
    tok = fam.tokenizer()
    out = output(fam, "I need two lookups.", "Let me check.", [WEATHER, NOTE])
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert res.reasoning == ("I need two lookups." if fam.think[1] else None)
    assert res.content == "Let me check."
    assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]
    assert TOOL_CALL in res.labels
    # Without tools the markup is left where it was (the family's old behaviour).
    plain = fam.make().parse(tok.encode(out), fam.prompt_ids())
    assert plain.tool_calls == []


def calls_only(fam: Family) -> None:
    tok = fam.tokenizer()
    out = output(fam, "plan", "", [("note", {})])
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert not res.content  # None, or "" where layout whitespace was trimmed
    assert res.tool_calls == [expected("note", {})]


def cut_in_the_second_call_keeps_the_first(fam: Family) -> None:
    tok = fam.tokenizer()
    full = output(fam, "plan", "Checking.", [WEATHER, NOTE])
    # cut inside the second call's arguments (its text value begins with 'say')
    cut = full[: full.index("say") + 2]
    res = fam.make().parse(tok.encode(cut), fam.prompt_ids(), tools=TOOLS)
    assert res.tool_calls == [expected(*WEATHER)]
    assert res.content == "Checking."
    # cut inside the first call: no call at all, and none of its markup as text
    cut = full[: full.index("Zür") + 2]
    res = fam.make().parse(tok.encode(cut), fam.prompt_ids(), tools=TOOLS)
    assert res.tool_calls == []
    assert res.content == "Checking."


def malformed_block_is_content_verbatim(fam: Family) -> None:
    tok = fam.tokenizer()
    block = fam.render([WEATHER])
    # break the arguments: JSON loses its closing brace; DSML / XTML lose an element closer
    for closer in ("}", "parameter>", "<|close|>argument<|sep|>"):
        at = block.rfind(closer)
        if at >= 0:
            broken = block[:at] + block[at + len(closer) :]
            break
    out = fam.answer[0] + "Checking." + fam.answer[1] + broken
    if fam.think[1]:
        out = "plan" + fam.think[1] + out
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert res.tool_calls == []
    assert res.content is not None and broken.strip() in res.content
    assert TOOL in res.labels and TOOL_CALL not in res.labels


def markers_inside_argument_strings(fam: Family) -> None:
    tok = fam.tokenizer()
    # the family's own call markup, closers included, as text of a string argument (which
    # the tokenizer may even make special tokens). Raw (non-JSON) values cannot hold
    # everything: DSML's value ends at its parameter closer (as in the reference reader) and
    # the block closer ends the block wherever it is (the block then reads as malformed:
    # content verbatim); so does K3's tools closer, and its call closer ends a value.
    inner = fam.render([("note", {"text": "x"})]).strip()
    if not fam.json_arguments:
        for closer in (*CLOSERS, "</｜DSML｜parameter>", "</｜DSML｜ parameter>"):
            inner = inner.replace(closer, "")
        inner = inner.replace("<|close|>call<|sep|>", "")
    args = {"text": "write " + inner + " literally"}
    out = output(fam, "plan", "", [("note", args)])
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert res.tool_calls == [expected("note", args)]


def every_path(fam: Family, text: str) -> reasonspan.ParseResult:
    """``parse()`` of ``text``, checked against every other path (:func:`paths.every_path`)."""
    return paths.every_path(fam.make, fam.prompt_ids(), fam.tokenizer().encode(text), TOOLS)


# ---------------------------------------------------------------- properties

TEXT = st.sampled_from(["Sure. ", "x", "\n", " ", "東京 🙂", "{not a call}", "a < b."])
CALLS = st.lists(
    st.tuples(
        st.sampled_from(["get_weather", "note"]),
        st.dictionaries(
            st.sampled_from(["city", "days", "text"]),
            st.one_of(st.integers(-5, 5), st.text('ab<>"\\\n ', max_size=6)),
            max_size=2,
        ),
    ),
    min_size=1,
    max_size=2,
)


def _stream(fam: Family, ids: list[int], cuts: list[int]) -> tuple[str, str, list[ToolCall]]:
    return paths.split_at(fam.make(), fam.prompt_ids(), ids, cuts, TOOLS)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    reasoning=st.sampled_from(["", "plan", "a <b> c"]),
    pieces=st.lists(st.one_of(TEXT, CALLS), max_size=4),
    cut=st.booleans(),
    data=st.data(),
)
def any_split_and_the_runtime_give_the_parse(
    fam: Family, reasoning: str, pieces: list[Any], cut: bool, data: st.DataObject
) -> None:
    tok = fam.tokenizer()
    out = fam.think[0] + reasoning + fam.think[1] if fam.think[1] else ""
    out += fam.answer[0]
    want: list[ToolCall] = []
    for piece in pieces:
        if isinstance(piece, str):
            out += piece
        else:
            out += fam.render(piece)
            want += [expected(n, a) for n, a in piece]
    ids = tok.encode(out)
    if cut and ids:
        ids = ids[: data.draw(st.integers(0, len(ids)))]
    whole = fam.make().parse(ids, fam.prompt_ids(), tools=TOOLS)
    assert whole.token_ids == ids and len(whole.labels) == len(ids)
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=6))
    r, c, calls = _stream(fam, ids, cuts)
    assert (r, c, calls) == (whole.reasoning or "", whole.content or "", whole.tool_calls)
    k = data.draw(st.sampled_from([1, 3, 8]))
    answer = (r, c, [(t.name, t.arguments) for t in calls])
    for streamed in (False, True):  # calls whole, and their arguments as written
        serve = partial(paths.served, stream_arguments=streamed)  # (chunks, finish "length")
        assert anyio.run(serve, fam.make(), fam.prompt_ids(), ids, k, False, TOOLS) == answer
    if cut:
        # a cut output returns a prefix of the calls, never a half call
        assert calls == want[: len(calls)]
    else:
        assert calls == want
        for marker in fam.leak:
            assert marker not in c and marker not in r


CHECKS: dict[str, Callable[[Family], None]] = {
    "reasoning_text_and_two_calls": reasoning_text_and_two_calls,
    "calls_only": calls_only,
    "cut_in_the_second_call_keeps_the_first": cut_in_the_second_call_keeps_the_first,
    "malformed_block_is_content_verbatim": malformed_block_is_content_verbatim,
    "markers_inside_argument_strings": markers_inside_argument_strings,
    "any_split_and_the_runtime_give_the_parse": any_split_and_the_runtime_give_the_parse,
}
"""Every check a section-style family runs (``pytest.mark.parametrize`` over the names)."""


def section_one_bad_call_keeps_its_siblings(fam: Family) -> None:
    """A DeepSeek JSON section with one call that does not read keeps the others: the same
    section reader as Kimi K2's, one rule for both."""
    block = fam.render([WEATHER, ("note", {"tags": ["x"]}), NOTE])
    bad = block.replace('{"tags": ["x"]}', '{"tags": ["x"}')
    assert bad != block
    res = every_path(fam, fam.think[1] + "Sure." + bad)
    assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]
    assert res.content == "Sure."
