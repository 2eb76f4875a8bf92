"""OpenBMB MiniCPM-V 4.5 and later (``minicpmv``).

Facts and where they come from (vLLM's ``vllm/parser/minicpmv.py`` and its reasoning
adapter ``vllm/reasoning/minicpmv_reasoning_parser.py``; MiniCPM-V's language model is
Qwen3, with ChatML turns):

- ``<think>``/``</think>`` (Qwen3's tokens) and ``<tool_call>`` ending reasoning (vLLM
  wraps Qwen3's grammar).
- ``enable_thinking`` defaults to **off** (``chat_kwargs.get("enable_thinking", False)``).
  On, the output starts in reasoning (vLLM uses Qwen3's thinking config): the template
  prefills nothing, the model opens ``<think>`` itself and that leading start is consumed.
  Off, the turn starts in content.
- Nothing is prefilled with thinking off, and a ``<think>…</think>`` block the model
  writes anyway is kept out of the answer: vLLM's no-thinking grammar routes it to
  reasoning and then discards the reasoning. Decided here: the block is split off the
  same way (labelled REASONING, consumed markers), so the content is what vLLM returns;
  the block's text is reported as reasoning instead of thrown away, because a token's
  label says what it is and a client that asked for no thinking can ignore the field.
- ``<|im_start|>`` opens every turn and bounds the prompt scan.

Not modelled: vLLM also passes ``<|im_end|>`` and the ``<|reserved_12..15|>`` tokens
through silently and rewrites the two characters ``\\`` ``n`` (which MiniCPM-V's tokenizer
decodes for a newline) to a newline outside code; that is text decoding of one tokenizer,
not reasoning structure (``skip_special_tokens`` leaves the special tokens out).
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint


@register
class MiniCPMVParser(ReasoningParser):
    spec = ReasoningSpec(
        name="minicpmv",
        aliases=("minicpm_v", "minicpm_v45", "minicpmv45"),
        start=("<think>",),
        end=("</think>",),
        tool=("<tool_call>",),
        turn=("<|im_start|>",),
        required=("<think>", "</think>"),
        prompt_start=True,
        thinking_default=False,
        thinking_switches=("enable_thinking",),
        thinking_off_keeps_markers=True,
        start_in_content="enter",
        start_source=(
            "documented: vLLM's minicpmv parser reads enable_thinking (default false); on, "
            "the output starts in reasoning"
        ),
        notes="thinking off by default; a <think> block written anyway is split off the "
        "answer (reported as reasoning, not dropped)",
    )
    # MiniCPM-V writes Qwen's <think> tokens: config.json or its image tags must say so.
    hint = DetectionHint(model_types=("minicpmv",), tokens=("<slice>",), needs_evidence=True)
