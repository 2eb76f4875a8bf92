"""Kind ``kv``: GLM's key/value calls.

GLM-4.5 / 4.6 / 4.7 / 5.x write each call inside ``<tool_call>`` as the function name,
then ``<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>`` pairs (their chat templates;
GLM-4.5/4.6 put a newline after the name and between pairs, GLM-4.7 and 5.x write them
back to back). A value is raw text: strings as they are (no escaping, whitespace kept),
everything else as JSON, so values are typed from the offered tool's schema
(:func:`.values.typed_value`).

Reading rules (vLLM's ``glm45`` / ``glm47`` parsers, and the corpus):

- the name is the text before the first ``<arg_key>`` (or the whole body), without
  whitespace around it, and has no whitespace or ``<`` in it;
- pairs may be separated by whitespace only; a value ends at the first ``</arg_value>``
  followed (after whitespace) by the next ``<arg_key>`` or the end of the body, so the
  markup written inside a value is text;
- the last value may miss its ``</arg_value>`` when ``</tool_call>`` follows
  (``<arg_value>celsius</tool_call>``): it runs to the end of the body (one trailing
  newline, the GLM-4.5 layout, removed).

A ``</tool_call>`` met while a key or value is open is text of an argument (the
``complete`` check); when the output ends right after it, the extractor closes the call
there (:meth:`.format.ToolFormat.could_end`).
"""

from __future__ import annotations

import re
from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, dump_arguments
from reasonspan.runtime.toolcalls.sections import SPACE, skip_space
from reasonspan.runtime.toolcalls.values import typed_value

_KEY, _KEY_END = "<arg_key>", "</arg_key>"
_VALUE, _VALUE_END = "<arg_value>", "</arg_value>"


def _name(body: str) -> str | None:
    head = body.split(_KEY, 1)[0].strip(SPACE)
    if not head or "<" in head or any(c in head for c in SPACE):
        return None
    return head


def _value_end(body: str, start: int) -> int:
    """Where the value beginning at ``start`` ends (module doc); ``len(body)`` when its
    close is missing."""
    at = body.find(_VALUE_END, start)
    while at >= 0:
        j = skip_space(body, at + len(_VALUE_END))
        if j == len(body) or body.startswith(_KEY, j):
            return at
        at = body.find(_VALUE_END, at + 1)
    return len(body)


_TAGS = re.compile(r"</?arg_(?:key|value)>")


def kv_complete(body: str) -> bool | None:
    """None when ``body`` does not begin with a name; False while a key or value is open
    (the last tag opens one, or closes a key with no value begun yet): a close marker here
    is argument text; True otherwise (a malformed body closes, and is content)."""
    if _name(body) is None:
        return None
    tags = list(_TAGS.finditer(body))
    if not tags:
        return True
    last = tags[-1]
    tag = last.group(0)
    if tag == _KEY_END:
        return bool(body[last.end() :].strip(SPACE))
    return tag == _VALUE_END


@body_kind("kv", complete=kv_complete, markers=(_KEY, _KEY_END, _VALUE, _VALUE_END))
def parse_kv(body: str, tools: Tools) -> list[ToolCall] | None:
    name = _name(body)
    if name is None:
        return None
    args: dict[str, Any] = {}
    i = body.find(_KEY)
    n = len(body)
    while 0 <= i < n:
        i = skip_space(body, i)
        if i == n:
            break
        if not body.startswith(_KEY, i):
            return None
        k_end = body.find(_KEY_END, i)
        if k_end < 0:
            return None
        key = body[i + len(_KEY) : k_end].strip(SPACE)
        i = skip_space(body, k_end + len(_KEY_END))
        if not key or not body.startswith(_VALUE, i):
            return None
        start = i + len(_VALUE)
        end = _value_end(body, start)
        if end == n:
            value = body[start:]
            value = value[:-1] if value.endswith("\n") else value
            i = n
        else:
            value = body[start:end]
            i = end + len(_VALUE_END)
        args[key] = typed_value(value, tools.property_schema(name, key))
    return [ToolCall(name=name, arguments=dump_arguments(args))]
