"""cohere_command4's tool calls: Command 3's actions, as Command 4's template lays them out.

Tokenizer: the named stand-in shared with cohere_command3,
``deepseek-v3_base_with_cohere_special_tokens`` (DeepSeek-V3's real BPE plus Cohere's
documented special tokens). Facts: Cohere's melody ``cmd4-hf.jinja`` renders an assistant's
calls as ``<|START_ACTION|>[\\n\\n    {"tool_call_id": "0", "tool_name": NAME, "parameters":
{…}},\\n\\n    {…}\\n\\n]<|END_ACTION|>`` after its ``<|START_THINKING|>`` plan (or
``<|START_THINKING|><|END_THINKING|>`` with reasoning off, which the generation prompt
then holds), and wraps answers in ``<|START_TEXT|>`` … ``<|END_TEXT|>``. The body is the one
cohere_command3 reads (tests/families/test_cohere_command3.py holds the shared cases; the
helpers here come from it), so this file checks Command 4's own layout and wrapper through
every path (:func:`tests.support.paths.every_path`).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import ParseResult, ReasoningParser
from reasonspan.runtime.toolcalls import ToolCall
from tests.families.test_cohere_command3 import (
    CALLS,
    CLOSE,
    NOT_THINKING,
    NOTE,
    OPEN,
    TEXT,
    THINKING,
    TOK,
    TOOLS,
    WEATHER,
    Call,
    expected,
)
from tests.support import family_cases as fc
from tests.support import paths

# Cohere's fixture, shared with cohere_command3: tests/families/test_cohere_command3.py
# declares its tokens.
FIXTURE = "deepseek-v3_base_with_cohere_special_tokens"

# One call to f(a=V) in each form of the tool-call format architectures/cohere.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it); the same format as cohere_command3's.
CALL_TEMPLATES = (
    '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {"a": V}}]'
    "<|END_ACTION|>",
)

FAMILY = "cohere_command4"


def make() -> ReasoningParser:
    return reasonspan.create_parser_sync(FAMILY, TOK, {})


def action(calls: list[Call]) -> str:
    """cmd4-hf.jinja: each action after a blank line, the list closed after another."""
    items = (
        f'\n\n    {{"tool_call_id": "{i}", "tool_name": "{name}", "parameters": '
        f"{json.dumps(args, ensure_ascii=False)}}}"
        for i, (name, args) in enumerate(calls)
    )
    return OPEN + "[" + ",".join(items) + "\n\n]" + CLOSE


def run(text: str, prompt: list[int] = THINKING) -> ParseResult:
    return paths.every_path(make, prompt, TOK.encode(text), TOOLS)


def test_two_calls_in_command_4s_layout() -> None:
    res = run("I will check two things.<|END_THINKING|>" + action([WEATHER, NOTE]))
    assert res.reasoning == "I will check two things."
    assert res.content is None
    assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]


def test_reasoning_off_reads_the_action_from_the_first_token() -> None:
    assert not make().is_prompt_in_reasoning(NOT_THINKING)
    res = run(action([WEATHER]), NOT_THINKING)
    assert res.reasoning is None
    assert res.tool_calls == [expected(*WEATHER)]


def test_an_answer_in_the_text_wrapper_then_an_action() -> None:
    res = run("plan<|END_THINKING|><|START_TEXT|>Checking.<|END_TEXT|>" + action([NOTE]))
    assert (res.reasoning, res.content) == ("plan", "Checking.")
    assert res.tool_calls == [expected(*NOTE)]


def test_a_malformed_action_goes_back_to_the_content_verbatim() -> None:
    broken = action([WEATHER]).replace("\n\n]", "\n\n")
    res = run("plan<|END_THINKING|>" + broken)
    assert res.tool_calls == []
    assert res.content == broken


def test_an_action_cut_by_the_end_of_the_output_is_not_returned() -> None:
    full = "plan<|END_THINKING|>" + action([WEATHER, NOTE])
    ids = TOK.encode(full[: full.index("say") + 2])
    whole = make().parse(ids, THINKING, tools=TOOLS)
    assert whole.tool_calls == [] and whole.reasoning == "plan" and not whole.content
    for at in range(len(ids) + 1):  # (the runtime helper finishes with "stop": not here)
        got = paths.split_at(make(), THINKING, ids, [at], TOOLS)
        assert got == ("plan", "", []), at


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plan=st.sampled_from(["", "plan"]),
    pieces=st.lists(st.one_of(TEXT, CALLS), max_size=4),
    cut=st.booleans(),
    data=st.data(),
)
def test_any_split_and_the_runtime_give_the_parse(
    plan: str, pieces: list[Any], cut: bool, data: st.DataObject
) -> None:
    out = plan + "<|END_THINKING|>"
    want: list[ToolCall] = []
    for piece in pieces:
        if isinstance(piece, str):
            out += "<|START_TEXT|>" + piece + "<|END_TEXT|>"
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
    assert whole.tool_calls == want
    k, sse = data.draw(st.sampled_from([1, 3, 8])), data.draw(st.booleans())
    sent = anyio.run(paths.served, make(), THINKING, ids, k, sse, TOOLS)
    assert sent == (got[0], got[1], [(c.name, c.arguments) for c in whole.tool_calls])


# ---------------------------------------------------------------------- fidelity

COHERE_Q = "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>q<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|>"


@fc.SETTINGS
@given(data=st.data())
def test_whitespace_after_the_openers_is_trimmed(data: st.DataObject) -> None:
    case = fc.Split(
        "openers",
        "plan <|END_THINKING|>\n<|START_TEXT|>\nHi<|END_TEXT|>",
        "plan ",
        "Hi",
        COHERE_Q + "<|CHATBOT_TOKEN|><|START_THINKING|>",
    )
    fc.check_split(data, "cohere_command4", case)
