"""mistral (Magistral; alias ``magistral``): ``[THINK]`` … ``[/THINK]`` control tokens the
model writes when it thinks (the turn starts in content), and tool calls after
``[TOOL_CALLS]`` (v11: ``NAME[ARGS]{…}`` per call; v3: one JSON list), running to the end
of the output.

Tokenizers: Qwen2.5's with Mistral's control tokens added
(``qwen-2.5_base_with_mistral_special_tokens``; Qwen2.5 has no ``<think>`` token), and with
Magistral-2506's (``qwen-2.5_base_with_magistral_2506_special_tokens``: the older plain-text
``<think>`` is several tokens there). Facts (vLLM's mistral reasoning parser, llama.cpp's
tests): only ``[/THINK]`` ends reasoning; an end token with no start before it is removed;
the prompt scan stops at the turn.

The raw splits, fidelity cases and tool-call properties are run by
:mod:`tests.support.family_cases` and :mod:`tests.support.end_calls`.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import reasonspan
from reasonspan import Label
from reasonspan.runtime.wire.openai import FinishReason
from tests.support import end_calls
from tests.support import family_cases as fc
from tests.support.end_calls import TWO, Fam, every_path, expect, got, mistral_v3, mistral_v11
from tests.support.family_cases import Split, labelled, scan
from tests.support.family_cases import split_raw as run
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

# Mistral's control tokens (tekken v13, with [THINK]); the 2506 variant predates [THINK]
# (its fixture, qwen-2.5_base_with_magistral_2506_special_tokens, is listed in
# tests/support/fixtures.py).
FIXTURE = "qwen-2.5_base_with_mistral_special_tokens"
ADDED_TOKENS = (
    "[INST]",
    "[/INST]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[THINK]",
    "[/THINK]",
)

# One call to f(a=V) in each form of the tool-call format architectures/mistral.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '[TOOL_CALLS][{"name": "f", "arguments": {"a": V}}]',
    '[TOOL_CALLS]f[ARGS]{"a": V}',
)

MISTRAL = FAMILY_TOKENIZERS["mistral"]
MAGISTRAL_2506 = "qwen-2.5_base_with_magistral_2506_special_tokens"


def make(family: str, tok_name: str) -> reasonspan.ReasoningParser:
    return fc.parser_for(family, None, tok_name)


MISTRAL_TURN = "[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]What is 2+2?[/INST]"


def test_starts_in_content_and_think_opens_reasoning() -> None:
    res = run("mistral", MISTRAL, "Sure.[THINK]2+2=4[/THINK]It is 4.", MISTRAL_TURN)
    assert not res.started_in_reasoning
    assert (res.reasoning, res.content, res.reasoning_ended) == ("2+2=4", "Sure.It is 4.", True)
    assert labelled(res, MISTRAL, Label.DELIMITER) == ["[THINK]", "[/THINK]"]


def test_no_markers_is_all_content() -> None:
    res = run("mistral", MISTRAL, "It is 4.", MISTRAL_TURN)
    assert (res.reasoning, res.content, res.reasoning_ended) == (None, "It is 4.", True)
    assert run("mistral", MISTRAL, "It is 4.").content == "It is 4."


def test_truncated_after_think_is_reasoning() -> None:
    res = run("mistral", MISTRAL, "[THINK]Let me count", MISTRAL_TURN)
    assert (res.reasoning, res.content, res.reasoning_ended) == ("Let me count", None, False)


def test_tool_calls_inside_think_are_reasoning() -> None:
    # Only [/THINK] ends reasoning (vLLM's mistral reasoning parser; llama.cpp's tests).
    call = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
    res = run("mistral", MISTRAL, "[THINK]I need the weather." + call, MISTRAL_TURN)
    assert (res.reasoning, res.content) == ("I need the weather." + call, None)
    res = run("mistral", MISTRAL, "[THINK]I need " + call + "[/THINK]" + call, MISTRAL_TURN)
    assert (res.reasoning, res.content) == ("I need " + call, call)


def test_prompt_scan_stops_at_the_turn() -> None:
    # Magistral's default system prompt spells out the thinking template with the tokens.
    system = "[SYSTEM_PROMPT]Draft first: [THINK]your thoughts[/THINK] then answer. [THINK]"
    assert not scan("mistral", MISTRAL, system + "[/SYSTEM_PROMPT][INST]Hi[/INST]")
    # A continued assistant message that left a block open.
    assert scan("mistral", MISTRAL, MISTRAL_TURN + "[THINK]So far")
    # A tool result that quotes the tag (text "[THINK]" encodes as the control token) is
    # history once [/TOOL_RESULTS] closes it; thinking after it is the current turn.
    result = MISTRAL_TURN + "[TOOL_CALLS]f[ARGS]{}</s>[TOOL_RESULTS]Wrap in [THINK][/TOOL_RESULTS]"
    assert not scan("mistral", MISTRAL, result)
    assert scan("mistral", MISTRAL, result + "[THINK]Now")


def test_alias_and_budget_marker() -> None:
    assert reasonspan.get_parser_class("magistral") is reasonspan.get_parser_class("mistral")
    parser = make("mistral", MISTRAL)
    assert parser.end_marker_token_ids() == tokenizer(MISTRAL).encode("[/THINK]")
    assert len(parser.end_marker_token_ids()) == 1
    assert parser.machine.vectorizable


def test_plain_text_think_is_content_where_think_tokens_exist() -> None:
    res = run("mistral", MISTRAL, "Wrap it in <think> and </think> tags.", MISTRAL_TURN)
    assert (res.reasoning, res.content) == (None, "Wrap it in <think> and </think> tags.")


def test_magistral_2506_plain_text_think() -> None:
    tok = tokenizer(MAGISTRAL_2506)
    assert len(tok.encode("<think>")) > 1
    out = "<think>\nCount: 2+2=4.\n</think>\n\nIt is **4**."
    res = run("magistral", MAGISTRAL_2506, out, MISTRAL_TURN)
    assert (res.reasoning, res.content) == ("\nCount: 2+2=4.\n", "\n\nIt is **4**.")
    parser = make("mistral", MAGISTRAL_2506)
    assert not parser.machine.vectorizable
    assert parser.end_marker_token_ids() == tok.encode("</think>")
    # The system prompt of 2506 writes the tags as text too; the scan stops at [/INST].
    assert not scan(
        "mistral", MAGISTRAL_2506, "[SYSTEM_PROMPT]Use <think>[/SYSTEM_PROMPT]" + MISTRAL_TURN
    )
    assert scan("mistral", MAGISTRAL_2506, MISTRAL_TURN + "<think>\nSo far")


def test_magistral_2506_marker_split_across_deltas_is_held() -> None:
    tok = tokenizer(MAGISTRAL_2506)
    parser = make("mistral", MAGISTRAL_2506)
    start = tok.encode("<think>")
    d = parser.stream(start[:-1], False)
    assert d.token_ids == [] and d.held_token_count == len(start) - 1
    d = parser.stream(start[-1:] + tok.encode("hm"), False)
    assert d.labels[: len(start)] == bytes([Label.DELIMITER]) * len(start)
    assert d.is_still_reasoning and d.reasoning_token_ids == tok.encode("hm")


# ---------------------------------------------------------------------- fidelity


def test_magistral_2506_plain_text_markers_back_to_back() -> None:
    tok = tokenizer(MAGISTRAL_2506)
    parser = reasonspan.create_parser_sync("mistral", tok)
    res = parser.parse(tok.encode("<think></think>Answer."))
    assert (res.reasoning or None, res.content) == (None, "Answer.")


# vLLM mistral parser: an end token with no start before it is removed; its streaming
# path skips a lone [/THINK] delta.
STRAY = [
    Split("stray in content", "XXX[/THINK]YYY", None, "XXXYYY"),
    Split("leading", "[/THINK]YYY", None, "YYY"),
    Split("after a block", "[THINK]r[/THINK]XXX[/THINK]YYY", "r", "XXXYYY"),
]


@pytest.mark.parametrize("case", fc.params(STRAY))
@fc.SETTINGS
@given(data=st.data())
def test_stray_end_marker_follows_the_reference(data: st.DataObject, case: Split) -> None:
    fc.check_split(data, "mistral", case)


def test_stray_end_marker_labels_and_raw_text() -> None:
    """The rule is in the labels, not only the text: the dropped marker is a DELIMITER, so
    the raw text (special tokens kept) says the same."""
    mistral = fc.parser_for("mistral")
    ids = mistral.tokenizer.encode("XXX[/THINK]YYY")
    res = mistral.parse(ids, skip_special_tokens=False)
    assert res.content == "XXXYYY"
    assert res.delimiter_tokens == 1


# ---------------------------------------------------------------------- tool calls

V11 = Fam(
    "mistral",
    MISTRAL,
    "[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]Weather?[/INST]",
    mistral_v11,
    think="[THINK]plan[/THINK]",
)
V3 = Fam(V11.family, V11.tok_name, V11.prompt, mistral_v3, think=V11.think)


@pytest.mark.parametrize("fam", [V11, V3], ids=["v11", "v3"])
def test_reasoning_text_then_calls(fam: Fam) -> None:
    res = fam.parse("[THINK]I need the weather.[/THINK]Let me check." + fam.render(TWO))
    assert res.reasoning == "I need the weather."
    assert res.content == "Let me check."
    assert got(res.tool_calls) == expect(TWO)


def test_call_id_and_marker_in_argument() -> None:
    out = '[TOOL_CALLS]note[CALL_ID]a1B2c3D4e[ARGS]{"text": "x [TOOL_CALLS]f[ARGS]{} }"}'
    res = V11.parse(out)
    assert got(res.tool_calls) == [("note", {"text": "x [TOOL_CALLS]f[ARGS]{} }"})]
    assert res.content is None


def test_call_inside_think_is_reasoning() -> None:
    call = V11.render(TWO[:1])
    res = V11.parse("[THINK]maybe " + call + "[/THINK]" + call)
    assert got(res.tool_calls) == expect(TWO[:1])
    assert res.reasoning is not None and res.reasoning.startswith("maybe ")
    assert res.content is None


@pytest.mark.parametrize("fam", [V11, V3], ids=["v11", "v3"])
def test_truncated_calls_are_dropped(fam: Fam) -> None:
    full = fam.ids("Checking." + fam.render(TWO))
    marker = fam.tok.single_token_id("[TOOL_CALLS]")
    assert marker is not None
    first_marker = full.index(marker)
    # cut right after the marker: no call, and the marker is not content
    res = fam.parse(full[: first_marker + 1])
    assert res.tool_calls == [] and res.content == "Checking."
    # cut inside the last call's arguments
    res = fam.parse(full[:-3])
    if fam is V11:
        assert got(res.tool_calls) == expect(TWO[:1])  # the complete call before it stays
    else:
        assert res.tool_calls == []  # one JSON list: nothing complete
    assert res.content == "Checking."


@pytest.mark.parametrize("bad", ["[TOOL_CALLS] not json", "[TOOL_CALLS]get weather[ARGS]{}"])
def test_malformed_is_content(bad: str) -> None:
    res = V11.parse("Hi." + bad)
    assert res.tool_calls == [] and res.content == "Hi." + bad


@pytest.mark.parametrize("why", ["stop", "length"])
@pytest.mark.parametrize("prose", end_calls.PROSE)
@pytest.mark.parametrize("fam", [V11, V3], ids=["v11", "v3"])
def test_a_complete_call_then_prose_gives_both(fam: Fam, prose: str, why: FinishReason) -> None:
    end_calls.complete_call_then_prose(fam, 2, prose, why)


def test_v11_one_bad_call_keeps_its_siblings() -> None:
    text = '[TOOL_CALLS]note[ARGS][1][TOOL_CALLS]get_weather[ARGS]{"city": "LA"}'
    res = every_path(V11, "Sure." + text)
    assert got(res.tool_calls) == [("get_weather", {"city": "LA"})] and res.content == "Sure."
    res = every_path(V11, 'Sure.[TOOL_CALLS]note[ARGS]{"x": 1e999}')
    assert res.tool_calls == [] and res.content == 'Sure.[TOOL_CALLS]note[ARGS]{"x": 1e999}'


@pytest.mark.parametrize("fam", [V11, V3], ids=["v11", "v3"])
def test_any_split_and_the_runtime_give_the_parse(fam: Fam) -> None:
    end_calls.any_split_and_the_runtime_give_the_parse(fam)
