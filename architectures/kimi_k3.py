"""Kimi K3: XTML channels built from the special tokens ``<|open|>``, ``<|close|>``, ``<|sep|>``.

An assistant message is ``<|open|>message role="assistant"<|sep|>``, then
``<|open|>think<|sep|>`` … ``<|close|>think<|sep|>``, ``<|open|>response<|sep|>`` …
``<|close|>response<|sep|>``, optionally ``<|open|>tools<|sep|>`` …, and
``<|close|>message<|sep|><|end_of_msg|>``. The channel names are ordinary tokens, so every
marker is three (or more) tokens and is matched on token bytes with hold-back.

With thinking on, the template ends the prompt with the assistant opener and
``<|open|>think<|sep|>``, so the output starts inside reasoning without a start marker;
with ``thinking``/``enable_thinking`` false (or ``reasoning_effort: "none"``) it ends with
``<|open|>response<|sep|>`` and everything is content. A turn starts in reasoning.

The response opener also ends reasoning (a model that skips ``<|close|>think<|sep|>`` still
gets its answer routed to content); it and the response/message closers are stripped from
content. The tools channel ends reasoning and stays in content for the tool parser.

Turn scope: every message in the prompt ends with ``<|end_of_msg|>`` (one token), so the
prompt scan reads only what follows the last one; the assistant opener, matched on bytes,
scopes it as well when a renderer leaves ``<|end_of_msg|>`` out. Either way a
``<|close|>think<|sep|>`` from an earlier turn never counts.

Tool calls (read when a request offers tools; kind ``kimi_k3``): the tools channel
``<|open|>tools<|sep|>`` … ``<|close|>tools<|sep|>`` holds
``<|open|>call tool="NAME" index="N"<|sep|>`` elements with
``<|open|>argument key="KEY" type="TYPE"<|sep|>VALUE<|close|>argument<|sep|>`` children (the
CanIToolCall corpus' renders of K3's encoder ``encoding_k3``); the channel is taken out of
the content. A call cut by ``max_tokens`` is dropped; the calls completed before it are kept.
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.toolcalls import ToolFormat

THINK_OPEN = "<|open|>think<|sep|>"
THINK_CLOSE = "<|close|>think<|sep|>"
RESPONSE_OPEN = "<|open|>response<|sep|>"
RESPONSE_CLOSE = "<|close|>response<|sep|>"
MESSAGE_CLOSE = "<|close|>message<|sep|>"
TOOLS_OPEN = "<|open|>tools<|sep|>"
# A prefix: the opener may carry more attributes (name="…") before its <|sep|>.
ASSISTANT_OPEN = '<|open|>message role="assistant"'

TOOLS_CLOSE = "<|close|>tools<|sep|>"

KIMI_K3_TOOL_CALLS = ToolFormat(
    kinds=("kimi_k3",),
    open=(TOOLS_OPEN,),
    close=(TOOLS_CLOSE,),
    call_close=("<|close|>call<|sep|>",),
    source="Kimi K3's encoder (encoding_k3, as the CanIToolCall corpus renders it) writes an "
    '`<|open|>tools<|sep|>` channel of `<|open|>call tool="…"<|sep|>` elements',
)

_TEXT = (THINK_OPEN, THINK_CLOSE, RESPONSE_OPEN, RESPONSE_CLOSE, MESSAGE_CLOSE, TOOLS_OPEN)


@register
class KimiK3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="kimi_k3",
        start=(THINK_OPEN,),
        end=(THINK_CLOSE, RESPONSE_OPEN),
        tool=(TOOLS_OPEN,),
        strip=(RESPONSE_CLOSE, MESSAGE_CLOSE),
        turn=("<|end_of_msg|>", ASSISTANT_OPEN),
        text_markers=(*_TEXT, ASSISTANT_OPEN),
        prompt_start=True,
        thinking_default=True,
        # Later keys win: `thinking` over `enable_thinking`, as in vLLM.
        thinking_switches=("enable_thinking", "thinking"),
        thinking_off_when=(("reasoning_effort", "none"),),
        start_in_content="enter",
        end_in_content="drop",
        tool_calls=KIMI_K3_TOOL_CALLS,
        start_source=(
            "documented: Kimi K3 thinks by default; the generation prefix may open the think "
            "channel"
        ),
        notes="three-token markers matched on bytes; response wrapper stripped; "
        "scan scoped to the current assistant message",
    )
