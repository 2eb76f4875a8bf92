"""MiniMax M2 (``</think>`` only), its "append think" flavour, and MiniMax M3 (``<mm:think>``).

M2's template prefills ``<think>`` and the model never emits it, so a turn starts in
reasoning; ``<minimax:tool_call>`` ends reasoning. Its template writes ``<think>\\n`` …
``\\n</think>\\n\\n`` and reads a turn back with ``strip('\\n')`` on both sides of each
marker, so those newlines are trimmed from the text (not from the token labels).
M2's calls (:data:`MINIMAX_M2_TOOL_CALLS`): its chat_template.jinja writes
``<minimax:tool_call>\\n<invoke name="NAME"><parameter name="KEY">VALUE</parameter>…</invoke>\\n``
(one invoke per call, several per block) and ``</minimax:tool_call>``; string values raw,
others JSON (vLLM's ``minimax_m2`` tool parser), typed from the offered tool's schema.

M2 "append think" (``minimax_m2_append_think``), for clients that split the reasoning
themselves: nothing is split, every token is content, and the content text is prefixed
once with the ``<think>`` that the template put into the prompt, so the client sees the
model's whole output as written (``<think>`` reasoning ``</think>`` answer). The prefix is a
text-only Trim, so token labels and usage stay honest (no reasoning tokens). Its calls are
M2's: MiniMax's deployment guide serves M2 with this reasoning parser and the
``minimax_m2`` tool parser, which reads the calls out of the content. The prefix is
unconditional, as in the reference: vLLM's ``minimax_m2_append_think`` parser returns
``"<think>" + model_output`` from ``extract_reasoning`` (so an empty output reads as
content ``<think>``) and prepends it to the first streamed delta. A client of this flavour
rebuilds the model's text as the template wrote it (the prompt ended with ``<think>\n``),
so an empty answer still shows the opened block it got, and streaming and ``parse()``
agree on it (``Trim.prefix_always``: the prefix comes with the first text, or alone at the
end of an output that had none).

M3's calls (:data:`MINIMAX_M3_TOOL_CALLS`): its chat_template.jinja leads every tag of a
call block with the namespace token ``]<]minimax[>[`` (``]<]minimax[>[<tool_call>\\n``,
``]<]minimax[>[<invoke name="NAME">``, one element per argument, nested for objects and
lists, ``]<]minimax[>[</tool_call>``), kind ``xml_nested``.

M3's markers are single tokens in its own vocabulary and several tokens elsewhere
(matched on token bytes); its template only prefills the start with
``thinking_mode: "enabled"``, otherwise the model may open a block itself.
A stray ``</mm:think>`` that opens an output the turn started in content is dropped; any
later one after content is content text, as written (``XXX</mm:think>YYY``): vLLM's
``minimax_m3`` reasoning parser drops "that first token only; later unmatched closers stay
visible as content" (``extract_reasoning`` strips a leading end token when the turn does
not start in reasoning, and partitions on the first end token otherwise, so a repeated one
stays in the content; its streaming path applies the same tolerance once, at the response
start). ``end_in_content="drop_leading"`` says exactly that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reasonspan.runtime.core.errors import InvalidOptionError
from reasonspan.runtime.core.spec import (
    TEMPLATE_NEWLINES_CONTENT,
    TEMPLATE_NEWLINES_REASONING,
    ReasoningSpec,
    Trim,
)
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

MINIMAX_M2_TOOL_CALLS = ToolFormat(
    kinds=("xml_invoke",),
    open=("<minimax:tool_call>",),
    close=("</minimax:tool_call>",),
    source="MiniMax-M2's chat_template.jinja writes `<minimax:tool_call>\\n` then "
    '`<invoke name="NAME"><parameter name="KEY">VALUE</parameter></invoke>\\n` per call and '
    "`</minimax:tool_call>` (strings raw, other values tojson); vLLM's minimax_m2 tool parser",
)

MINIMAX_M3_TOOL_CALLS = ToolFormat(
    kinds=("xml_nested",),
    open=("]<]minimax[>[<tool_call>",),
    close=("]<]minimax[>[</tool_call>",),
    source="MiniMax-M3's chat_template.jinja writes `]<]minimax[>[<tool_call>\\n`, per call "
    '`]<]minimax[>[<invoke name="NAME">`, an element per argument (its to_xml macro: mappings '
    "as elements, lists as <item>, booleans tojson, None left out) and "
    "`]<]minimax[>[</invoke>\\n`, then `]<]minimax[>[</tool_call>`; every tag led by the "
    "namespace token",
)


@register
class MiniMaxM2Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="minimax_m2",
        aliases=("minimax",),
        start=("<think>",),
        end=("</think>",),
        tool=("<minimax:tool_call>",),
        turn=("]~b]",),
        required=("</think>",),
        tool_calls=MINIMAX_M2_TOOL_CALLS,
        prompt_start=True,
        reasoning_trim=TEMPLATE_NEWLINES_REASONING,
        content_trim=TEMPLATE_NEWLINES_CONTENT,
        start_source=("template: MiniMax-M2's chat_template.jinja ends with `]~b]ai\\n<think>\\n`"),
        notes="the model never emits the start marker; the turn starts in reasoning; "
        "newlines next to the markers trimmed from the text",
    )
    hint = DetectionHint(model_types=("minimax_m2",))


@register
class MiniMaxM2AppendThinkParser(ReasoningParser):
    spec = ReasoningSpec(
        name="minimax_m2_append_think",
        thinking_default=False,
        content_trim=Trim(prefix="<think>", prefix_always=True),
        tool_calls=MINIMAX_M2_TOOL_CALLS,
        start_source="template: as minimax_m2; thinking is reported as content by design",
        notes="everything is content, prefixed with <think>",
    )


_MM_START = "<mm:think>"
_MM_END = "</mm:think>"
_MM_MODES = ("enabled", "adaptive", "disabled")
"""The thinking_mode values of MiniMax M3's chat template; any other is refused."""


@register
class MiniMaxM3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="minimax_m3",
        start=(_MM_START,),
        end=(_MM_END,),
        tool=("<tool_call>",),
        turn=("]~b]",),
        # The turn marker too: on a vocabulary where the markers are several tokens, the
        # prompt scan still stops at the current turn (matched on bytes).
        text_markers=(_MM_START, _MM_END, "]~b]"),
        tool_calls=MINIMAX_M3_TOOL_CALLS,
        prompt_start=False,
        start_in_content="enter",
        end_in_content="drop_leading",
        thinking_switches=(),
        start_source=(
            "template: MiniMax-M3's chat_template.jinja ends with `]~b]ai\\n`, and `<mm:think>` "
            'only with thinking_mode "enabled"'
        ),
        notes='turn starts in reasoning only with thinking_mode "enabled"; markers may be '
        "multi-token",
    )

    @classmethod
    def resolve_switches(cls, kwargs: Mapping[str, Any]) -> tuple[bool, bool]:
        mode = kwargs.get("thinking_mode")
        if mode is not None and mode not in _MM_MODES:
            raise InvalidOptionError("thinking_mode", mode, '"enabled", "adaptive" or "disabled"')
        return True, mode == "enabled"
