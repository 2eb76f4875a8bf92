"""Liquid AI LFM2 (thinking checkpoints): ``<think>`` / ``</think>``, when the model chooses.

Facts and where they come from:

- LFM2's tokenizer has ``<think>``, ``</think>``, ``<|im_start|>`` and
  ``<|tool_call_start|>`` / ``<|tool_call_end|>`` as special tokens; its ChatML template
  ends the generation prompt with ``<|im_start|>assistant\\n`` and prefills nothing: the
  model writes ``<think>`` itself when it decides to think, so a turn starts in content
  and a ``<think>`` opens a block (also after content).
- Switch: ``think`` (chat_template_kwargs), as the serving engines surveyed read it;
  default on. Off, the markers are not read and the whole response is content.
- Implicit end: ``<|tool_call_start|>`` ends reasoning and stays in the content for the
  tool parser (LFM2 writes Pythonic calls between the tool-call tokens).
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint


@register
class Lfm2Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="lfm2",
        aliases=("lfm2_thinking", "lfm2_5", "liquid_lfm2"),
        start=("<think>",),
        end=("</think>",),
        tool=("<|tool_call_start|>",),
        turn=("<|im_start|>",),
        required=("<think>", "</think>"),
        prompt_start=False,
        thinking_default=True,
        thinking_switches=("think",),
        start_in_content="enter",
        end_in_content="drop",
        start_source=(
            "documented: LFM2's template ends with `<|im_start|>assistant\\n`; the model writes "
            "`<think>` only when it chooses to think"
        ),
        notes="<think> opens a block wherever it comes; <|tool_call_start|> ends reasoning",
    )
    # It writes Qwen's <think> pair; its own tool-call token tells it apart.
    hint = DetectionHint(model_types=("lfm2", "lfm2_moe"), tokens=("<|tool_call_start|>",))
