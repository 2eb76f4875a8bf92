"""reasonspan in SGLang: a reasoning detector and a function-call detector for every family.

Loaded by SGLang through the ``sglang.srt.plugins`` entry point (installing reasonspan is
enough: SGLang's launcher runs its general plugins before it parses its flags), or by
importing this module before SGLang builds its parsers. Either way every family is added
to ``ReasoningParser.DetectorMap`` and, where it has a tool-call format,
``FunctionCallParser.ToolCallParserEnum``, as ``reasonspan_<family>``; SGLang's flag
choices are read from those tables once the modules are imported, so
``--reasoning-parser reasonspan_qwen3 --tool-call-parser reasonspan_qwen3`` are accepted.
docs/sglang.md is the user's page.
"""

from __future__ import annotations

import importlib
from typing import Any

from reasonspan.integrations.common import family_classes, own_name
from reasonspan.integrations.sglang.reasoning import ReasoningDetector, reasoning_class
from reasonspan.integrations.sglang.tools import ToolDetector, tool_class

__all__ = ["ReasoningDetector", "ToolDetector", "own_name", "register", "registered"]

_classes: dict[str, tuple[type[ReasoningDetector], type[ToolDetector] | None]] = {}


def registered() -> dict[str, tuple[type[ReasoningDetector], type[ToolDetector] | None]]:
    """family -> its (reasoning, tool-call) detector classes, once :func:`register` ran."""
    return dict(_classes)


def _tables() -> tuple[Any, Any]:
    reasoning = importlib.import_module("sglang.srt.parser.reasoning_parser")
    calls = importlib.import_module("sglang.srt.function_call.function_call_parser")
    base = importlib.import_module("sglang.srt.function_call.base_format_detector")
    return (
        (reasoning.BaseReasoningFormatDetector, reasoning.ReasoningParser.DetectorMap),
        (base.BaseFormatDetector, calls.FunctionCallParser.ToolCallParserEnum),
    )


def register() -> None:
    """Add every family's detectors to SGLang's tables (the entry point; safe to call
    again: a name registered twice maps to the same class)."""
    (reasoning_base, reasoning_map), (tool_base, tool_map) = _tables()
    for family, rcls, tcls in family_classes(
        _classes,
        lambda f: reasoning_class(f, reasoning_base),
        lambda f: tool_class(f, tool_base),
    ):
        reasoning_map[own_name(family)] = rcls
        if tcls is not None:
            tool_map[own_name(family)] = tcls
