"""olmo3's tool calls: ``<function_calls>`` around Python calls, one per line.

Tokenizers: olmo3's fixture (Qwen2.5's real BPE, on which ``<think>``, ``</think>`` and
``<function_calls>`` are plain text of several tokens, as in the Think tokenizer) and a named
stand-in with Olmo 3 Instruct's tool-call special tokens added
(``qwen-2.5_base_with_olmo3_instruct_special_tokens``; allenai's
olmo-3-tokenizer-instruct-dev README lists them): every test runs on both. Facts: Olmo 3's
chat template writes an assistant's calls between ``<function_calls>`` and
``</function_calls>``; vLLM's ``olmo3`` tool parser (and its unit tests) read Python calls
with keyword arguments, one per line, values Python literals or JSON ``true`` / ``false`` /
``null``, dropping a call that does not read and keeping its siblings. The generation
prompt ends with ``<|im_start|>assistant\\n<think>``.

Outputs are assembled here from known pieces (reasoning, answer text, calls rendered as
Python source by the test), so the expected text and calls are the test's own. Checks go
through ``parse()``, ``TextSplitter`` split at every offset and the runtime (chunks and SSE)
(:func:`tests.support.paths.every_path`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import (
    LoadedTokenizer,
    ParseResult,
    ReasoningParser,
)
from reasonspan.runtime.core.labels import TOOL_CALL
from reasonspan.runtime.core.nesting import MAX_NESTING
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import family_cases as fc
from tests.support import paths
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

# Qwen2.5's real vocabulary, on which <think>, </think> and <function_calls> are plain text,
# as in Olmo 3's Think tokenizer (the Instruct variant's fixture, with its tool-call tokens
# special, is listed in tests/support/fixtures.py).
FIXTURE = "qwen-2.5"

# One call to f(a=V) in each form of the tool-call format architectures/olmo.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = ("<function_calls>f(a=V)</function_calls>",)

OPEN, CLOSE = "<function_calls>", "</function_calls>"
TOKENIZERS = [FAMILY_TOKENIZERS["olmo3"], "qwen-2.5_base_with_olmo3_instruct_special_tokens"]
PROMPT = "<|im_start|>user\nWeather in Zürich?<|im_end|>\n<|im_start|>assistant\n<think>"

Call = tuple[str, dict[str, Any]]
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
WEATHER: Call = ("get_weather", {"city": "Zürich", "days": 3})
NOTE: Call = ("note", {"text": 'say "hi" 東京 🙂\n', "tags": ["a", None, True]})


class Olmo:
    """One tokenizer's parser factory, prompt and ``every_path``."""

    def __init__(self, name: str) -> None:
        self.tok: LoadedTokenizer = tokenizer(name)
        self.prompt = self.tok.encode(PROMPT)

    def make(self) -> ReasoningParser:
        return reasonspan.create_parser_sync("olmo3", self.tok, {})

    def run(self, text: str, prompt: list[int] | None = None) -> ParseResult:
        ids = self.tok.encode(text)
        return paths.every_path(self.make, prompt or self.prompt, ids, TOOLS)

    def run_cut(self, text: str) -> ParseResult:
        """An output the end cut: ``parse()`` against ``TextSplitter`` split at every
        offset (the runtime helper finishes with ``"stop"``, where an open block is the
        model's own text)."""
        ids = self.tok.encode(text)
        whole = self.make().parse(ids, self.prompt, tools=TOOLS)
        want = (whole.reasoning or "", whole.content or "", whole.tool_calls)
        for at in range(len(ids) + 1):
            assert paths.split_at(self.make(), self.prompt, ids, [at], TOOLS) == want, at
        return whole


@pytest.fixture(params=TOKENIZERS, scope="module")
def olmo(request: pytest.FixtureRequest) -> Olmo:
    return Olmo(request.param)


def py(value: Any, json_literals: bool = False) -> str:
    """A value as Python source; ``json_literals`` writes ``true``/``false``/``null``."""
    if json_literals and (value is None or isinstance(value, bool)):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(py(v, json_literals) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {py(v, json_literals)}" for k, v in value.items()) + "}"
    return repr(value)


def block(calls: list[Call], json_literals: bool = False) -> str:
    lines = (
        f"{name}(" + ", ".join(f"{k}={py(v, json_literals)}" for k, v in args.items()) + ")"
        for name, args in calls
    )
    return OPEN + "\n".join(lines) + CLOSE


def expected(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


def test_the_markers_are_text_or_special_tokens_and_matched_either_way() -> None:
    plain, special = (tokenizer(name) for name in TOKENIZERS)
    assert plain.single_token_id(OPEN) is None and len(plain.encode(OPEN)) > 2
    assert special.single_token_id(OPEN) is not None
    assert special.single_token_id(CLOSE) is not None


def test_a_call_after_reasoning(olmo: Olmo) -> None:
    res = olmo.run("I need the weather.</think>Let me check." + block([WEATHER]))
    assert res.reasoning == "I need the weather."
    assert res.content == "Let me check."
    assert res.tool_calls == [expected(*WEATHER)]
    assert TOOL_CALL in res.labels


@pytest.mark.parametrize("json_literals", [False, True])
def test_two_calls_one_per_line_and_text_after(olmo: Olmo, json_literals: bool) -> None:
    res = olmo.run("Two.</think>Sure." + block([WEATHER, NOTE], json_literals) + "Done.")
    assert res.reasoning == "Two."
    assert res.content == "Sure.Done."
    assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]


@pytest.mark.parametrize("before", ["x</think>", "x</think>Sure." + block([NOTE])])
def test_a_block_right_after_another_marker(before: str) -> None:
    # Qwen2.5's BPE (and cl100k's) writes `</think><function_calls>` as `</` `think` `><` …,
    # and two blocks back to back as `…</` `function` `_calls` `><` …: the `<` that begins
    # the block shares a token with the end of the marker before it: the extractor reads
    # the answer bytes of such a split token for an opener (ToolCallExtractor._one), and
    # hands a closer's last token to the next region (_settle)
    olmo = Olmo(TOKENIZERS[0])
    assert b"><" in [olmo.tok.token_bytes[t] for t in olmo.tok.encode(before + OPEN)]
    ids = olmo.tok.encode(before + block([WEATHER]))
    res = olmo.make().parse(ids, olmo.prompt, tools=TOOLS)
    assert res.tool_calls[-1:] == [expected(*WEATHER)]


def test_values_are_the_literals_written_not_the_schemas_types(olmo: Olmo) -> None:
    # a Python literal says its own type: '3' stays a string under an integer property
    res = olmo.run("x</think>\n" + OPEN + "get_weather(city=7, days='3')" + CLOSE)
    assert res.tool_calls == [expected("get_weather", {"city": 7, "days": "3"})]


@pytest.mark.parametrize("bad", ["bad(x=b'z')", "calc(x=1e999)", "f(1)", "f(**k)"])
def test_one_bad_call_keeps_its_siblings(olmo: Olmo, bad: str) -> None:
    body = block([WEATHER]).removesuffix(CLOSE) + "\n" + bad + "\n" + block([NOTE])[len(OPEN) :]
    res = olmo.run("x</think>Sure." + body)
    assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]
    assert res.content == "Sure."


def test_arguments_nested_past_the_bound_drop_their_call_only(olmo: Olmo) -> None:
    # (Here rather than through CALL_TEMPLATES: these values need olmo3's own block, one
    # call per line, with well-formed siblings beside the bad ones.)
    deep, ok = "[" * MAX_NESTING + "1" + "]" * MAX_NESTING, "[" * 99 + "1" + "]" * 99
    body = f"note(tags={deep})\nnote(tags={ok})\nf(a=1e999)\nf(a=0x{'f' * 40})"
    res = olmo.run("x</think>Sure." + OPEN + body + CLOSE)
    value: Any = 1
    for _ in range(99):
        value = [value]
    assert res.tool_calls == [expected("note", {"tags": value}), expected("f", {"a": 16**40 - 1})]


@pytest.mark.parametrize(
    "body",
    [
        "get_weather(city='Zürich'",  # unclosed call
        "[get_weather(city='Zürich')]",  # a list is not Olmo 3's form (vLLM's reader agrees)
        "I would call get_weather here",  # prose
        "bad(x=b'z')",  # its only call does not read
    ],
)
def test_a_malformed_body_goes_back_to_the_content_verbatim(olmo: Olmo, body: str) -> None:
    res = olmo.run("x</think>Checking." + OPEN + body + CLOSE)
    assert res.tool_calls == []
    assert res.content == "Checking." + OPEN + body + CLOSE


def test_without_tools_the_block_stays_in_the_content(olmo: Olmo) -> None:
    out = "x</think>Sure." + block([WEATHER])
    # (special tokens kept in the text: the Instruct tokenizer's markers are special)
    res = olmo.make().parse(olmo.tok.encode(out), olmo.prompt, skip_special_tokens=False)
    assert res.tool_calls == [] and res.content == "Sure." + block([WEATHER])


def test_a_call_cut_by_the_end_of_the_output_is_not_returned(olmo: Olmo) -> None:
    full = "x</think>Checking." + block([WEATHER, NOTE])
    for cut in (full.index("Zür") + 2, full.index("say") + 2, len(full) - 3):
        res = olmo.run_cut(full[:cut])
        assert res.tool_calls == []
        assert res.content == "Checking."


def test_the_prompt_closing_the_think_block_reads_calls_from_the_first_token(olmo: Olmo) -> None:
    prompt = olmo.tok.encode(PROMPT + "</think>")
    assert not olmo.make().is_prompt_in_reasoning(prompt)
    res = olmo.run(block([WEATHER]), prompt)
    assert res.reasoning is None
    assert res.tool_calls == [expected(*WEATHER)]


TEXT = st.sampled_from(["Sure. ", "x", "\n", " ", "東京 🙂", "f(a=1)", "a < b."])
VALUES = st.one_of(
    st.integers(-5, 5), st.booleans(), st.none(), st.text("ab<>\"'\\\n ()", max_size=6)
)
CALLS = st.lists(
    st.tuples(
        st.sampled_from(["get_weather", "note"]),
        st.dictionaries(st.sampled_from(["city", "days", "text"]), VALUES, max_size=2),
    ),
    min_size=1,
    max_size=2,
)


@pytest.mark.parametrize("name", TOKENIZERS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    reasoning=st.sampled_from(["", "plan", "a <b> c"]),
    pieces=st.lists(st.one_of(TEXT, st.tuples(CALLS, st.booleans())), max_size=4),
    cut=st.booleans(),
    data=st.data(),
)
def test_any_split_and_the_runtime_give_the_parse(
    name: str, reasoning: str, pieces: list[Any], cut: bool, data: st.DataObject
) -> None:
    olmo = Olmo(name)
    render: Callable[[list[Call], bool], str] = block
    out = reasoning + "</think>\n"  # (see test_a_block_right_after_the_think_end_marker)
    want: list[ToolCall] = []
    for piece in pieces:
        if isinstance(piece, str):
            out += piece
        else:
            out += render(*piece) + "\n"  # (a block's `>` and the next `<` share a token)
            want += [expected(n, a) for n, a in piece[0]]
    ids = olmo.tok.encode(out)
    if cut:
        ids = ids[: data.draw(st.integers(0, len(ids)))]
    whole = olmo.make().parse(ids, olmo.prompt, tools=TOOLS)
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=6))
    got = paths.split_at(olmo.make(), olmo.prompt, ids, cuts, TOOLS)
    assert got == (whole.reasoning or "", whole.content or "", whole.tool_calls)
    if not cut:
        assert whole.tool_calls == want
        k, sse = data.draw(st.sampled_from([1, 3, 8])), data.draw(st.booleans())
        sent = anyio.run(paths.served, olmo.make(), olmo.prompt, ids, k, sse, TOOLS)
        assert sent == (got[0], got[1], [(c.name, c.arguments) for c in whole.tool_calls])
    else:  # a cut output returns a prefix of the calls, never a half call
        assert whole.tool_calls == want[: len(whole.tool_calls)]


# ---------------------------------------------------------------------- matrix rows


def test_markers_are_several_tokens_and_tokenize_in_context() -> None:
    tok = tokenizer(FAMILY_TOKENIZERS["olmo3"])
    assert tok.single_token_id("<think>") is None and tok.single_token_id("</think>") is None
    ends = {tuple(tok.encode(p + "</think>"))[-3:] for p in ("x", "x ", "x.")}
    assert len(ends) == 3  # "</" "think" ">", " </" …, ".</" …
    starts = {tuple(tok.encode(p + "<think>"))[-3:] for p in ("x", "x ")}
    assert len(starts) == 2  # "<th" "ink" ">" vs " <" "think" ">"
    for before in ("x", "x ", "x.", "x\n"):
        assert fc.texts(fc.split("olmo3", before + "</think>answer")) == (before, "answer")
    assert fc.texts(fc.split("olmo3", "Hi <think>r</think> c")) == ("Hi r", " c")


def test_prompt_start_and_output_start() -> None:
    q = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    assert fc.in_reasoning("olmo3", q + "<think>")
    assert fc.texts(fc.split("olmo3", "plan</think>Hello", prompt=q + "<think>")) == (
        "plan",
        "Hello",
    )
    assert fc.texts(fc.split("olmo3", "<think>plan</think>Hello", prompt=q)) == ("plan", "Hello")
    res = fc.split("olmo3", "<think>still", prompt=q)
    assert fc.texts(res) == ("still", None) and not res.reasoning_ended
    assert fc.texts(fc.split("olmo3", "</think>Hello", prompt=q)) == (None, "Hello")
    closed = q + "<think>\n</think>\n"
    assert not fc.in_reasoning("olmo3", closed)
    assert fc.texts(fc.split("olmo3", "Hello", prompt=closed)) == (None, "Hello")
    # Repeated markers after the answer are text.
    assert fc.texts(fc.split("olmo3", "a</think>b</think>c<think>d")) == ("a", "b</think>c<think>d")


def test_holds_a_partial_marker_until_it_is_decided() -> None:
    parser = fc.parser_for("olmo3")
    tok = parser.tokenizer
    first = parser.stream(tok.encode("plan</"), True)
    assert first.held_token_count == 1
    second = parser.stream(tok.encode("think"), first.is_still_reasoning)
    assert second.held_token_count == 2 and second.is_still_reasoning
    third = parser.stream(tok.encode(">ok"), second.is_still_reasoning)
    assert not third.is_still_reasoning and third.held_token_count == 0


def test_multi_turn_history() -> None:
    history = (
        "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\n<think>old</think>A1<|im_end|>\n"
        "<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n"
    )
    assert fc.in_reasoning("olmo3", history)
    unclosed = history.replace("<think>old</think>A1", "<think>cut off")
    assert not fc.in_reasoning("olmo3", unclosed + "<think>\n</think>\n")


# ---------------------------------------------------------------------- fidelity

# Qwen2.5's vocabulary merges "></": one token ends <think> and begins </think>.
BACK_TO_BACK = [
    fc.Split("empty block", "<think></think>No thoughts here.", None, "No thoughts here."),
    fc.Split("block then start", "<think>a</think><think>", "a", "<think>"),
    fc.Split("newlines", "<think>\n</think>\nHi", "\n", "\nHi"),
]


@pytest.mark.parametrize("case", fc.params(BACK_TO_BACK))
@fc.SETTINGS
@given(data=st.data())
def test_back_to_back_text_markers_both_match(data: st.DataObject, case: fc.Split) -> None:
    fc.check_split(data, "olmo3", case)


def test_the_merged_token_ends_one_marker_and_begins_the_next() -> None:
    parser = fc.parser_for("olmo3")
    tok = parser.tokenizer
    ids = tok.encode("<think></think>No")
    assert b"></" in [tok.token_bytes[t] for t in ids]  # the fixture really merges them
    res = parser.parse(ids)
    # Every token of both markers is consumed; ">No" ends the second and spills "No".
    assert res.delimiter_tokens == len(ids) and res.content == "No"
    assert res.reasoning_ended
    # The prompt scan reads the same pair: a pre-closed block means content.
    assert not parser.is_prompt_in_reasoning(tok.encode("<|im_start|>assistant\n<think></think>"))
    assert parser.is_prompt_in_reasoning(tok.encode("<|im_start|>assistant\n</think><think>"))
