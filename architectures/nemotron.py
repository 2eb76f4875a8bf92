"""NVIDIA Nemotron 3 (Nano, Super), and IBM Granite 4.x thinking, which writes its format.

As qwen3: ``<think>``/``</think>`` prefilled by the template, ``<tool_call>`` ends reasoning,
a repeated ``</think>`` in content is dropped. The quirk is the fallback: with
``enable_thinking: false`` or ``force_nonempty_content: true``, a response whose content
ends up empty returns its reasoning as content (``reasoning_as_content_if``; a stream
learns it from ``finish()``).

Thinking off therefore only moves where the turn starts (content, behind the template's
``<think></think>``); markers are still matched, and a ``<think>`` after content opens a
block, so a block the model writes anyway is split off, then swapped if it was all.

Tool calls (:data:`NEMOTRON_V3_TOOL_CALLS`): XML functions inside ``<tool_call>`` (kind
``xml``). Nemotron 3 Nano's chat template (``NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja``, as
llama.cpp's ``models/templates`` carries it) writes each call of an assistant turn as
``<tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE\\n</parameter>\\n``
``</function>\\n</tool_call>\\n``, strings raw and mappings / lists as JSON, after the
content trimmed plus a newline; its system prompt asks for exactly that shape. vLLM's
``nemotron_v3`` parser is its ``qwen3`` engine (the same XML), llama.cpp's ``nemotron_v3``
handler reads ``<tool_call><function=…><parameter=…>``. Values are typed from the offered
tool's schema.

IBM Granite 4.x thinking checkpoints (``granite_thinking``; not the Granite 3.x phrases of
``granite``) write Nemotron 3's format. Facts and where they come from (vLLM's
``vllm/parser/granite_thinking.py``, adapter
``vllm/reasoning/granite_thinking_engine_reasoning_parser.py``, and that parser's unit
tests; the Granite 4.2 template is
not in the public corpus this was checked against, so the start state is ``documented``):

- ``<think>``/``</think>`` prefilled by the template with thinking on, ``<tool_call>``
  (XML, as Nemotron 3: vLLM's parser is Nemotron 3's engine with its own name, and Granite
  4.2 checkpoints are served with ``--tool-call-parser qwen3_coder``) ends reasoning; here
  the spec is Nemotron 3's with Granite's name, turn markers, content layout and its own
  tool format (:data:`GRANITE_THINKING_TOOL_CALLS`, the same shape).
- ``enable_thinking`` (default on), and Nemotron 3's swap: with ``enable_thinking: false``
  or ``force_nonempty_content: true``, a response with no content returns its reasoning
  as content.
- The template writes ``\\n</think>\\n``: vLLM's parser strips the leading newlines of
  the content (``lstrip("\\n")`` of the first content) and nothing else, so here the
  content text loses its leading newlines after ``</think>`` and the reasoning is kept as
  written, newlines before ``</think>`` included (``r\\n\\n</think>`` → ``r\\n\\n``).
  Token labels are unchanged; streaming and ``parse()`` trim alike.
- The prompt scan is bounded by ``<|start_of_role|>``, Granite's role opener (the same
  token the granite 3 family uses). A third-party reading of Granite 4.2's template
  renders ChatML turns (``<|im_start|>assistant\\n<think>\\n``); ``<|im_start|>`` is not
  a turn marker here, because it would make Qwen's vocabularies detect as this family.
"""

from __future__ import annotations

import msgspec

from reasonspan.runtime.core.spec import ReasoningSpec, Trim
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

NEMOTRON_V3_TOOL_CALLS = ToolFormat(
    kinds=("xml",),
    open=("<tool_call>",),
    close=("</tool_call>",),
    source="Nemotron 3 Nano's chat template (NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja, in "
    "llama.cpp's models/templates) writes each call as `<tool_call>\\n<function=NAME>\\n"
    "<parameter=KEY>\\nVALUE\\n</parameter>\\n</function>\\n</tool_call>`, strings raw, "
    "mappings and lists as JSON; vLLM's nemotron_v3 parser (its qwen3 XML engine) and "
    "llama.cpp's nemotron_v3 handler read it",
)
"""Nemotron 3's calls: XML functions inside ``<tool_call>`` (module doc)."""

GRANITE_THINKING_TOOL_CALLS = ToolFormat(
    kinds=("xml",),
    open=("<tool_call>",),
    close=("</tool_call>",),
    source="vLLM's granite_thinking parser: Granite 4.2 writes Nemotron 3's format, "
    "`<tool_call>` with `<function=NAME><parameter=KEY>VALUE</parameter></function>` inside "
    "(its qwen3 XML engine); Granite 4.2 checkpoints are served with vLLM's qwen3_coder tool "
    "parser. The Granite 4.2 template itself is not in the public corpus checked",
)
"""Granite 4.x thinking's calls: the same shape as Nemotron 3's, its own source."""


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
        tool_calls=NEMOTRON_V3_TOOL_CALLS,
        start_source=(
            "template: Nemotron 3 Nano's chat template ends with `<|im_start|>assistant\\n"
            "<think>\\n` when thinking is on, `<think></think>` when off"
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
        content_trim=Trim(lead="\n"),
        tool_calls=GRANITE_THINKING_TOOL_CALLS,
        start_source=(
            "documented: vLLM's granite_thinking parser (Nemotron 3's config) starts in "
            "reasoning with enable_thinking on (the template prefills `<think>`)"
        ),
        notes="as nemotron_v3 (empty content → reasoning is the content when asked); the "
        "content's leading newlines after </think> trimmed, reasoning kept as written",
    )
