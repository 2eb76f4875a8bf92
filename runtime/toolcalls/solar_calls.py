"""Kind ``solar``: Upstage Solar Open 2's marker-delimited calls.

Between ``<|tool_call:start|>`` and ``<|tool_call:end|>`` (the format's region; each one
special token, as are the argument markers), a call is written::

    NAME
    <|tool_arg:start|>KEY<|tool_arg:value|>VALUE<|tool_arg:end|>
    …

(vLLM's ``solar_open2`` tool parser and its tests, SGLang's port of it: a newline after
the name and after each argument). A value is raw text, so it is typed from the offered
tool's schema (:func:`.values.typed_value`, as vLLM coerces it to the declared type).

Reading rules, from vLLM's parser:

- the name is the text before the first newline (or argument), one word;
- a value runs to its ``<|tool_arg:end|>``; one the model left out ends at the next
  ``<|tool_arg:start|>`` or at the end of the call;
- a repeated argument name keeps its first value (vLLM streams the first one and keeps
  both paths on it);
- a ``<|tool_call:start|>`` inside the region means the model dropped a call's end marker:
  the region holds one call per start marker (vLLM resyncs on a bare start marker the same
  way); a part that does not read is dropped and the others kept;
- anything else between the arguments (other than whitespace) makes the call invalid.

Where vLLM types a value written without a schema as a string, :func:`.typed_value` reads
JSON objects, arrays, numbers, booleans and null as JSON (the rule every bare-value kind
here follows); vLLM also turns a literal ``null`` into null under any declared type, where
an ``integer`` property here keeps the text ``"null"``.
"""

from __future__ import annotations

from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, checked_call
from reasonspan.runtime.toolcalls.sections import plain_name, skip_any_space
from reasonspan.runtime.toolcalls.values import typed_value

CALL_START = "<|tool_call:start|>"
ARG_START, ARG_VALUE, ARG_END = "<|tool_arg:start|>", "<|tool_arg:value|>", "<|tool_arg:end|>"


def _value_end(body: str, i: int) -> tuple[int, int]:
    """Where the value starting at ``body[i]`` ends, and where reading resumes."""
    end = body.find(ARG_END, i)
    nxt = body.find(ARG_START, i)
    if end >= 0 and (nxt < 0 or end < nxt):
        return end, end + len(ARG_END)
    stop = len(body) if nxt < 0 else nxt
    return stop, stop


def _call(body: str, tools: Tools) -> ToolCall | None:
    first = body.find(ARG_START)
    name = plain_name(body if first < 0 else body[:first])
    if name is None:
        return None
    args: dict[str, Any] = {}
    i = len(body) if first < 0 else first
    while i < len(body):
        if not body.startswith(ARG_START, i):
            return None  # text between arguments
        sep = body.find(ARG_VALUE, i)
        if sep < 0:
            return None
        key = body[i + len(ARG_START) : sep].strip()
        if not key or ARG_START in key:
            return None
        start = sep + len(ARG_VALUE)
        end, i = _value_end(body, start)
        if key not in args:
            args[key] = typed_value(body[start:end], tools.property_schema(name, key))
        i = skip_any_space(body, i)
    return checked_call(name, args)


@body_kind("solar", markers=(CALL_START, ARG_START, ARG_VALUE, ARG_END))
def parse_solar(body: str, tools: Tools) -> list[ToolCall] | None:
    calls = [call for part in body.split(CALL_START) if (call := _call(part, tools)) is not None]
    return calls or None
