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
from collections.abc import Callable
from typing import Any

from reasonspan.integrations.common import family_classes
from reasonspan.integrations.vllm.builtins import builtin_class
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
_named: dict[tuple[str, str], type[Any]] = {}
"""(manager table, vLLM name) -> the class registered under it in place of the built-in
(made once: a name registered twice must map to the same class)."""


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


def _in_place_of(
    manager: Any, table: str, family: str, name: str, make: Callable[..., type[Any]]
) -> type[Any]:
    """The class registered under vLLM's ``name``: the family's parser, subclassing the
    built-in class of that name (:mod:`.builtins`)."""
    key = (table, name)
    if key not in _named:
        builtin = builtin_class(manager, name, table)
        _named[key] = make(family, builtin=builtin, vllm_name=name)
    return _named[key]


def register() -> None:
    """Register every family's parsers with vLLM (the entry point; safe to call again:
    vLLM loads plugins once in each of its processes, and a name registered twice is
    replaced by the same class)."""
    reasoning_base, reasoning_manager, tool_base, tool_manager = _managers()
    replace = replacing()

    def make_reasoning(family: str, **named: Any) -> type[ReasoningAdapter]:
        return reasoning_class(family, reasoning_base, **named)

    def make_tool(family: str, **named: Any) -> type[ToolAdapter]:
        return tool_class(family, tool_base, **named)

    for family, rcls, tcls in family_classes(_classes, make_reasoning, make_tool):
        reasoning_manager.register_module(name=own_name(family), module=rcls)
        for name in REASONING_NAMES.get(family, ()) if replace else ():
            cls = _in_place_of(reasoning_manager, "reasoning_parsers", family, name, make_reasoning)
            reasoning_manager.register_module(name=name, module=cls, force=True)
        if tcls is None:
            continue
        tool_manager.register_module(name=own_name(family), module=tcls)
        for name in TOOL_NAMES.get(family, ()) if replace else ():
            cls = _in_place_of(tool_manager, "tool_parsers", family, name, make_tool)
            tool_manager.register_module(name=name, module=cls, force=True)


register()
