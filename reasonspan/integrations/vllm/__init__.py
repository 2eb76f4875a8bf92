"""reasonspan as a vLLM plugin: a reasoning parser and a tool parser for every family.

Loaded by vLLM through the ``vllm.general_plugins`` entry point (installing reasonspan is
enough), or by ``--reasoning-parser-plugin reasonspan.integrations.vllm`` /
``--tool-parser-plugin reasonspan.integrations.vllm``: importing this module registers
``reasonspan_<family>`` with vLLM's ``ReasoningParserManager`` and ``ToolParserManager``,
and, with ``REASONSPAN_VLLM_REPLACE=1``, vLLM's own names of the families it maps
(:mod:`.names`). docs/vllm.md is the user's page.
"""

from __future__ import annotations

import importlib
from typing import Any

from reasonspan.integrations.common import family_classes
from reasonspan.integrations.vllm.names import (
    REASONING_NAMES,
    TOOL_NAMES,
    own_name,
    replacing,
)
from reasonspan.integrations.vllm.reasoning import ReasoningAdapter, reasoning_class
from reasonspan.integrations.vllm.tools import ToolAdapter, tool_class

__all__ = ["ReasoningAdapter", "ToolAdapter", "register", "registered"]

_classes: dict[str, tuple[type[ReasoningAdapter], type[ToolAdapter] | None]] = {}


def registered() -> dict[str, tuple[type[ReasoningAdapter], type[ToolAdapter] | None]]:
    """family -> its (reasoning, tool) parser classes, once :func:`register` ran."""
    return dict(_classes)


def _managers() -> tuple[Any, Any, Any, Any]:
    reasoning = importlib.import_module("vllm.reasoning")
    tools = importlib.import_module("vllm.tool_parsers")
    return (
        reasoning.ReasoningParser,
        reasoning.ReasoningParserManager,
        tools.ToolParser,
        tools.ToolParserManager,
    )


def register() -> None:
    """Register every family's parsers with vLLM (the entry point; safe to call again:
    vLLM loads plugins once in each of its processes, and a name registered twice is
    replaced by the same class)."""
    reasoning_base, reasoning_manager, tool_base, tool_manager = _managers()
    replace = replacing()
    for family, rcls, tcls in family_classes(
        _classes,
        lambda f: reasoning_class(f, reasoning_base),
        lambda f: tool_class(f, tool_base),
    ):
        names = [own_name(family), *(REASONING_NAMES.get(family, ()) if replace else ())]
        reasoning_manager.register_module(name=names, module=rcls)
        if tcls is not None:
            names = [own_name(family), *(TOOL_NAMES.get(family, ()) if replace else ())]
            tool_manager.register_module(name=names, module=tcls)


register()
