"""granite: plain-text phrases matched on token bytes, on a real GPT-2-style BPE (Qwen2.5's,
plus Granite's role tokens and ``<|tool_call|>``, which are special in Granite; the phrases
are not), and its tool calls: ``<|tool_call|>`` then a JSON list of
``{"name", "arguments"}`` objects to the end of the output (the Granite 3.x template's
system prompt; vLLM's granite parser, llama.cpp's granite handler). The tool-call cases
build every expected call and text from known pieces and check ``parse()``,
``TextSplitter`` at every offset and random offsets, and the runtime (chunks and SSE)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

import reasonspan
from reasonspan import InvalidOptionError, Label, ReasoningParser
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import family_cases as fc
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import Answer, every_path, read_chunks, split_at

# Granite: only its role tokens are special; the thinking phrases are plain text.
FIXTURE = "qwen-2.5_base_with_granite_special_tokens"
ADDED_TOKENS = (
    "<|start_of_role|>",
    "<|end_of_role|>",
    "<|end_of_text|>",
    "<|tool_call|>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# thinking).
KWARGS = [{}, {"thinking": True}]

# One call to f(a=V) in each form of the tool-call format architectures/granite.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '<|tool_call|>[{"name": "f", "arguments": {"a": V}}]',
    '<tool_call> [{"name": "f", "arguments": {"a": V}}]',
)

TOK = tokenizer(FAMILY_TOKENIZERS["granite"])
R, C, D, T = (int(x) for x in (Label.REASONING, Label.CONTENT, Label.DELIMITER, Label.TOOL))
START, END = "Here is my thought process:", "Here is my response:"


def parser(**kwargs: object) -> ReasoningParser:
    return reasonspan.create_parser_sync("granite", TOK, kwargs)


THINKING = parser(thinking=True)


def pieces(text: str) -> list[bytes]:
    return [TOK.token_bytes[t] for t in TOK.encode(text)]


def stream_one_by_one(p: ReasoningParser, ids: list[int], start: bool) -> tuple[bytes, list[int]]:
    """Labels and held counts, one token per delta, then finish()."""
    p.reset()
    labels = bytearray()
    held: list[int] = []
    state = start
    for t in ids:
        d = p.stream([t], state)
        state = d.is_still_reasoning
        labels += d.labels
        held.append(d.held_token_count)
    labels += p.finish(state).labels
    return bytes(labels), held


def test_phrases_are_plain_text_in_this_vocabulary() -> None:
    for phrase in (START, END, "Here's my thought process:", "Here's my response:"):
        assert TOK.single_token_id(phrase) is None
        assert len(TOK.encode(phrase)) > 3


@pytest.mark.parametrize(
    ("before", "first_piece"),
    [("", b"Here"), ("Sure. ", b" Here"), ("Sure.", b".Here"), ("Sure:\n", b"Here")],
)
def test_the_start_phrase_tokenizes_differently_in_context_and_is_matched(
    before: str, first_piece: bytes
) -> None:
    text = f"{before}{START}\nLet me count.\n\n{END}\nFour."
    assert first_piece in pieces(text)  # the tokenizer really merged the neighbour
    res = THINKING.parse(TOK.encode(text))
    assert res.reasoning == "\nLet me count.\n\n"
    assert res.content == before + "\nFour."
    assert res.reasoning_ended


def test_at_least_two_tokenizations_of_one_phrase_are_both_matched() -> None:
    # The same phrase, three contexts: its own token ids differ, the split does not.
    texts = [f"{START}\nA{END}\nB", f"Ok. {START}\nA{END}\nB", f"Ok.{START}\nA{END}\nB"]
    start_ids = set()
    for text in texts:
        ids = TOK.encode(text)
        res = THINKING.parse(ids)
        first_delim = bytes(res.labels).index(D)
        start_ids.add(tuple(ids[first_delim : first_delim + 6]))
        assert res.reasoning == "\nA"
        assert (res.content or "").endswith("\nB")
    assert len(start_ids) >= 2


def test_marker_ending_inside_a_merged_token_spills_the_rest() -> None:
    # ":\n\n" and ":**" are single tokens: the phrase ends inside them.
    text = f"{START}\n\nthink{END}**Bold**"
    assert b":\n\n" in pieces(text) and b":**" in pieces(text)
    res = THINKING.parse(TOK.encode(text))
    assert res.reasoning == "\n\nthink"
    assert res.content == "**Bold**"


def test_heres_variants() -> None:
    res = THINKING.parse(TOK.encode("Here's my thought process: hmm. Here's my response: ok"))
    # The space merged into " Here" is text before the phrase: it stays in reasoning.
    assert res.reasoning == " hmm. "
    assert res.content == " ok"


def expected_labels(text: str, ids: list[int]) -> bytes:
    """An oracle from byte offsets: a token overlapping a phrase is a delimiter, one between
    the phrases is reasoning, any other is content (independent of the machine)."""
    raw = text.encode()
    s0 = raw.index(START.encode())
    s1 = s0 + len(START)
    e0 = raw.index(END.encode(), s1)
    e1 = e0 + len(END)
    out = bytearray()
    pos = 0
    for t in ids:
        a, pos = pos, pos + len(TOK.token_bytes[t])
        if (a < s1 and pos > s0) or (a < e1 and pos > e0):
            out.append(D)
        else:
            out.append(R if s1 <= a < e0 else C)
    return bytes(out)


@pytest.mark.parametrize(
    "text",
    [
        f"{START}\nI add two and two.\n\n{END}\nFour.",
        f"Well. {START} a b c.{END}**Four**",
        f"x\n{START}\n\nsum\n{END}\n\nFour.",
    ],
)
def test_labels_match_an_offset_oracle(text: str) -> None:
    ids = TOK.encode(text)
    res = THINKING.parse(ids)
    assert res.labels == expected_labels(text, ids)
    assert stream_one_by_one(THINKING, ids, False)[0] == res.labels
    assert res.reasoning_tokens == res.labels.count(R) > 0
    assert res.reasoning_ended


def test_hold_back_releases_a_phrase_that_breaks_off() -> None:
    # " Here is my" may begin the phrase: held until " favourite" breaks it.
    text = "Look. Here is my favourite."
    ids = TOK.encode(text)
    labels, held = stream_one_by_one(THINKING, ids, False)
    assert labels == bytes([C]) * len(ids)
    assert max(held) == 3  # " Here", " is", " my"
    assert held[-1] == 0
    assert THINKING.parse(ids).content == text


def test_hold_back_across_deltas_decides_the_same_as_parse() -> None:
    ids = TOK.encode(f"Intro. {START}\nr1 r2\n{END} done")
    whole = THINKING.parse(ids)
    for cut in range(len(ids) + 1):
        THINKING.reset()
        a = THINKING.stream(ids[:cut], False)
        b = THINKING.stream(ids[cut:], a.is_still_reasoning)
        c = THINKING.finish(b.is_still_reasoning)
        assert a.token_ids + b.token_ids + c.token_ids == ids
        assert a.labels + b.labels + c.labels == whole.labels, cut


def test_truncated_after_the_start_phrase_is_reasoning() -> None:
    res = THINKING.parse(TOK.encode(f"{START}\nStill thinking"))
    assert res.reasoning == "\nStill thinking"
    assert res.content is None
    assert not res.reasoning_ended


def test_no_phrase_is_content() -> None:
    text = "Just an answer, no thoughts."
    res = THINKING.parse(TOK.encode(text))
    assert res.content == text
    assert res.reasoning is None


def test_tool_call_ends_reasoning() -> None:
    call = '<|tool_call|>[{"name": "f", "arguments": {}}]'
    res = THINKING.parse(TOK.encode(f"{START} need a tool{call}"))
    assert res.reasoning == " need a tool"
    assert res.content == call
    assert res.labels[len(TOK.encode(f"{START} need a tool"))] == T


def test_phrases_are_parsed_by_default() -> None:
    """A user who picked the granite parser gets the phrases parsed, as other engines do."""
    p = parser()
    assert p.thinking_enabled
    assert not p.default_reasoning  # nothing is prefilled: the output starts in content
    res = p.parse(TOK.encode(f"{START} x {END} y"))
    assert (res.reasoning, res.content) == (" x ", " y")
    assert res.labels == THINKING.parse(TOK.encode(f"{START} x {END} y")).labels


def test_thinking_false_keeps_everything_as_content_without_holding() -> None:
    p = parser(thinking=False)
    assert not p.thinking_enabled
    assert p.machine.vectorizable  # no text markers compiled: nothing is ever held
    text = f"{START} x {END} y"
    ids = TOK.encode(text)
    labels, held = stream_one_by_one(p, ids, p.default_reasoning)
    assert labels == bytes([C]) * len(ids)
    assert not any(held)
    assert p.parse(ids).content == text


def test_only_the_templates_own_switch_turns_thinking_off() -> None:
    assert not parser(thinking=False).thinking_enabled
    assert parser(enable_thinking=False).thinking_enabled  # not Granite's switch
    with pytest.raises(InvalidOptionError):
        parser(thinking="yes")


GRANITE_PROMPT = (
    "<|start_of_role|>system<|end_of_role|>You are Granite. Write your thoughts after "
    f"'{START}' and write your response after '{END}' for each user query.<|end_of_text|>\n"
    "<|start_of_role|>user<|end_of_role|>{user}<|end_of_text|>\n"
    "<|start_of_role|>assistant<|end_of_role|>{prefill}"
)


@pytest.mark.parametrize(
    ("user", "prefill", "expected"),
    [
        ("What is 2+2?", "", False),
        # A user quoting the start phrase is behind the assistant's turn start.
        (f"Begin with '{START}' please", "", False),
        ("What is 2+2?", f"{START}\n", True),
        ("What is 2+2?", f"{START}\nok\n{END}\n", False),
    ],
)
def test_prompt_scan_is_scoped_to_the_assistant_turn(
    user: str, prefill: str, expected: bool
) -> None:
    prompt = TOK.encode(GRANITE_PROMPT.format(user=user, prefill=prefill))
    assert THINKING.is_prompt_in_reasoning(prompt) is expected
    assert parser().is_prompt_in_reasoning(prompt) is expected
    assert parser(thinking=False).is_prompt_in_reasoning(prompt) is False


def test_text_splitter_one_token_at_a_time_matches_parse() -> None:
    ids = TOK.encode(f"Sure.{START}\n\nthink\n{END}:** done")
    whole = THINKING.parse(ids)
    split = reasonspan.TextSplitter(THINKING)
    r = c = ""
    for t in ids:
        a, b = split.feed([t])
        r, c = r + a, c + b
    a, b = split.finish()
    assert (r + a, c + b) == (whole.reasoning, whole.content)
    assert whole.reasoning == "\n\nthink\n"
    assert whole.content == "Sure.:** done"


# ---------------------------------------------------------------------- tool calls

TOOL_CALL = "<|tool_call|>"
TURN = TOK.encode("<|start_of_role|>user<|end_of_role|>Weather?<|end_of_text|>\n")
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
    {"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}},
]
WEATHER = {"city": "Boston", "days": 3}


def thinking() -> ReasoningParser:
    return parser(thinking=True)


def calls_text(*calls: tuple[str, dict[str, Any]]) -> str:
    """A block of calls as the Granite template asks for it: the token, then a JSON list."""
    return TOOL_CALL + json.dumps([{"name": n, "arguments": a} for n, a in calls])


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


def test_the_tool_call_token_is_one_token() -> None:
    assert TOK.single_token_id(TOOL_CALL) is not None


def test_a_call_after_the_response_phrase() -> None:
    out = f"{START}\nI need the weather.\n{END}\nLet me check.\n" + calls_text(
        ("get_weather", WEATHER)
    )
    res = every_path(thinking, TURN, TOK.encode(out), TOOLS)
    assert res.reasoning == "\nI need the weather.\n"
    assert res.content == "\nLet me check."
    assert res.tool_calls == [call("get_weather", WEATHER)]


def test_a_call_right_after_the_thoughts_ends_them() -> None:
    out = f"{START}\nI need the weather." + calls_text(("get_weather", WEATHER))
    res = every_path(thinking, TURN, TOK.encode(out), TOOLS)
    assert res.reasoning == "\nI need the weather."
    assert not res.content
    assert res.tool_calls == [call("get_weather", WEATHER)]


def test_two_calls_in_the_list() -> None:
    args = {"city": "Zürich 🙂", "days": 1}
    out = calls_text(("get_weather", args), ("now", {}))
    res = every_path(parser, TURN, TOK.encode(out), TOOLS)
    assert res.reasoning is None and not res.content
    assert res.tool_calls == [call("get_weather", args), call("now", {})]


def test_thinking_off_the_phrases_are_content_and_calls_are_read() -> None:
    text = f"{START} x {END} y "
    out = text + calls_text(("now", {}))
    res = every_path(lambda: parser(thinking=False), TURN, TOK.encode(out), TOOLS)
    assert res.reasoning is None
    assert res.content == text.rstrip()
    assert res.tool_calls == [call("now", {})]


@pytest.mark.parametrize(
    "bad",
    [
        TOOL_CALL + "not json",
        TOOL_CALL + '[{"arguments": {}}]',  # no name
        TOOL_CALL + '[{"name": "now", "arguments": []}]',  # arguments not an object
    ],
)
def test_a_malformed_body_goes_back_to_the_content_verbatim(bad: str) -> None:
    out = "Before." + bad
    res = every_path(parser, TURN, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.content == out


def test_one_bad_call_drops_only_itself() -> None:
    out = TOOL_CALL + '[{"name": "get_weather", "arguments": 7}, {"name": "now", "arguments": {}}]'
    res = every_path(parser, TURN, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("now", {})]
    assert not res.content


async def _served_until(ids: list[int], finish: str) -> Answer:
    rt = ReasoningRuntime()
    stream = rt.add("r", parser(), TURN, tools=TOOLS)
    for i in range(0, len(ids), 2):
        rt.step([stream.engine_id], ids[i : i + 2], [0, len(ids[i : i + 2])])
    rt.finish("r", finish)  # type: ignore[arg-type]
    return await read_chunks(stream)


def test_a_call_cut_by_the_end_of_the_output_is_not_returned() -> None:
    # No close marker: the list runs to the end; cut short it is no call, and its text is
    # given back as the content (a cut list cannot be told from text that is not a call).
    whole = TOK.encode("Checking. " + calls_text(("get_weather", WEATHER), ("now", {})))
    first = whole.index(TOK.single_token_id(TOOL_CALL))
    for cut in range(first + 1, len(whole)):
        ids = whole[:cut]
        text = TOK.decode(ids)
        res = parser().parse(ids, TURN, tools=TOOLS)
        assert res.tool_calls == [], cut
        assert res.content == text
        for cuts in ([], [cut // 2], list(range(0, cut, 3))):
            assert split_at(parser(), TURN, ids, cuts, TOOLS) == ("", text, []), (cut, cuts)
        assert anyio.run(_served_until, ids, "length") == ("", text, [])


def test_without_tools_the_markup_stays_in_the_content() -> None:
    out = "Sure." + calls_text(("now", {}))
    for kwargs in ({}, {"tools": TOOLS, "tool_choice": "none"}):
        res = parser().parse(TOK.encode(out), TURN, **kwargs)  # type: ignore[arg-type]
        assert res.tool_calls == [] and res.content == out, kwargs


def test_the_tool_call_string_form() -> None:
    # vLLM's granite parser reads ``<tool_call>`` in place of the token (Granite 3.1). In
    # this stand-in vocabulary it is one token (Qwen2.5's); where it is text it is matched
    # on token bytes, as every byte marker is.
    args = {"s": "hello", "b": True, "n": None, "f": 3.14, "xs": ["a"], "o": {"k": "v"}}
    body = " " + json.dumps([{"name": "now", "arguments": args}], indent=2)
    res = every_path(parser, TURN, TOK.encode("<tool_call>" + body), TOOLS)
    assert res.tool_calls == [call("now", args)]
    assert not res.content


def test_prose_that_names_the_string_form_stays_content() -> None:
    out = "Wrap it in <tool_call> tags, then a list."
    res = every_path(parser, TURN, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.content == out


# ---------------------------------------------------------------------- fidelity

# The phrases are parsed by default.
PHRASES = [
    fc.Split("phrases", f"{START} x {END} y", " x ", " y"),
    fc.Split("no phrases", "no phrases here", None, "no phrases here"),
]


@pytest.mark.parametrize("case", fc.params(PHRASES))
@fc.SETTINGS
@given(data=st.data())
def test_phrases_split_under_any_split(data: st.DataObject, case: fc.Split) -> None:
    fc.check_split(data, "granite", case)


def test_no_marker_text_leaks_into_content() -> None:
    fc.check_no_leak("granite", {}, f"{START}a{END}b", "Here is my")
