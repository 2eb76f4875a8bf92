"""Kind ``kimi_k3``: Kimi K3's XTML tools channel.

Inside ``<|open|>tools<|sep|>`` … ``<|close|>tools<|sep|>`` (the format's region), each
call is an element built from the control tokens ``<|open|>``, ``<|close|>``, ``<|sep|>``::

    <|open|>call tool="NAME" index="1"<|sep|>
    <|open|>argument key="KEY" type="string"<|sep|>VALUE<|close|>argument<|sep|>
    …
    <|close|>call<|sep|>

Facts from Kimi K3's encoder as the CanIToolCall corpus records it (``encoding_k3``):
attribute values escape ``&`` and ``"`` (``&amp;`` ``&quot;``), argument values are raw
text; the ``type`` attribute says how a value reads (``string``: the text itself; ``number``,
``integer``, ``boolean``, ``null``, ``array``, ``object``: JSON). A value with no ``type``, or
one that does not read as its type, is typed from the tool's schema
(:func:`.values.typed_value`).

The encoder writes a value's text with ordinary tokens, so a value may hold the text of a
closer (``<|close|>argument<|sep|>``) that only the token ids tell from the real one. The
text this kind reads is the same either way, so a value ends at the first closer that the
next element follows (another argument, or the end of the call), not at the first closer.
The tools closer ``<|close|>tools<|sep|>`` written inside a value still ends the channel (the
region is found before any value is read): the channel then does not read and goes back to
the content verbatim, never as a half call.
"""

from __future__ import annotations

import json
import re
from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, dump_arguments
from reasonspan.runtime.toolcalls.sections import skip_any_space
from reasonspan.runtime.toolcalls.values import typed_value

OPEN, CLOSE, SEP = "<|open|>", "<|close|>", "<|sep|>"
"""The control tokens every element is built from (module doc)."""
# The element patterns, shared with the streamed reader (partial_kimi_k3) so both read one
# grammar; NEXT is what may follow an argument's closer (module doc).
CALL = re.compile(r"\s*<\|open\|>call((?:\s+[\w-]+=\"[^\"]*\")*)\s*<\|sep\|>")
ARG = re.compile(r"\s*<\|open\|>argument((?:\s+[\w-]+=\"[^\"]*\")*)\s*<\|sep\|>")
ARG_END = "<|close|>argument<|sep|>"
NEXT = re.compile(r"\s*(?:<\|open\|>argument[\s<]|<\|close\|>call<\|sep\|>)")
CALL_END = re.compile(r"\s*<\|close\|>call<\|sep\|>")
_ATTR = re.compile(r"([\w-]+)=\"([^\"]*)\"")
_ENTITY = re.compile(r"&(amp|quot|lt|gt|apos);")
_ENTITIES = {"amp": "&", "quot": '"', "lt": "<", "gt": ">", "apos": "'"}


def attributes(text: str) -> dict[str, str]:
    """A tag's ``key="value"`` attributes, entities decoded (shared with partial_kimi_k3)."""
    return {k: _ENTITY.sub(lambda m: _ENTITIES[m.group(1)], v) for k, v in _ATTR.findall(text)}


def read_value(text: str, kind: str | None, schema: Any) -> Any:
    """An argument's raw text as its value, by its ``type`` attribute (module doc); the
    streamed reader (partial_kimi_k3) reads a closed value with it, as the whole read does."""
    if kind == "string":
        return text
    if kind is not None:
        try:
            return json.loads(text)
        except ValueError:
            pass
    return typed_value(text, schema)


def _call(body: str, i: int, tools: Tools) -> tuple[ToolCall, int] | None:
    m = CALL.match(body, i)
    if m is None:
        return None
    name = attributes(m.group(1)).get("tool", "")
    if not name:
        return None
    i = m.end()
    args: dict[str, Any] = {}
    while (a := ARG.match(body, i)) is not None:
        attrs = attributes(a.group(1))
        key = attrs.get("key")
        if key is None or key in args:
            return None
        start = end = a.end()
        while True:
            end = body.find(ARG_END, end)
            if end < 0:
                return None
            if NEXT.match(body, end + len(ARG_END)):
                break
            end += 1
        schema = tools.property_schema(name, key)
        args[key] = read_value(body[start:end], attrs.get("type"), schema)
        i = end + len(ARG_END)
    close = CALL_END.match(body, i)
    if close is None:
        return None
    return ToolCall(name=name, arguments=dump_arguments(args)), close.end()


@body_kind("kimi_k3", markers=(OPEN, CLOSE, SEP))
def parse_kimi_k3(body: str, tools: Tools) -> list[ToolCall] | None:
    calls: list[ToolCall] = []
    i = 0
    while skip_any_space(body, i) < len(body):
        got = _call(body, i, tools)
        if got is None:
            return None
        call, i = got
        calls.append(call)
    return calls
