"""vLLM's text conventions, and the few protocol objects the plugin builds.

vLLM's parsers return ``None``, not ``""``, for a field with no text (``extract_reasoning``
gives ``(None, "answer")`` for an output without reasoning), and a streamed delta that
releases nothing is ``None``.

Whitespace: vLLM's built-ins keep the layout whitespace next to markers that reasonspan's
family trims take off (the newlines a template writes after ``<think>`` and around
``</think>``): ``"<think>a</think>\n\nb"`` is content ``"\n\nb"`` for vLLM's qwen3 parser.
The plugin's default text mode, ``vllm`` (:func:`text_mode`), follows them: its parsers
keep that whitespace (``ReasoningParser.keep_whitespace``), except for the families whose
vLLM parser trims as reasonspan does (:data:`VLLM_TRIMS`). ``REASONSPAN_VLLM_TEXT=reasonspan``
gives reasonspan's own text, the same as ``parse()`` and reasonspan's server.

vLLM's classes are imported when first used, so this module type-checks and imports
without vLLM.
"""

from __future__ import annotations

import importlib
import os
from functools import cache
from typing import Any

from reasonspan.runtime import ReasoningParser
from reasonspan.runtime.toolcalls import ToolCall

PROTOCOL = "vllm.entrypoints.generate.base.protocol"

TEXT_ENV = "REASONSPAN_VLLM_TEXT"
TEXT_MODES = ("vllm", "reasonspan")

VLLM_TRIMS = frozenset({"ernie45", "gemma4"})
"""Families whose vLLM 0.34 parser strips whitespace too (``ernie45``: the newlines before
its answer; ``gemma4``: its thinking text and the ``thought`` label), so they keep
reasonspan's trims in the ``vllm`` mode."""


VLLM_REASONING_RSTRIP = frozenset(
    {
        "deepseek_v4",
        "deepseek_v41",
        "glm45",
        "glm47",
        "granite_thinking",
        "inkling",
        "kimi_k2",
        "ling3",
        "minimax_m2",
        "mistral",
        "nemotron_v3",
        "step3p5",
    }
)
"""Families whose vLLM 0.34 parser drops the whitespace at the end of the reasoning (its
parser engine's ``strip_trailing_reasoning_whitespace``, read off each built-in: Step-3.5
closes reasoning with ``\n</think>``): in the ``vllm`` mode the plugin's reasoning text
drops it too (:class:`ReasoningTail`), both ways alike."""


def strips_reasoning_tail(family: str) -> bool:
    """Whether the plugin's reasoning text of ``family`` drops its trailing whitespace."""
    return text_mode() == "vllm" and family in VLLM_REASONING_RSTRIP


class ReasoningTail:
    """The streamed side of :data:`VLLM_REASONING_RSTRIP`: whitespace at the end of the
    reasoning streamed so far is held, and sent only in front of more reasoning text, so
    the reasoning deltas join to ``parse()``'s reasoning with its trailing whitespace
    dropped (``rstrip``), however the stream is cut."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held = ""

    def __call__(self, text: str) -> str:
        if not text:
            return text
        joined = self.held + text
        kept = joined.rstrip()
        self.held = joined[len(kept) :]
        return kept


def text_mode() -> str:
    """The plugin's text mode, from :data:`TEXT_ENV` (default ``vllm``); anything else than
    :data:`TEXT_MODES` is an error naming the variable, raised when a parser is built."""
    mode = os.environ.get(TEXT_ENV, "vllm")
    if mode not in TEXT_MODES:
        raise ValueError(f"{TEXT_ENV}={mode!r}: expected one of {', '.join(TEXT_MODES)}")
    return mode


def in_text_mode(parser: ReasoningParser) -> ReasoningParser:
    """``parser`` with the plugin's text mode applied (module doc)."""
    if text_mode() == "vllm" and parser.spec.name not in VLLM_TRIMS:
        parser.keep_whitespace()
    return parser


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
