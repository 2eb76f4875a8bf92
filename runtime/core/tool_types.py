"""What a tool-call format produces, and what it is told about the offered tools.

Small frozen Structs, as everything else on the wire: a :class:`ToolCall` is one complete
call (function name, arguments as one JSON object text), and :class:`Tools` is the request's
offered functions by name, so a format that writes untyped values (XML parameters, GLM
values, Gemma 4) can type them from the function's JSON Schema.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from reasonspan.runtime.core.errors import InvalidOptionError
from reasonspan.runtime.core.nesting import MAX_NESTING, nested_deeper_than


class ToolCall(msgspec.Struct, frozen=True):
    """One complete tool call, as a server returns it in ``tool_calls``.

    ``arguments`` is the JSON text of one object (OpenAI's ``function.arguments``), compact
    and with non-ASCII characters kept as they are."""

    name: str
    arguments: str


class Tools:
    """The offered functions of one request: ``parameters`` schemas by function name.

    Built once per request from the OpenAI ``tools`` list (``{"type": "function",
    "function": {"name", "parameters"}}``); a bare function object (``{"name", ...}``) is
    accepted too, as some clients send it. Anything else raises
    :class:`InvalidOptionError` naming the entry."""

    __slots__ = ("_params",)

    def __init__(self, tools: Sequence[Mapping[str, Any]] | None = None) -> None:
        self._params: dict[str, Mapping[str, Any]] = {}
        for i, tool in enumerate(tools or ()):
            if not isinstance(tool, Mapping):
                raise InvalidOptionError(f"tools[{i}]", tool, "a function tool object")
            fn = tool.get("function", tool) if tool.get("type", "function") == "function" else None
            if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
                raise InvalidOptionError(
                    f"tools[{i}]", tool, '{"type": "function", "function": {"name": ...}}'
                )
            params = fn.get("parameters")
            self._params[fn["name"]] = params if isinstance(params, Mapping) else {}

    def __contains__(self, name: object) -> bool:
        return name in self._params

    def __len__(self) -> int:
        return len(self._params)

    @property
    def names(self) -> list[str]:
        return list(self._params)

    def parameters(self, name: str) -> Mapping[str, Any]:
        """The function's ``parameters`` schema ({} when unknown or not given)."""
        return self._params.get(name, {})

    def property_schema(self, name: str, key: str) -> Mapping[str, Any]:
        """The schema of one argument of one function ({} when unknown)."""
        props = self.parameters(name).get("properties")
        if isinstance(props, Mapping):
            got = props.get(key)
            if isinstance(got, Mapping):
                return got
        return {}


NO_TOOLS = Tools()


def as_tools(tools: Tools | Sequence[Mapping[str, Any]] | None) -> Tools:
    if isinstance(tools, Tools):
        return tools
    if tools is not None and (isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence)):
        raise InvalidOptionError("tools", tools, "a list of function tools")
    return Tools(tools) if tools else NO_TOOLS


_encoder = msgspec.json.Encoder()


class InvalidArgumentsError(ValueError):
    """A call's arguments that no JSON text can carry faithfully. Raised inside a body
    kind, it makes the call invalid (:meth:`ToolFormat.parse` reads nothing), so the
    region goes back to the content rather than being sent with altered values."""


def dump_arguments(value: Mapping[str, Any]) -> str:
    """Arguments as compact JSON text with non-ASCII kept (msgspec writes UTF-8 as is).

    Refused (:class:`InvalidArgumentsError`): arguments nesting more than
    :data:`~reasonspan.runtime.core.nesting.MAX_NESTING` containers one inside the other (a
    client's JSON code recurses over them), and a float that is not finite (``1e999``
    reads as infinity, which JSON cannot hold: it would be sent as ``null``)."""
    if nested_deeper_than(value, MAX_NESTING):
        raise InvalidArgumentsError(f"arguments nest more than {MAX_NESTING} containers deep")
    if _has_non_finite(value):
        raise InvalidArgumentsError("arguments hold a number JSON cannot hold (inf or nan)")
    return _encoder.encode(value).decode("utf-8")


def checked_call(name: str, args: object) -> ToolCall | None:
    """The call, or None when ``args`` is not an object JSON can carry
    (:func:`dump_arguments`): a kind that reads several calls drops this one and keeps
    its siblings."""
    if not isinstance(args, Mapping):
        return None
    try:
        return ToolCall(name=name, arguments=dump_arguments(args))
    except InvalidArgumentsError:
        return None


def _has_non_finite(value: object) -> bool:
    """Any float in ``value`` (nested dicts and lists, checked iteratively: the depth
    was bounded first) that is infinite or nan."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return False
