"""OpenBMB MiniCPM-V 4.5 and later (``minicpmv``).

Facts and where they come from (vLLM's ``vllm/parser/minicpmv.py``, its reasoning adapter
``vllm/reasoning/minicpmv_reasoning_parser.py`` and its tests
``tests/parser/engine/test_minicpmv_reasoning.py``; MiniCPM-V's language model is Qwen3
(4.5) or Qwen3.5 (4.6), with ChatML turns):

- ``<think>``/``</think>`` (Qwen's tokens) and ``<tool_call>`` ending reasoning (vLLM
  wraps Qwen3's grammar).
- ``enable_thinking`` defaults to **off** (``chat_kwargs.get("enable_thinking", False)``).
  On, the output starts in reasoning (vLLM uses Qwen3's thinking config): the template
  prefills nothing, the model opens ``<think>`` itself and that leading start is consumed.
  Off, the turn starts in content.
- Thinking off, a ``<think>…</think>`` block the model writes anyway is read and thrown
  away: vLLM's no-thinking grammar routes it to reasoning and then discards the reasoning
  (``prefix<think>private reasoning`` is content ``prefix`` and no reasoning; a block split
  over deltas gives reasoning ``""``). Here its tokens are DELIMITERs, like its markers:
  decided, never text, counted in neither channel (:class:`QuietBlockMachine`).
- A ``</think>`` in the answer is dropped (``first part </think>\\n\\nfinal part`` is
  ``first part \\n\\nfinal part``), thinking on or off.
- ``<|im_end|>`` and the reserved markers 12 to 15, as tokens ``<|reserved_N|>`` or as text
  ``<reserved_N>``, pass through silently in both channels (vLLM's passthrough terminals,
  ``_RESERVED_MARKER_IDS = range(12, 16)``): consumed wherever they are, never text
  (``<reserved_11>`` and ``<|reserved_16|>`` are text).
- ``<|im_start|>`` opens every turn and bounds the prompt scan.

Tool calls: ``<tool_call>`` … ``</tool_call>`` holding Hermes JSON (MiniCPM-V 4.5's Qwen3
template) or Qwen3-Coder's XML functions (vLLM's ``minicpmv`` engine tool parser: "MiniCPM-V
emits the same XML tool call syntax as Qwen3-Coder", ``structural_tag_model =
"qwen_3_coder"``; 4.6's language model is Qwen3.5, whose template writes them); kinds
``json`` then ``xml``, as Qwen3's.

Not modelled: vLLM rewrites the two characters ``\\`` ``n`` (which MiniCPM-V's tokenizer
sometimes decodes for a newline) to a newline outside code; that is text repair of one
tokenizer's output, not reasoning structure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reasonspan.runtime.core.holdback import Cursor, Spill
from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING
from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.core.markers import compile_machine
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat
from reasonspan.tokenizer.loader import LoadedTokenizer

RESERVED = tuple(f"<|reserved_{n}|>" for n in range(12, 16)) + tuple(
    f"<reserved_{n}>" for n in range(12, 16)
)
"""vLLM's passthrough reserved markers, as tokens and as text."""

MINICPMV_TOOL_CALLS = ToolFormat(
    kinds=("json", "xml"),
    open=("<tool_call>",),
    close=("</tool_call>",),
    json_strings=True,
    source='MiniCPM-V 4.5\'s Qwen3 chat template writes `<tool_call>\\n{"name": …, '
    "\"arguments\": …}\\n</tool_call>`; vLLM's minicpmv engine tool parser reads Qwen3-Coder's "
    "`<tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE\\n</parameter>\\n</function>\\n"
    "</tool_call>` (structural_tag_model qwen_3_coder; 4.6 is Qwen3.5-based)",
)


class QuietBlockMachine(Machine):
    """Thinking off: a block the model writes anyway is routed as usual and then made
    DELIMITERs (its reasoning bytes spilled from markers too), so it is never text."""

    def run(
        self,
        tokens: Any,
        reasoning: bool,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None = None,
    ) -> bool:
        n, m = len(out_labels), len(spill) if spill is not None else 0
        state = super().run(tokens, reasoning, cursor, out_ids, out_labels, spill)
        _quiet(out_labels, n, spill, m)
        return state

    def route_one(self, token: int, reasoning: bool, cursor: Cursor) -> tuple[int, bool] | None:
        """A lone token that is no marker and begins none, with nothing held: what ``run``
        gives it, without the queue (the parser's 1-token path for a custom machine)."""
        if cursor.held or cursor.carry is not None or self.lut[token]:
            return None
        return (DELIMITER if reasoning else CONTENT), reasoning

    def flush(
        self,
        reasoning: bool,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None = None,
    ) -> bool:
        n, m = len(out_labels), len(spill) if spill is not None else 0
        state = super().flush(reasoning, cursor, out_ids, out_labels, spill)
        _quiet(out_labels, n, spill, m)
        return state


def _quiet(labels: bytearray, n: int, spill: list[Spill] | None, m: int) -> None:
    """Labels from ``n`` (and spill parts from ``m``) with REASONING made DELIMITER."""
    tail = labels[n:]
    if REASONING in tail:
        labels[n:] = tail.replace(bytes((REASONING,)), bytes((DELIMITER,)))
    if spill is not None and len(spill) > m:
        spill[m:] = [part for part in spill[m:] if part[2] != REASONING]


@register
class MiniCPMVParser(ReasoningParser):
    spec = ReasoningSpec(
        name="minicpmv",
        aliases=("minicpm_v", "minicpm_v45", "minicpmv45"),
        start=("<think>",),
        end=("</think>",),
        tool=("<tool_call>",),
        strip=("<|im_end|>", *RESERVED),
        turn=("<|im_start|>",),
        required=("<think>", "</think>"),
        text_markers=RESERVED,
        prompt_start=True,
        thinking_default=False,
        thinking_switches=("enable_thinking",),
        thinking_off_keeps_markers=True,
        start_in_content="enter",
        end_in_content="drop",
        start_source=(
            "documented: vLLM's minicpmv parser reads enable_thinking (default false); on, "
            "the output starts in reasoning"
        ),
        tool_calls=MINICPMV_TOOL_CALLS,
        notes="thinking off by default; a <think> block written anyway is dropped (no text); "
        "a stray </think>, <|im_end|> and reserved markers 12-15 are never text",
    )
    # MiniCPM-V writes Qwen's <think> tokens: config.json or its image tags must say so.
    hint = DetectionHint(model_types=("minicpmv",), tokens=("<slice>",), needs_evidence=True)

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        """Thinking on: the base machine. Off (the turn starts in content): a
        :class:`QuietBlockMachine`, which drops a block the model writes anyway."""
        thinking, prompt_start = cls.resolve_switches(kwargs)
        if prompt_start:
            return compile_machine(cls.spec, tokenizer, thinking=thinking, prompt_start=True)
        return compile_machine(
            cls.spec,
            tokenizer,
            thinking=thinking,
            prompt_start=False,
            machine_class=QuietBlockMachine,
        )
