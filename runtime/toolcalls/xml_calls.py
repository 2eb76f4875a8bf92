"""Kinds ``xml`` and ``xml_invoke``: XML functions with raw-text parameters.

One reader, two spellings of the same shape:

- ``xml`` (Qwen3-Coder, Qwen3.5 / 3.6 / 3.8 inside ``<tool_call>``; their chat templates
  write ``<function=NAME>\\n<parameter=KEY>\\nVALUE\\n</parameter>\\n</function>``);
- ``xml_invoke`` (MiniMax-M2 inside ``<minimax:tool_call>``; its template writes
  ``<invoke name="NAME">\\n<parameter name="KEY">VALUE</parameter>\\n</invoke>``, several
  invokes per block).

Reading rules (vLLM's ``qwen3_coder`` and ``minimax_m2`` parsers read the same shape; the
rules for markup inside a value and a missing ``</parameter>`` follow the CanIToolCall
corpus' fixtures of real outputs):

- a body is one or more functions, each closed by its function close; anything else
  around them (other than whitespace) is not this kind;
- a parameter's value is the raw text up to the first ``</parameter>`` that is followed
  (after whitespace) by the next parameter, the function close or the end of the body, so
  a ``</parameter>`` written inside a value is text; a parameter the model did not close
  ends where a line starts with the next parameter or the function close;
- one newline right after the opening tag and one right before the closing tag are the
  template's layout and are removed (``"#include\\n\\n"`` → ``"#include\\n"``); all other
  whitespace is the value's;
- the value is typed from the offered tool's schema (:func:`.values.typed_value`);
- a body that never closes its function (cut by ``max_tokens``) is not a call.

A close marker of the region met while a function is still open is text of an argument
(the ``complete`` check): ``<parameter=doc>wrap calls in </tool_call></parameter>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import NO_TOOLS, ToolCall, Tools, dump_arguments
from reasonspan.runtime.toolcalls.sections import skip_space
from reasonspan.runtime.toolcalls.values import typed_value


@dataclass(frozen=True)
class XmlShape:
    """How one family spells the XML function shape."""

    function: re.Pattern[str]
    """The function's opening tag; group 1 is the name."""
    function_close: str
    parameter: re.Pattern[str]
    """A parameter's opening tag; group 1 is the key."""
    parameter_close: str


QWEN_XML = XmlShape(
    function=re.compile(r"<function=([^>\n]+)>"),
    function_close="</function>",
    parameter=re.compile(r"<parameter=([^>\n]+)>"),
    parameter_close="</parameter>",
)
MINIMAX_XML = XmlShape(
    function=re.compile(r'<invoke name="([^"\n]+)">'),
    function_close="</invoke>",
    parameter=re.compile(r'<parameter name="([^"\n]+)">'),
    parameter_close="</parameter>",
)


def _ends_value(text: str, i: int, shape: XmlShape) -> bool:
    """Does a value end before ``i``: only whitespace, then the next parameter, the
    function close or the end of the body?"""
    j = skip_space(text, i)
    return (
        j == len(text)
        or text.startswith(shape.function_close, j)
        or shape.parameter.match(text, j) is not None
    )


def _value_end(text: str, start: int, shape: XmlShape) -> tuple[int, int] | None:
    """``(end of the value, where reading goes on)`` for a value beginning at ``start``
    (module doc), or None when it never ends."""
    close = shape.parameter_close
    closed = -1
    at = text.find(close, start)
    while at >= 0:
        if _ends_value(text, at + len(close), shape):
            closed = at
            break
        at = text.find(close, at + 1)
    # An unclosed parameter: a line that starts the next parameter or closes the function.
    line = text.find("\n", start)
    while line >= 0 and (closed < 0 or line < closed):
        nxt = line + 1
        if text.startswith(shape.function_close, nxt) or shape.parameter.match(text, nxt):
            return nxt, nxt
        line = text.find("\n", nxt)
    if closed < 0:
        return None
    return closed, closed + len(close)


def _layout(value: str) -> str:
    """Remove the template's newline after the opening tag and before the closing one."""
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


_OPEN = "open"
""":func:`_read`'s answer for a body that ends inside a function (more text may finish it)."""


def read_functions(body: str, tools: Tools, shape: XmlShape) -> list[ToolCall] | None:
    """Every function in ``body`` as a call, or None when it is not this shape."""
    got = _read(body, tools, shape)
    return None if isinstance(got, str) else got


def _read(body: str, tools: Tools, shape: XmlShape) -> list[ToolCall] | str | None:
    """The calls; :data:`_OPEN` when the body ends inside a function; None otherwise."""
    calls: list[ToolCall] = []
    i = skip_space(body, 0)
    n = len(body)
    while i < n:
        fn = shape.function.match(body, i)
        if fn is None:
            return None
        name = fn.group(1).strip()
        if not name:
            return None
        args: dict[str, Any] = {}
        i = fn.end()
        while True:
            i = skip_space(body, i)
            if body.startswith(shape.function_close, i):
                i += len(shape.function_close)
                break
            if i >= n:
                return _OPEN
            param = shape.parameter.match(body, i)
            if param is None:
                return None  # stray text
            key = param.group(1).strip()
            got = _value_end(body, param.end(), shape)
            if got is None:
                return _OPEN
            if not key:
                return None
            end, i = got
            value = _layout(body[param.end() : end])
            args[key] = typed_value(value, tools.property_schema(name, key))
        calls.append(ToolCall(name=name, arguments=dump_arguments(args)))
        i = skip_space(body, i)
    return calls or None


def function_complete(body: str, shape: XmlShape) -> bool | None:
    """The ``complete`` check: None when ``body`` does not begin with a function; False
    while it ends inside one (a close marker here is argument text); True when it reads as
    whole functions, or never will (stray text: the region closes, and is content)."""
    if shape.function.match(body, skip_space(body, 0)) is None:
        return None
    return _read(body, NO_TOOLS, shape) != _OPEN


def _qwen_complete(body: str) -> bool | None:
    return function_complete(body, QWEN_XML)


def _minimax_complete(body: str) -> bool | None:
    return function_complete(body, MINIMAX_XML)


@body_kind(
    "xml",
    complete=_qwen_complete,
    markers=(QWEN_XML.function_close, QWEN_XML.parameter_close),
)
def parse_xml(body: str, tools: Tools) -> list[ToolCall] | None:
    return read_functions(body, tools, QWEN_XML)


@body_kind(
    "xml_invoke",
    complete=_minimax_complete,
    markers=(MINIMAX_XML.function_close, MINIMAX_XML.parameter_close),
)
def parse_xml_invoke(body: str, tools: Tools) -> list[ToolCall] | None:
    return read_functions(body, tools, MINIMAX_XML)
