"""The SGLang adapter's contract, run inside SGLang 0.5.23 (``bash scripts/sglang_env.sh``).

Every family's detectors are in SGLang's tables as ``reasonspan_<family>`` (through SGLang's
own plugin loader, without a flag). Outputs go through SGLang's own classes as its OpenAI
server composes them per request: ``ReasoningParser``, whose normal text feeds a
``FunctionCallParser`` with the request's tools; both ways, non-streaming
(``parse_non_stream``) and streamed as text cut at seeded random places (1 to 12
characters, so markers and words are cut mid-way), with ``parse_stream_end`` at the end.
Each must equal reasonspan's own ``parse()`` of the output's token ids and the pieces the
test wrote. Tokenizers are the real ones of ``tests/support/fixtures.py``, wrapped as the
Hugging Face fast tokenizer SGLang hands its detectors.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from functools import cache
from typing import Any

import pytest
from sglang.srt.entrypoints.openai.protocol import Tool
from sglang.srt.function_call.base_format_detector import BaseFormatDetector
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import BaseReasoningFormatDetector, ReasoningParser
from transformers import PreTrainedTokenizerFast

import reasonspan
from reasonspan.integrations import sglang as adapter
from reasonspan.integrations.common import SKIPPED, loaded_tokenizer
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.hostile import CALLS, TOOLS

adapter.register()

FAMILIES = sorted(c.spec.name for c in reasonspan.families() if c.spec.name not in SKIPPED)
WITH_CALLS = sorted(f for f in FAMILIES if reasonspan.get_parser_class(f).spec.tool_calls)
SGL_TOOLS = [Tool.model_validate(t) for t in TOOLS]

Answer = tuple[str, str, list[tuple[str, Any]]]


@cache
def hf(family: str) -> PreTrainedTokenizerFast:
    """The family's fixture tokenizer as the fast tokenizer SGLang passes its detectors."""
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer(FAMILY_TOKENIZERS[family]).tokenizer)


def _calls(items: list[Any]) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.parameters)) for c in items]


def parsers(family: str, force_reasoning: bool | None) -> tuple[ReasoningParser, Any]:
    """SGLang's per-request parsers, as its chat server builds them."""
    tok = hf(family)
    name = adapter.own_name(family)
    rp = ReasoningParser(name, True, force_reasoning, None, tokenizer=tok)
    fp = FunctionCallParser(SGL_TOOLS, name, tokenizer=tok) if family in WITH_CALLS else None
    return rp, fp


def whole(family: str, text: str, force_reasoning: bool | None = None) -> Answer:
    """SGLang's non-streaming path: reasoning, then the calls in the normal text."""
    rp, fp = parsers(family, force_reasoning)
    reasoning, content = rp.parse_non_stream(text)
    calls: list[Any] = []
    if fp is not None and content:
        content, calls = fp.parse_non_stream(content)
    return reasoning or "", content or "", _calls(calls)


def streamed(
    family: str, text: str, rng: random.Random, force_reasoning: bool | None = None
) -> Answer:
    """SGLang's streaming path (``_process_reasoning_stream`` then
    ``_process_tool_call_stream``), the text cut at random places."""
    rp, fp = parsers(family, force_reasoning)
    reasoning: list[str] = []
    content: list[str] = []
    calls: list[Any] = []
    i = 0
    while i < len(text):
        k = rng.randint(1, 12)
        chunk, i = text[i : i + k], i + k
        r, normal = rp.parse_stream_chunk(chunk)
        if i >= len(text):
            end_r, end_n = rp.parse_stream_end()
            r, normal = (r or "") + (end_r or ""), (normal or "") + (end_n or "")
        reasoning.append(r or "")
        if fp is None:
            content.append(normal or "")
            continue
        normal, new = fp.parse_stream_chunk(normal or "")
        content.append(normal)
        calls += new
        if i >= len(text):
            end_text, end_calls = fp.parse_stream_end()
            content.append(end_text)
            calls += end_calls
    return "".join(reasoning), "".join(content), _calls(calls)


def reference(family: str, text: str, force_reasoning: bool | None = None) -> Answer:
    """reasonspan's own ``parse()`` of the output's token ids (special tokens kept: the
    text is SGLang's decode, which already left out what the request skips)."""
    tok = loaded_tokenizer(hf(family))
    parser = reasonspan.create_parser_sync(family, tok, default_reasoning=force_reasoning)
    ids = tok.tokenizer.encode(text, add_special_tokens=False).ids
    tools = TOOLS if family in WITH_CALLS else None
    res = parser.parse(ids, tools=tools, skip_special_tokens=False)
    return res.reasoning or "", res.content or "", _calls_of(res.tool_calls)


def _calls_of(calls: list[Any]) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.arguments)) for c in calls]


def three_ways(family: str, text: str, force_reasoning: bool | None = None) -> Answer:
    want = reference(family, text, force_reasoning)
    assert whole(family, text, force_reasoning) == want
    for seed in range(4):
        got = streamed(family, text, random.Random(seed), force_reasoning)
        assert got == want, seed
    return want


# -- registration ----------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_is_in_sglangs_tables(family: str) -> None:
    rcls = ReasoningParser.DetectorMap[adapter.own_name(family)]
    assert issubclass(rcls, BaseReasoningFormatDetector) and rcls.family == family
    if family in WITH_CALLS:
        tcls = FunctionCallParser.ToolCallParserEnum[adapter.own_name(family)]
        assert issubclass(tcls, BaseFormatDetector) and tcls.family == family
    else:
        assert adapter.own_name(family) not in FunctionCallParser.ToolCallParserEnum


def test_the_entry_point_registers_without_a_flag() -> None:
    """SGLang's own plugin loader (its launcher runs it before parsing flags) registers
    every family, and the flags' choices then list them; SGLang's own names stay its own."""
    code = (
        "from sglang.srt.plugins import load_plugins; load_plugins()\n"
        "from sglang.srt.server_args import _reasoning_parser_choices as r,"
        " _tool_call_parser_choices as t\n"
        "from sglang.srt.parser.reasoning_parser import ReasoningParser as R\n"
        "print(sum(n.startswith('reasonspan_') for n in r()),"
        " sum(n.startswith('reasonspan_') for n in t()),"
        " R.DetectorMap['qwen3'].__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [
        str(len(FAMILIES)),
        str(len(WITH_CALLS)),
        "sglang.srt.parser.reasoning_parser",
    ]


def test_the_end_marker_gates_sglangs_grammar() -> None:
    """SGLang encodes ``think_end_token`` to start a grammar after reasoning."""
    rp, _ = parsers("qwen3", None)
    ids = rp.detector.get_think_end_token_ids(hf("qwen3"))
    assert ids == [hf("qwen3").convert_tokens_to_ids("</think>")]


def test_without_a_tokenizer_the_error_says_why() -> None:
    with pytest.raises(ValueError, match="needs the tokenizer"):
        ReasoningParser(adapter.own_name("qwen3"))


# -- streaming == non-streaming == parse() ----------------------------------------------


CONTRACT = ["deepseek_r1", "glm45", "kimi_k2", "minimax_m2", "qwen3"]

# Families whose answer this composition does not give as parse() does, each with its cause
# (docs/sglang.md): SGLang reads reasoning and calls in two detectors, the second from the
# first one's text.
DIFFERS = {
    "inkling": "a call closes with <|end_message|>, which the reasoning detector leaves out "
    "of the answer: the function-call detector sees the call cut short",
}


def _after_reasoning(family: str) -> str:
    parser = reasonspan.create_parser_sync(family, loaded_tokenizer(hf(family)))
    end = parser.spec.end[0] if parser.spec.end else ""
    return "Hmm, let me see." + end + "Calling." + CALLS[family][0].replace("V", "[1, 2]")


@pytest.mark.parametrize("family", CONTRACT)
def test_a_call_after_reasoning_reads_the_same_three_ways(family: str) -> None:
    """Each family's own call format (tests/support/hostile.py) after its reasoning, which
    the template opened (SGLang's ``force_reasoning``)."""
    got = three_ways(family, _after_reasoning(family), force_reasoning=True)
    assert got == ("Hmm, let me see.", "Calling.", [("f", {"a": [1, 2]})])


@pytest.mark.sampled(every=12)
@pytest.mark.parametrize(
    "family",
    [
        pytest.param(f, marks=pytest.mark.xfail(reason=DIFFERS[f], strict=True))
        if f in DIFFERS
        else f
        for f in sorted(set(CALLS) & set(WITH_CALLS))
    ],
)
def test_every_family_reads_a_call_the_same_three_ways(family: str) -> None:
    """The same for every family with a call format (a sample in CI; --long: all)."""
    three_ways(family, _after_reasoning(family), force_reasoning=True)


def test_qwen3_two_hermes_calls_and_an_answer() -> None:
    calls = [("f", {"a": [1]}), ("f", {"a": ["x", {"y": None}]})]
    text = "<think>\nLet me check both, naïvely: 🙂.\n</think>\n\nChecking both.\n" + "".join(
        f'<tool_call>\n{{"name": "{n}", "arguments": {json.dumps(a)}}}\n</tool_call>\n'
        for n, a in calls
    )
    assert three_ways("qwen3", text) == ("Let me check both, naïvely: 🙂.", "Checking both.", calls)


def test_kimi_k2_call_section_inside_reasoning() -> None:
    """Kimi K2 may open its call section before ``</think>``: the call is read all the same."""
    text = (
        "<think>Plan: call f."
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0"
        '<|tool_call_argument_begin|>{"a": [3]}<|tool_call_end|><|tool_calls_section_end|>'
    )
    _, _, calls = three_ways("kimi_k2", text)
    assert calls == [("f", {"a": [3]})]


def test_qwen3_tool_call_inside_reasoning() -> None:
    """Qwen3.5 may open ``<tool_call>`` without closing ``</think>``: the call is read."""
    text = (
        '<think>Let me call f.\n<tool_call>\n{"name": "f", "arguments": {"a": [1]}}\n</tool_call>'
    )
    _, content, calls = three_ways("qwen3", text)
    assert (content, calls) == ("", [("f", {"a": [1]})])


@pytest.mark.parametrize(
    ("family", "output"),
    [
        ("deepseek_r1", "Step one.</think>The answer."),
        ("glm45", "Step one.</think>The answer."),
        ("qwen3", "Step one.\n</think>\n\nThe answer."),
    ],
)
def test_a_template_that_opened_think(family: str, output: str) -> None:
    """SGLang's ``force_reasoning`` (the template opened ``<think>``): the first tokens are
    reasoning, with no start marker in the output."""
    assert three_ways(family, output, force_reasoning=True) == ("Step one.", "The answer.", [])


def test_thinking_off_reads_the_output_as_the_answer() -> None:
    assert three_ways("qwen3", "The answer, </b> and all.", force_reasoning=False) == (
        "",
        "The answer, </b> and all.",
        [],
    )


def test_harmony_reasoning_and_answer() -> None:
    text = (
        "<|channel|>analysis<|message|>Think it over.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>The answer."
    )
    reasoning, content, _ = three_ways("openai_gptoss", text)
    assert (reasoning, content) == ("Think it over.", "The answer.")


def test_unstreamed_reasoning_comes_whole_once_it_ended() -> None:
    """``stream_reasoning=False``: SGLang's detectors return the reasoning in one piece."""
    tok = hf("qwen3")
    rp = ReasoningParser(adapter.own_name("qwen3"), False, None, None, tokenizer=tok)
    text = "<think>One. Two. Three.</think>The answer, in words."
    pieces = [rp.parse_stream_chunk(text[i : i + 4]) for i in range(0, len(text), 4)]
    pieces.append(rp.parse_stream_end())
    reasoning = [r for r, _ in pieces if r]
    assert reasoning == ["One. Two. Three."]
    assert "".join(n or "" for _, n in pieces) == "The answer, in words."


@pytest.mark.parametrize("family", ["deepseek_r1", "kimi_k2", "qwen3"])
def test_random_outputs_read_the_same_three_ways(family: str) -> None:
    """Seeded random outputs of markers, words and calls (whole, cut short, hostile)."""
    from tests.support.hostile import output

    parser = reasonspan.create_parser_sync(family, loaded_tokenizer(hf(family)))
    rng = random.Random(family)
    for _ in range(8):
        text = output(rng, family, parser)
        three_ways(family, text)


@pytest.mark.parametrize(
    ("before", "output", "want"),
    [
        ("<think>\nLet me", " see.</think>\n\nThe answer.", (" see.", "The answer.")),
        ("<think>\nLet me see.</think>\n\nThe", " answer.", ("", " answer.")),
    ],
)
def test_a_continued_message_starts_where_it_left_off(
    before: str, output: str, want: tuple[str, str]
) -> None:
    """``continue_final_message``: the assistant text already written is the prompt the
    start state is read from (inside the reasoning, or past it)."""
    cls = ReasoningParser.DetectorMap[adapter.own_name("qwen3")]
    detector = cls(continue_final_message=True, previous_content=before, tokenizer=hf("qwen3"))
    res = detector.detect_and_parse(output)
    assert (res.reasoning_text, res.normal_text) == want
