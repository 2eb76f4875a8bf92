"""Kind ``dsml``: DeepSeek's DSML invokes (V3.2, V4, V4.1).

Inside the calls block (the format's region: ``<｜DSML｜function_calls>`` in V3.2,
``<｜DSML｜tool_calls>`` in V4, ``<｜DSML｜ calls>`` in V4.1), each call is::

    <｜DSML｜invoke name="NAME">
    <｜DSML｜parameter name="KEY" string="true|false">VALUE</｜DSML｜parameter>
    …
    </｜DSML｜invoke>

Facts from DeepSeek's own encoder (``encoding_dsv4.py``: ``encode_arguments_to_dsml`` and
the reference reader ``parse_tool_calls``): a ``string="true"`` value is the string itself,
written raw (quotes, ``<``, newlines and surrounding whitespace are part of it); a
``string="false"`` value is JSON (numbers, booleans, null, arrays, objects). V4.1 writes a
space after the DSML token (``<｜DSML｜ invoke``, ``</｜DSML｜ parameter>``): both spellings
read. A value runs to the first ``</｜DSML｜parameter>``, as in the reference reader, so the
invoke or block markers written inside a value are text of the value.

Where the reference reader raises, this kind is more forgiving only where the meaning is
unambiguous: whitespace between elements is free; ``<｜DSML｜invoke name="x"/>`` is a call
with no arguments (SGLang reports V4 writing it for zero-argument tools); a
``string="false"`` value that is not JSON, or a value with no ``string`` attribute, is typed
from the tool's schema (:func:`.values.typed_value`). A repeated parameter name, or anything
else between elements, means the block is not well formed (it goes back to the content).

A value is raw text, so nothing tells a block closer written inside a value from the real
one: the block ends at the first (``</｜DSML｜tool_calls>`` in a ``string="true"`` value then
leaves a block that does not read, which goes back to the content verbatim; no half call).
"""

from __future__ import annotations

import json
import re
from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, dump_arguments
from reasonspan.runtime.toolcalls.sections import skip_any_space
from reasonspan.runtime.toolcalls.values import typed_value

_T = "｜DSML｜ ?"
# The element patterns, shared with the streamed reader (partial_dsml) so both read one grammar.
INVOKE = re.compile(rf'\s*<{_T}invoke\s+name="([^"]*)"\s*(/?)>')
PARAM = re.compile(rf'\s*<{_T}parameter\s+name="([^"]*)"(?:\s+string="(true|false)")?\s*>')
PARAM_END = re.compile(rf"</{_T}parameter>")
INVOKE_END = re.compile(rf"\s*</{_T}invoke>")


def read_value(text: str, string: str | None, schema: Any) -> Any:
    """A parameter's raw text as its value, by its ``string`` attribute (module doc); the
    streamed reader (partial_dsml) reads a closed value with it, as the whole read does."""
    if string == "true":
        return text
    if string == "false":
        try:
            return json.loads(text)
        except ValueError:
            pass
    return typed_value(text, schema)


def _invoke(body: str, i: int, tools: Tools) -> tuple[ToolCall, int] | None:
    m = INVOKE.match(body, i)
    if m is None or not m.group(1):
        return None
    name = m.group(1)
    i = m.end()
    args: dict[str, Any] = {}
    if not m.group(2):
        while (p := PARAM.match(body, i)) is not None:
            end = PARAM_END.search(body, p.end())
            key = p.group(1)
            if end is None or key in args:
                return None
            raw = body[p.end() : end.start()]
            args[key] = read_value(raw, p.group(2), tools.property_schema(name, key))
            i = end.end()
        close = INVOKE_END.match(body, i)
        if close is None:
            return None
        i = close.end()
    return ToolCall(name=name, arguments=dump_arguments(args)), i


@body_kind("dsml")
def parse_dsml(body: str, tools: Tools) -> list[ToolCall] | None:
    calls: list[ToolCall] = []
    i = 0
    while skip_any_space(body, i) < len(body):
        got = _invoke(body, i, tools)
        if got is None:
            return None
        call, i = got
        calls.append(call)
    return calls
