"""The shared runner of the tool-call kinds with raw-text values: Qwen's XML functions
(``xml``), MiniMax-M2's invokes (``xml_invoke``), MiniMax-M3's namespaced elements and GLM's
key/value pairs (``kv``). A family module declares its :class:`Family` (parser, tokenizer,
generation prompt, how its template renders a call, a malformed block) and runs
:data:`CHECKS` on it; its own quirks stay in its module.

Outputs are assembled by the test from pieces whose meaning it knows: each call is written
the way the family's chat template renders it (strings raw, other values as JSON) from
arguments the test chose, so the expected calls are the test's own arguments, typed by the
offered schema (``"3"`` for a string, ``3`` for an integer, …). Properties: any split of
the output (``TextSplitter``) and the async runtime give what ``parse()`` gives; a call cut
by the end of the output is never returned; a malformed body is content, verbatim.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.labels import TOOL_CALL
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import paths
from tests.support.fixtures import tokenizer

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "b": {"type": "boolean"},
        "z": {"type": ["string", "null"]},
        "o": {"type": "object"},
        "a": {"type": "array", "items": {"type": "integer"}},
    },
}
TOOLS = [
    {"type": "function", "function": {"name": "put", "parameters": SCHEMA}},
    {"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}},
]


def raw(value: Any) -> str:
    """A value as the templates write it: strings as they are, everything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def qwen_call(name: str, args: dict[str, Any]) -> str:
    params = "".join(f"<parameter={k}>\n{raw(v)}\n</parameter>\n" for k, v in args.items())
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


def minimax_call(name: str, args: dict[str, Any]) -> str:
    params = "".join(f'<parameter name="{k}">{raw(v)}</parameter>\n' for k, v in args.items())
    return f'<minimax:tool_call>\n<invoke name="{name}">\n{params}</invoke>\n</minimax:tool_call>'


def glm45_call(name: str, args: dict[str, Any]) -> str:
    pairs = "".join(
        f"<arg_key>{k}</arg_key>\n<arg_value>{raw(v)}</arg_value>\n" for k, v in args.items()
    )
    return f"<tool_call>{name}\n{pairs}</tool_call>"


def glm47_call(name: str, args: dict[str, Any]) -> str:
    pairs = "".join(
        f"<arg_key>{k}</arg_key><arg_value>{raw(v)}</arg_value>" for k, v in args.items()
    )
    return f"<tool_call>{name}{pairs}</tool_call>"


NS = "]<]minimax[>["
"""MiniMax-M3's namespace token, leading every tag of its call blocks."""


def _m3_xml(value: Any) -> str:
    """MiniMax-M3's ``to_xml`` macro: mappings as elements (None left out), lists as
    ``<item>`` elements, booleans as JSON, anything else as its text."""
    if isinstance(value, dict):
        return "".join(
            f"{NS}<{k}>{_m3_xml(v)}{NS}</{k}>" for k, v in value.items() if v is not None
        )
    if isinstance(value, list):
        return "".join(f"{NS}<item>{_m3_xml(v)}{NS}</item>" for v in value)
    if value is None:
        return ""
    return json.dumps(value) if isinstance(value, bool) else str(value)


def m3_call(name: str, args: dict[str, Any]) -> str:
    return (
        f'{NS}<tool_call>\n{NS}<invoke name="{name}">{_m3_xml(args)}{NS}</invoke>\n{NS}</tool_call>'
    )


def m3_expect(value: Any) -> Any:
    """What M3's rendering keeps of a value: None left out of mappings, an empty item for
    None in a list (its text is empty)."""
    if isinstance(value, dict):
        return {k: m3_expect(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return ["" if v is None else m3_expect(v) for v in value]
    return value


def same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Family:
    """One XML-like call format on one tokenizer: how a template writes its calls."""

    parser: str
    tokenizer: str
    prompt: str
    """The generation prompt (the template's end of the prompt)."""
    reasoning: str
    """A reasoning block as the model writes it after that prompt, text ``plan``."""
    render: Callable[[str, dict[str, Any]], str]
    marker: str
    """The region's open marker (never in the content of a parsed call)."""
    malformed: str
    """A call block of the family that does not read as a call (it stays content)."""
    expect: Callable[[Any], Any] = same
    """The arguments a call of the family carries for the test's arguments."""
    opener: str = ""
    """The whole open marker where it is more than ``marker`` (M3's namespace token)."""


def setup(f: Family) -> tuple[reasonspan.LoadedTokenizer, list[int]]:
    """The family's tokenizer and its generation prompt's ids."""
    tok = tokenizer(f.tokenizer)
    return tok, tok.encode(f.prompt)


def make(f: Family) -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync(f.parser, tokenizer(f.tokenizer))


def canonical(value: Any) -> str:
    """Canonical JSON: tells ``3`` from ``3.0``, ``"3"`` and ``true``."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def args_of(calls: list[ToolCall]) -> list[tuple[str, str]]:
    """Each call's name and canonical arguments."""
    return [(c.name, canonical(json.loads(c.arguments))) for c in calls]


# ------------------------------------------------------------------ typed values

TYPED = {
    "s": "3",
    "n": 3,
    "x": 1.5e-07,
    "b": False,
    "z": None,
    "o": {"deep": {"list": [1, "two", None, True]}, "e": 2.5e20},
    "a": [1, -2, 3],
}


def values_typed_from_the_schema(f: Family) -> None:
    tok, prompt = setup(f)
    out = f.reasoning + "Sure.\n" + f.render("put", TYPED) + "\n" + f.render("ping", {})
    res = make(f).parse(tok.encode(out), prompt, tools=TOOLS)
    assert args_of(res.tool_calls) == [("put", canonical(f.expect(TYPED))), ("ping", "{}")]
    assert res.content == "Sure."
    assert (res.reasoning or "") == ("plan" if f.reasoning else "")


def text_values_that_look_typed_stay_text(f: Family) -> None:
    """A string property keeps ``"3"``, ``"true"``, ``"null"`` and JSON-looking text;
    whitespace inside a value is the value's."""
    tok, prompt = setup(f)
    for text in ["3", "true", "null", '{"a": 1}', "  two  spaces  ", "1e5"]:
        out = f.reasoning + f.render("put", {"s": text})
        res = make(f).parse(tok.encode(out), prompt, tools=TOOLS)
        assert args_of(res.tool_calls) == [("put", canonical({"s": text}))], text


def python_literals_and_undeclared_arguments(f: Family) -> None:
    """Jinja's ``|string`` writes Python's ``True``; an argument the schema does not
    declare is JSON when it reads as JSON, else text."""
    tok, prompt = setup(f)
    out = f.reasoning + f.render("put", {"b": "True", "extra": "[1, 2]", "other": "hi"})
    res = make(f).parse(tok.encode(out), prompt, tools=TOOLS)
    want = {"b": True, "extra": [1, 2], "other": "hi"}
    assert args_of(res.tool_calls) == [("put", canonical(want))]


# ------------------------------------------------------------------ markup inside values


def markers_inside_a_value_are_text(f: Family) -> None:
    tok, prompt = setup(f)
    text = f"wrap calls in {f.marker} and {f.marker.replace('<', '</')}; more text"
    for extra in ["", " see </parameter> and </function> and <arg_key>"]:
        args = {"s": text + extra, "n": 1}
        out = f.reasoning + f.render("put", args) + "after"
        res = make(f).parse(tok.encode(out), prompt, tools=TOOLS)
        assert args_of(res.tool_calls) == [("put", canonical(f.expect(args)))]
        assert res.content == "after"


# ------------------------------------------------------------------ truncated, malformed


def truncated_call_is_dropped(f: Family) -> None:
    tok, prompt = setup(f)
    full = f.render("put", {"s": "Paris", "n": 3})
    ids_before = tok.encode(f.reasoning + "Checking.\n")
    call_ids = tok.encode(full)
    opener = f.opener or f.marker
    for keep in range(1, len(call_ids)):
        res = make(f).parse(ids_before + call_ids[:keep], prompt, tools=TOOLS)
        cut = tok.decode(call_ids[:keep])
        assert res.tool_calls == [], cut
        if opener.startswith(cut) and cut != opener:
            # the output ends inside a several-token opener: those tokens never became
            # a marker, so they are the answer's text
            assert res.content == "Checking.\n" + cut
        else:
            assert res.content == "Checking.", cut


def malformed_body_is_content_verbatim(f: Family, after: str) -> None:
    tok, prompt = setup(f)
    out = f.reasoning + f.malformed + after
    res = make(f).parse(tok.encode(out), prompt, tools=TOOLS)
    assert res.tool_calls == []
    assert res.content == f.malformed + after


# ------------------------------------------------------------------ any split, runtime

VALUES: dict[str, st.SearchStrategy[Any]] = {
    "s": st.sampled_from(
        ["3", "true", "x </tool_call> y", "a </parameter> b", "<arg_key>k", "  pad  ", "多 🙂\nz"]
    ),
    "n": st.integers(-(10**6), 10**6),
    "x": st.sampled_from([0.5, -2.25, 1e-05, 3e20]),
    "b": st.booleans(),
    "z": st.one_of(st.none(), st.just("null-ish")),
    "o": st.dictionaries(st.sampled_from(["k", "deep"]), st.integers(0, 3), max_size=2),
    "a": st.lists(st.integers(-3, 3), max_size=3),
}
ARGS = st.fixed_dictionaries({}, optional=VALUES)
TEXT = st.sampled_from(["Sure. ", "x", "\n", " ", "東京 🙂", "<b>bold</b>", "a < b"])


@dataclass
class Out:
    ids: list[int]
    calls: list[tuple[str, str]]
    """The test's own calls, in order (canonical JSON arguments)."""


@st.composite
def outputs(draw: st.DrawFn, f: Family) -> Out:
    tok = tokenizer(f.tokenizer)
    text = draw(st.sampled_from(["", f.reasoning]))
    calls: list[tuple[str, str]] = []
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            text += draw(TEXT)
        else:
            args = draw(ARGS)
            text += f.render("put", args)
            calls.append(("put", canonical(f.expect(args))))
    return Out(tok.encode(text), calls)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def any_split_and_the_runtime_give_the_parse(f: Family, data: st.DataObject) -> None:
    _, prompt = setup(f)
    out = data.draw(outputs(f))
    ids = out.ids
    cut = data.draw(st.booleans())
    if cut and ids:
        ids = ids[: data.draw(st.integers(0, len(ids)))]
    whole = make(f).parse(ids, prompt, tools=TOOLS)
    assert whole.token_ids == ids and len(whole.labels) == len(ids)
    if not cut:
        assert args_of(whole.tool_calls) == out.calls
        assert bool(out.calls) == (TOOL_CALL in whole.labels)
    else:
        # a cut output returns a prefix of the test's calls, never a half call ...
        got = args_of(whole.tool_calls)
        if got != out.calls[: len(got)]:
            # ... except a cut right after a </tool_call> written inside a GLM value: that
            # reads as GLM's "last </arg_value> missing" (the corpus' regression fixture);
            # only the finish reason could tell them apart (kv_calls module doc).
            assert f.parser.startswith("glm") and got[:-1] == out.calls[: len(got) - 1]
            assert tokenizer(f.tokenizer).decode(ids).endswith("</tool_call>")
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=8))
    r, c, calls = paths.split_at(make(f), prompt, ids, cuts, TOOLS)
    assert (r, c) == (whole.reasoning or "", whole.content or "")
    assert calls == whole.tool_calls
    k = data.draw(st.sampled_from([1, 3, 1000]))
    for streamed in (False, True):  # calls whole, and their arguments as written
        serve = functools.partial(
            paths.served, stream_arguments=streamed
        )  # (chunks, finish "length")
        r, c, got = anyio.run(serve, make(f), prompt, ids, k, False, TOOLS)
        assert (r, c) == (whole.reasoning or "", whole.content or "")
        assert got == [(t.name, t.arguments) for t in whole.tool_calls]


CHECKS: dict[str, Callable[[Family], None]] = {
    "values_typed_from_the_schema": values_typed_from_the_schema,
    "text_values_that_look_typed_stay_text": text_values_that_look_typed_stay_text,
    "python_literals_and_undeclared_arguments": python_literals_and_undeclared_arguments,
    "markers_inside_a_value_are_text": markers_inside_a_value_are_text,
    "truncated_call_is_dropped": truncated_call_is_dropped,
    "malformed_body_is_content_verbatim": functools.partial(
        malformed_body_is_content_verbatim, after=""
    ),
    "malformed_body_then_text_is_content_verbatim": functools.partial(
        malformed_body_is_content_verbatim, after=" and then the answer"
    ),
    "any_split_and_the_runtime_give_the_parse": any_split_and_the_runtime_give_the_parse,
}
"""Every check a family of these kinds runs (``pytest.mark.parametrize`` over the names)."""
