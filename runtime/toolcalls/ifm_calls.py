"""Kind ``ifm``: IFM K2-Horizon's tool-call group.

Inside ``<ifm|tool_calls>`` … ``</ifm|tool_calls>`` (the format's region), each call is
``<ifm|tool_call>…</ifm|tool_call>``, and its body is written in one of the three layouts
the chat template offers (``chat_template_kwargs.tool_call_format``; vLLM's
``k2_horizon`` tool parser reads all three):

- ``xml`` (the default): the function name, then ``<ifm|arg_key>K</ifm|arg_key>``
  ``<ifm|arg_value>V</ifm|arg_value>`` pairs; the template puts a newline after the name
  and after each pair. A value is raw text (strings as written, everything else as JSON),
  so it is typed from the offered tool's schema (:func:`.values.typed_value`);
- ``xml_typed``: the same, with ``<ifm|arg_type>T</ifm|arg_type>`` between key and value;
  the type is used only when the tool's schema says nothing of the argument (``T`` may
  carry a parameter: ``array[string]`` reads as ``array``; ``any`` leaves the text to the
  untyped rule);
- ``json``: one object ``{"name": NAME, "arguments": {…}}``.

Reading rules, from vLLM's parser: the name is one word (no whitespace, no ``<``); a value
runs to the first ``</ifm|arg_value>``; only whitespace may lie between the elements; a
repeated argument name makes the call invalid. Where vLLM rejects the whole group for one
bad call, this kind drops that call and keeps its siblings (:mod:`.sections`, as the
section kinds do); a group none of whose calls reads goes back to the content verbatim.
A call written outside a group (a bare ``<ifm|tool_call>``, which SGLang's
``K2V3Detector`` also reads) is not read: the template always writes the group, and vLLM's
parser needs it.
"""

from __future__ import annotations

import re
from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, checked_call
from reasonspan.runtime.toolcalls.sections import (
    json_object_at,
    plain_name,
    read_section,
    skip_space,
)
from reasonspan.runtime.toolcalls.values import typed_value

CALL_BEGIN, CALL_END = "<ifm|tool_call>", "</ifm|tool_call>"
KEY, KEY_END = "<ifm|arg_key>", "</ifm|arg_key>"
TYPE, TYPE_END = "<ifm|arg_type>", "</ifm|arg_type>"
VALUE, VALUE_END = "<ifm|arg_value>", "</ifm|arg_value>"


def _between(text: str, i: int, open_tag: str, close_tag: str) -> tuple[str, int] | None:
    """The text of ``open_tag…close_tag`` at ``text[i]`` (after whitespace) and the offset
    after it, or None when it is not there."""
    i = skip_space(text, i)
    if not text.startswith(open_tag, i):
        return None
    end = text.find(close_tag, i + len(open_tag))
    if end < 0:
        return None
    return text[i + len(open_tag) : end], end + len(close_tag)


def argument_schema(tools: Tools, name: str, key: str, arg_type: str | None) -> Any:
    """The schema a value is typed by: the tool's, else the one its ``arg_type`` names; the
    streamed reader (partial_ifm) types a value with it, as the whole read does."""
    schema = tools.property_schema(name, key)
    if schema or arg_type is None:
        return schema
    base = arg_type.split("[", 1)[0].strip().lower()
    return {} if base in ("", "any") else {"type": base}


def _xml_call(text: str, i: int, tools: Tools) -> tuple[ToolCall, int] | None:
    """``NAME`` then key/value pairs, up to (not through) the call's end marker."""
    stop = min((at for at in (text.find(KEY, i), text.find(CALL_END, i)) if at >= 0), default=-1)
    name = plain_name(text[i:stop]) if stop >= 0 else None
    if name is None:
        return None
    args: dict[str, Any] = {}
    i = stop
    while (key := _between(text, i, KEY, KEY_END)) is not None:
        k = key[0].strip()
        arg_type = _between(text, key[1], TYPE, TYPE_END)
        value = _between(text, arg_type[1] if arg_type else key[1], VALUE, VALUE_END)
        if not k or k in args or value is None:
            return None
        schema = argument_schema(tools, name, k, arg_type[0] if arg_type else None)
        args[k] = typed_value(value[0], schema)
        i = value[1]
    call = checked_call(name, args)  # (a value JSON cannot hold drops this call alone)
    return None if call is None else (call, i)


def _json_call(text: str, i: int) -> tuple[ToolCall, int] | None:
    got = json_object_at(text, i)
    if got is None:
        return None
    obj, end = got
    name = obj.get("name")
    if not isinstance(name, str) or plain_name(name) != name:
        return None
    call = checked_call(name, obj.get("arguments", {}))
    return None if call is None else (call, end)


def ifm_complete(body: str) -> bool | None:
    """None when ``body`` is not a group of calls; False while an argument value is open
    (a group closer there is text of the value, so far); True otherwise."""
    if not body.lstrip().startswith(CALL_BEGIN):
        return None
    return body.rfind(VALUE) <= body.rfind(VALUE_END)


_NOT_JSON = re.compile(r"\s*[^\s{]")


@body_kind(
    "ifm",
    complete=ifm_complete,
    markers=(CALL_BEGIN, CALL_END, KEY, KEY_END, TYPE, TYPE_END, VALUE, VALUE_END),
)
def parse_ifm(body: str, tools: Tools) -> list[ToolCall] | None:
    def read_call(text: str, i: int) -> tuple[ToolCall, int] | None:
        if _NOT_JSON.match(text, i):
            return _xml_call(text, i, tools)
        return _json_call(text, i)

    return read_section(body, CALL_BEGIN, CALL_END, read_call)
