"""vLLM's text conventions, and the few protocol objects the plugin builds.

vLLM's parsers return ``None``, not ``""``, for a field with no text (``extract_reasoning``
gives ``(None, "answer")`` for an output without reasoning), and a streamed delta that
releases nothing is ``None``. reasonspan's text otherwise comes as ``parse()`` gives it,
with the family's trims (the newlines a template writes after ``</think>``): vLLM's
built-ins keep that whitespace, so the plugin's content may differ from theirs by it
(docs/vllm.md lists the difference).

vLLM's classes are imported when first used, so this module type-checks and imports
without vLLM.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from reasonspan.runtime.toolcalls import ToolCall

PROTOCOL = "vllm.entrypoints.generate.base.protocol"


@cache
def protocol() -> Any:
    """vLLM's OpenAI protocol module (DeltaMessage, ToolCall, ...)."""
    return importlib.import_module(PROTOCOL)


def vllm_text(text: str | None) -> str | None:
    """``""`` becomes ``None``, as vLLM's parsers return an empty field."""
    return text or None


def delta_message(
    reasoning: str, content: str, calls: list[Any] | None = None
) -> Any:  # DeltaMessage | None
    """A streamed delta, or ``None`` when it would carry nothing."""
    if not reasoning and not content and not calls:
        return None
    return protocol().DeltaMessage(
        reasoning=reasoning or None, content=content or None, tool_calls=calls or []
    )


def delta_tool_call(call: ToolCall, index: int) -> Any:  # DeltaToolCall
    """A whole call in one delta: reasonspan sends a call once its markup closed, so the
    name and arguments arrive together (never a fragment of JSON)."""
    p = protocol()
    return p.DeltaToolCall(
        index=index,
        id=p.ToolCall(function=p.FunctionCall(name=call.name, arguments=call.arguments)).id,
        type="function",
        function=p.DeltaFunctionCall(name=call.name, arguments=call.arguments),
    )


def tool_call(call: ToolCall) -> Any:  # ToolCall
    p = protocol()
    return p.ToolCall(function=p.FunctionCall(name=call.name, arguments=call.arguments))
