"""Kind ``gcml``: GigaChat 3.5's GCML invokes.

Inside ``<｜GCML｜tool_calls>`` … ``</｜GCML｜tool_calls>`` (the format's region), GigaChat
3.5's chat template (``render_gcml_tool_calls``) writes each call as::

    <｜GCML｜invoke name="NAME">
    <｜GCML｜parameter name="KEY" string="true|false">VALUE</｜GCML｜parameter>
    …
    </｜GCML｜invoke>

one per line, the parameters one per line. A string argument is written raw with
``string="true"``; any other value as JSON with ``string="false"``.

Reading rules (vLLM's ``gigachat35`` tool parser, SGLang's GigaChat detector):

- a ``string="true"`` value is the text itself (whitespace kept); a ``string="false"``
  value is JSON, and one that is not JSON is typed from the tool's schema
  (:func:`.values.typed_value`); a parameter without a ``string`` attribute is a string,
  as vLLM reads it;
- a value runs to the first ``</｜GCML｜parameter>``;
- only whitespace lies between elements; an invoke that does not read (no name, a
  repeated parameter, anything else inside it) is dropped and its siblings are kept, as
  vLLM's expressions skip it (:mod:`.sections`); a block none of whose invokes reads goes
  back to the content verbatim.
"""

from __future__ import annotations

import json
import re
from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, checked_call
from reasonspan.runtime.toolcalls.sections import ReadCall, read_section
from reasonspan.runtime.toolcalls.values import typed_value

INVOKE, INVOKE_END = "<｜GCML｜invoke", "</｜GCML｜invoke>"
# The rest of an invoke opener and the parameter tags, shared with the streamed reader
# (partial_gcml) so both read one grammar.
INVOKE_NAME = re.compile(r'\s+name="([^"]+)"\s*>')
PARAM = re.compile(r'\s*<｜GCML｜parameter\s+name="([^"]*)"(?:\s+string="(true|false)")?\s*>')
PARAM_END = "</｜GCML｜parameter>"


def read_value(text: str, string: str | None, schema: Any) -> Any:
    """A parameter's raw text as its value, by its ``string`` attribute (module doc); the
    streamed reader (partial_gcml) reads a closed value with it, as the whole read does."""
    if string != "false":
        return text
    try:
        return json.loads(text)
    except ValueError:
        return typed_value(text, schema)


def _read_invoke(tools: Tools) -> ReadCall:
    def read(body: str, i: int) -> tuple[ToolCall, int] | None:
        m = INVOKE_NAME.match(body, i)
        if m is None:
            return None
        name = m.group(1)
        i = m.end()
        args: dict[str, Any] = {}
        while (p := PARAM.match(body, i)) is not None:
            key = p.group(1)
            end = body.find(PARAM_END, p.end())
            if not key or key in args or end < 0:
                return None
            args[key] = read_value(
                body[p.end() : end], p.group(2), tools.property_schema(name, key)
            )
            i = end + len(PARAM_END)
        call = checked_call(name, args)
        return None if call is None else (call, i)

    return read


@body_kind("gcml", markers=(INVOKE, INVOKE_END, PARAM_END))
def parse_gcml(body: str, tools: Tools) -> list[ToolCall] | None:
    return read_section(body, INVOKE, INVOKE_END, _read_invoke(tools)) or None
