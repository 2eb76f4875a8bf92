"""Qwen3 (2504, 2507-Thinking), Qwen3.5; and MiMo, whose template differs in its default.

Tool calls (:data:`QWEN_TOOL_CALLS`): inside ``<tool_call>`` … ``</tool_call>``, Hermes JSON
(Qwen3's chat template) or XML functions ``<function=NAME>`` / ``<parameter=KEY>`` (Qwen3-Coder's
and Qwen3.5's / 3.6's chat_template.jinja; vLLM's ``qwen3_coder`` parser), values typed from
the offered tool's schema.

Qwen3.5 and 2507-Thinking prefill ``<think>``; Qwen3 (2504) emits it itself: both work
because a turn starts in reasoning and a leading ``<think>`` is consumed. With
``enable_thinking: false`` the template writes ``<think>\\n\\n</think>\\n\\n`` and the whole
response is content. An unpaired ``<tool_call>`` ends reasoning; a repeated ``</think>`` in
content is dropped.

Text: the template writes ``<think>\\n`` … ``\\n</think>\\n\\n`` and reads a turn back with
``rstrip('\\n')``/``lstrip('\\n')`` around the markers, so those newlines are layout: the
reasoning text loses its newlines next to ``<think>``/``</think>`` (an empty block has no
reasoning text) and the content its leading newlines after ``</think>``. The newline tokens
stay labelled REASONING/CONTENT; only the text is trimmed, the same in streaming.

MiMo (Xiaomi; MiMo-V2-Flash's README, github.com/XiaomiMiMo/MiMo-V2-Flash, serves it with
``--reasoning-parser qwen3`` and asks for thinking per request with
``chat_template_kwargs: {"enable_thinking": true}``): thinking is off unless
``enable_thinking`` is true, so a turn starts in content by default. The markers are still
matched with thinking off, and a ``<think>`` after content opens a block, so a block the
model writes anyway is split off instead of leaking ``</think>`` into the answer.
"""

from __future__ import annotations

import msgspec

from reasonspan.runtime.core.spec import (
    TEMPLATE_NEWLINES_CONTENT,
    TEMPLATE_NEWLINES_REASONING,
    ReasoningSpec,
)
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

QWEN_TOOL_CALLS = ToolFormat(
    kinds=("json", "xml"),
    open=("<tool_call>",),
    close=("</tool_call>",),
    json_strings=True,
    source="Qwen3's chat template (tokenizer_config.json) writes each call as "
    '`<tool_call>\\n{"name": …, "arguments": …}\\n</tool_call>`; Qwen3-Coder\'s and '
    "Qwen3.5's / 3.6's chat_template.jinja as `<tool_call>\\n<function=NAME>\\n"
    "<parameter=KEY>\\nVALUE\\n</parameter>\\n</function>\\n</tool_call>` (vLLM's "
    "qwen3_coder parser reads it)",
)
"""Hermes JSON (Qwen3, Qwen3-Instruct-2507) or XML functions (Qwen3-Coder, Qwen3.5+),
both inside ``<tool_call>`` (kinds ``json`` then ``xml``)."""

QWEN_CODER_TOOL_CALLS = msgspec.structs.replace(
    QWEN_TOOL_CALLS,
    open_in_body=("<function=",),
    source=QWEN_TOOL_CALLS.source + "; Qwen3-Coder may drop the `<tool_call>` and begin "
    "with `<function=` (vLLM's qwen3_coder parser accepts it)",
)
"""As :data:`QWEN_TOOL_CALLS`, and a call may begin at a bare ``<function=`` (Qwen3-Coder
does; only the no-reasoning family declares it, so thinking checkpoints keep the fast path
that matches markers on token ids only)."""

_QWEN3 = ReasoningSpec(
    name="qwen3",
    aliases=("qwen3_5", "qwen3_6", "qwen3_thinking"),
    start=("<think>",),
    end=("</think>",),
    tool=("<tool_call>",),
    turn=("<|im_start|>",),
    required=("<think>", "</think>"),
    prompt_start=True,
    thinking_default=True,
    thinking_switches=("enable_thinking",),
    end_in_content="drop",
    tool_calls=QWEN_TOOL_CALLS,
    reasoning_trim=TEMPLATE_NEWLINES_REASONING,
    content_trim=TEMPLATE_NEWLINES_CONTENT,
    start_source=(
        "template: Qwen3.5's and Qwen3.6's chat_template.jinja end with `<think>\\n` (Qwen3-2504's "
        "ends with `assistant\\n` and the model writes `<think>`, consumed in reasoning)"
    ),
    notes="unpaired <tool_call> ends reasoning; repeated </think> in content dropped; "
    "newlines next to the markers trimmed from the text (the template's own split)",
)


@register
class Qwen3Parser(ReasoningParser):
    spec = _QWEN3
    hint = DetectionHint(model_types=("qwen3", "qwen3_moe", "qwen3_next", "qwen3_5_moe"))


@register
class MimoParser(ReasoningParser):
    spec = msgspec.structs.replace(
        _QWEN3,
        name="mimo",
        aliases=("mimo_v2", "xiaomi_mimo"),
        thinking_default=False,
        thinking_off_keeps_markers=True,
        start_in_content="enter",
        start_source=(
            "documented: MiMo thinks only with `enable_thinking: true` (then its template opens "
            "the block); a `<think>` it writes anyway opens one"
        ),
        notes="as qwen3, but thinking off unless enable_thinking is true (the turn then "
        "starts in content; a <think> the model writes anyway still opens a block)",
    )
    # MiMo ships Qwen's <think> tokens; only its model type tells it apart.
    hint = DetectionHint(model_types=("mimo", "mimo_v2_flash"), needs_evidence=True)


@register
class Qwen3InstructParser(ReasoningParser):
    """Qwen3 checkpoints that never think (Qwen3-Instruct-2507, Qwen3-Coder): no reasoning
    markers, every token is the answer; served for their tool calls (Hermes JSON for
    Instruct-2507, XML functions for Coder, both inside ``<tool_call>``)."""

    spec = ReasoningSpec(
        name="qwen3_instruct",
        aliases=("qwen3_coder", "qwen3_instruct_2507", "qwen3_nothink"),
        turn=("<|im_start|>",),
        prompt_start=False,
        thinking_default=False,
        tool_calls=QWEN_CODER_TOOL_CALLS,
        content_trim=TEMPLATE_NEWLINES_CONTENT,
        start_source=(
            "template: Qwen3-4B-Instruct-2507's and Qwen3-Coder's templates end with "
            "`<|im_start|>assistant\\n` and have no thinking block"
        ),
        notes="no reasoning (all content); tool calls in <tool_call> (Hermes JSON or XML)",
    )
