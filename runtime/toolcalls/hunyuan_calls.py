"""Kind ``hunyuan``: Tencent Hy3 / Hy4 key/value calls, structural tokens with a suffix.

Inside ``<tool_calls{S}>`` … ``</tool_calls{S}>`` (the format's region; ``{S}`` is the
checkpoint's token suffix, ``:opensource`` in the released Hy3, none in its preview), each
call is::

    <tool_call{S}>NAME<tool_sep{S}><arg_key{S}>KEY</arg_key{S}><arg_value{S}>VALUE</arg_value{S}>…</tool_call{S}>

Facts from the engines' readers: vLLM's ``hy_v3`` tool parser and SGLang's
``HunyuanDetector`` (Hy3: ``<tool_sep>`` after the name, a newline between the parts in
the preview's outputs, whitespace allowed between a key and its value) and vLLM's
``hy_v4`` tool parser (Hy4: no ``<tool_sep>``, the name runs to the first ``<arg_key>``;
its tests write no whitespace at all). A value is raw text, typed from the offered tool's
schema (:func:`.values.typed_value`; the engines try boolean, integer, number, JSON, then
the string). Both readers take the suffix from the vocabulary; here it is read from the
body itself (the first ``<tool_call…>`` tag), so one kind serves every checkpoint.

Calls are read with :mod:`.sections`: one that does not read is dropped and its siblings
kept, as the engines keep the calls their expressions match. A value ends at the first
``</arg_value{S}>`` followed (after whitespace) by the next key or the call's close, so
that tag written inside a value is text.
"""

from __future__ import annotations

import re
from typing import Any

from reasonspan.runtime.core.tool_format import ToolFormat, body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, checked_call
from reasonspan.runtime.toolcalls.sections import plain_name, read_section, skip_space
from reasonspan.runtime.toolcalls.values import typed_value

# A call's opener and its suffix, shared with the streamed reader (partial_hunyuan).
CALL_TAG = re.compile(r"<tool_call(:[^\s<>]+)?>")
SECTION = "<tool_calls"
"""The section opener's spelling before its suffix."""


class Tags:
    """The structural tags of one suffix (shared with the streamed reader, partial_hunyuan)."""

    __slots__ = ("call_end", "key", "key_end", "sep", "value", "value_end")

    def __init__(self, suffix: str) -> None:
        self.sep = f"<tool_sep{suffix}>"
        self.key, self.key_end = f"<arg_key{suffix}>", f"</arg_key{suffix}>"
        self.value, self.value_end = f"<arg_value{suffix}>", f"</arg_value{suffix}>"
        self.call_end = f"</tool_call{suffix}>"

    def value_ends(self, text: str, start: int) -> int:
        """Where the value beginning at ``start`` ends (module doc), or -1."""
        at = text.find(self.value_end, start)
        while at >= 0:
            j = skip_space(text, at + len(self.value_end))
            if text.startswith(self.key, j) or text.startswith(self.call_end, j):
                return at
            at = text.find(self.value_end, at + 1)
        return -1


def _name_end(text: str, i: int, tags: Tags) -> int:
    found = [at for t in (tags.sep, tags.key, tags.call_end) if (at := text.find(t, i)) >= 0]
    return min(found, default=-1)


def _read_call(text: str, i: int, tags: Tags, tools: Tools) -> tuple[ToolCall, int] | None:
    """The call whose name starts at ``text[i]``, and the offset of its close tag."""
    at = _name_end(text, i, tags)
    name = plain_name(text[i:at]) if at >= 0 else None
    if name is None:
        return None
    j = at + len(tags.sep) if text.startswith(tags.sep, at) else at
    args: dict[str, Any] = {}
    while True:
        j = skip_space(text, j)
        if text.startswith(tags.call_end, j):
            call = checked_call(name, args)
            return None if call is None else (call, j)
        if not text.startswith(tags.key, j):
            return None
        k_end = text.find(tags.key_end, j)
        if k_end < 0:
            return None
        key = text[j + len(tags.key) : k_end].strip()
        v = skip_space(text, k_end + len(tags.key_end))
        if not key or not text.startswith(tags.value, v):
            return None
        v += len(tags.value)
        end = tags.value_ends(text, v)
        if end < 0:
            return None
        args[key] = typed_value(text[v:end], tools.property_schema(name, key))
        j = end + len(tags.value_end)


def _markers(fmt: ToolFormat) -> tuple[str, ...]:
    """The tags of the suffix the format's section opener carries (``<tool_calls{S}>``:
    the family resolved it from the vocabulary)."""
    out: list[str] = []
    for opener in fmt.open:
        if opener.startswith(SECTION) and opener.endswith(">"):
            suffix = opener[len(SECTION) : -1]
            tags = Tags(suffix)
            out += (f"<tool_call{suffix}>", tags.call_end, tags.sep, tags.key, tags.key_end)
            out += (tags.value, tags.value_end)
    return tuple(out)


@body_kind("hunyuan", markers=_markers)
def parse_hunyuan(body: str, tools: Tools) -> list[ToolCall] | None:
    first = CALL_TAG.search(body)
    suffix = (first.group(1) or "") if first else ""
    tags = Tags(suffix)
    return read_section(
        body,
        f"<tool_call{suffix}>",
        tags.call_end,
        lambda text, i: _read_call(text, i, tags, tools),
    )
