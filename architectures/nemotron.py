"""NVIDIA Nemotron 3 (Nano, Super), and IBM Granite 4.x thinking, which writes its format.

As qwen3: ``<think>``/``</think>`` prefilled by the template, ``<tool_call>`` ends reasoning,
a repeated ``</think>`` in content is dropped. The quirk is the fallback: with
``enable_thinking: false`` or ``force_nonempty_content: true``, a response whose content
ends up empty returns its reasoning as content (``reasoning_as_content_if``; a stream
learns it from ``finish()``).

Thinking off therefore only moves where the turn starts (content, behind the template's
``<think></think>``); markers are still matched, and a ``<think>`` after content opens a
block, so a block the model writes anyway is split off, then swapped if it was all.

IBM Granite 4.x thinking checkpoints (``granite_thinking``; not the Granite 3.x phrases of
``granite``) write Nemotron 3's format. Facts and where they come from (vLLM's
``vllm/parser/granite_thinking.py``, adapter
``vllm/reasoning/granite_thinking_engine_reasoning_parser.py``; the Granite 4.x template is
not in the public corpus this was checked against, so the start state is ``documented``):

- ``<think>``/``</think>`` prefilled by the template with thinking on, ``<tool_call>``
  (XML, as Nemotron 3) ends reasoning; vLLM's parser is Nemotron 3's with its config, so
  here the spec is Nemotron 3's with Granite's name, role opener and template layout.
- ``enable_thinking`` (default on), and Nemotron 3's swap: with ``enable_thinking: false``
  or ``force_nonempty_content: true``, a response with no content returns its reasoning
  as content.
- The template writes ``\\n</think>\\n``: the engine strips the leading newlines of the
  content; here the content text loses its leading newlines after ``</think>`` and the
  reasoning text the one newline before it (the template's layout, not reasoning). Token
  labels are unchanged; streaming and ``parse()`` trim alike.
- The prompt scan is bounded by ``<|start_of_role|>``, Granite's role opener (the same
  token the granite 3 family uses).
"""

from __future__ import annotations

import msgspec

from reasonspan.runtime.core.spec import ReasoningSpec, Trim
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint


@register
class NemotronV3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="nemotron_v3",
        aliases=("nemotron_3", "nano_v3"),
        start=("<think>",),
        end=("</think>",),
        tool=("<tool_call>",),
        turn=("<|im_start|>",),
        required=("<think>", "</think>"),
        prompt_start=True,
        thinking_default=True,
        thinking_switches=("enable_thinking",),
        thinking_off_keeps_markers=True,
        start_in_content="enter",
        end_in_content="drop",
        reasoning_as_content_if=(("enable_thinking", False), ("force_nonempty_content", True)),
        start_source=(
            "documented: Nemotron 3's template ends with `<think>\\n` when thinking is on (as "
            "llama.cpp's nemotron_v3 handler reads it)"
        ),
        notes="enable_thinking false or force_nonempty_content true: empty content → the "
        "reasoning is the content",
    )
    hint = DetectionHint(model_types=("nemotron_h",), needs_evidence=True)


@register
class GraniteThinkingParser(ReasoningParser):
    spec = msgspec.structs.replace(
        NemotronV3Parser.spec,
        name="granite_thinking",
        aliases=("granite4_thinking", "granite_4_thinking"),
        turn=("<|start_of_role|>",),
        reasoning_trim=Trim(trail="\n", trail_max=1),
        content_trim=Trim(lead="\n"),
        start_source=(
            "documented: vLLM's granite_thinking parser (Nemotron 3's config) starts in "
            "reasoning with enable_thinking on (the template prefills `<think>`)"
        ),
        notes="as nemotron_v3 (empty content → reasoning is the content when asked); the "
        "template's newlines around </think> trimmed from the text",
    )
