"""Kind ``mistral``: calls after ``[TOOL_CALLS]`` in the v11+ form ``NAME[ARGS]{…}``.

mistral-common's tokenizers define Mistral's call syntax (the fixtures of the CanIToolCall
corpus are rendered with mistral-common 1.12.0):

- v3 (Mistral-7B-Instruct-v0.3): ``[TOOL_CALLS][{"name": …, "arguments": {…}}, …]``, one
  JSON list; read by the shared ``json`` kind, listed first in the family's format;
- v11 / v13 (Mistral Small 3.2, Devstral, Magistral 2509, Ministral 3): each call is
  ``[TOOL_CALLS]NAME[ARGS]{…}``, repeated for parallel calls; a rendered history may add
  ``[CALL_ID]ID`` before ``[ARGS]`` (llama.cpp's tests assume the model writes it too).

The region runs from the first ``[TOOL_CALLS]`` to the end of the output, so the body this
kind reads is ``NAME[ARGS]{…}`` followed by any further ``[TOOL_CALLS]NAME[ARGS]{…}``. Each
argument object is read as one JSON value, so ``[TOOL_CALLS]`` or ``}`` inside a string
argument is text. A body the end of the output cut (nothing after the marker, a name with
no ``[ARGS]`` yet, arguments whose JSON is still open) gives the calls completed before it
and drops the cut one, as a closable region cut by ``max_tokens`` is dropped; anything
else that does not read (text after the calls, a name with spaces) is not this kind, and
the region goes back to the content verbatim. A call whose arguments are JSON but not an
object a client can take (``[ARGS][1]``, ``1e999``) is dropped and its siblings kept (the
rule of every kind whose calls are delimited: README, "Tool calls"); a body none of whose
calls reads goes back to the content.
"""

from __future__ import annotations

import json
import re

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, checked_call
from reasonspan.runtime.toolcalls.json_calls import is_json_prefix
from reasonspan.runtime.toolcalls.sections import SPACE, skip_space

TOOL_CALLS, ARGS, CALL_ID = "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"

_NAME = re.compile(r"[^\s\[\]{}()\"',;]+")
_ID = re.compile(r"[A-Za-z0-9_-]*")
_decoder = json.JSONDecoder()


def head_ok(head: str) -> bool:
    """``NAME`` or ``NAME[CALL_ID]ID``: what precedes ``[ARGS]`` (or what the end cut)."""
    name, marker, call_id = head.partition(CALL_ID)
    if not _NAME.fullmatch(name.strip(SPACE)):
        return False
    return not marker or bool(_ID.fullmatch(call_id.strip(SPACE)))


@body_kind("mistral", markers=(TOOL_CALLS, ARGS, CALL_ID))
def parse_mistral(body: str, tools: Tools) -> list[ToolCall] | None:
    text = body.strip(SPACE)
    if not text:
        return []  # the output ended right after [TOOL_CALLS]
    if text[0] in "[{":
        # A v3 JSON list the ``json`` kind could not read: cut by the end, or malformed.
        return [] if is_json_prefix(text) else None
    read = _calls(text)
    if read is None or (read and all(call is None for call in read)):
        return None  # not this kind, or none of its calls reads
    return [call for call in read if call is not None]


def _calls(text: str) -> list[ToolCall | None] | None:
    """``text``'s calls in order (None for one that does not read), or None when the body
    is not this kind."""
    calls: list[ToolCall | None] = []
    i, n = 0, len(text)
    while True:
        at = text.find(ARGS, i)
        if at < 0:
            # No [ARGS] yet: a name the end of the output cut, or not this kind.
            return calls if head_ok(text[i:]) else None
        head = text[i:at]
        if not head_ok(head):
            return None
        name = head.partition(CALL_ID)[0].strip(SPACE)
        j = at + len(ARGS)
        j = skip_space(text, j)
        try:
            args, j = _decoder.raw_decode(text, j)
        except ValueError:
            rest = text[j:]
            return calls if not rest or is_json_prefix(rest) else None
        calls.append(checked_call(name, args))
        j = skip_space(text, j)
        if j >= n:
            return calls
        if not text.startswith(TOOL_CALLS, j):
            return None  # text after a call: not a call list
        i = j + len(TOOL_CALLS)
        if not text[i:].strip(SPACE):
            return calls  # the output ended right after the next marker
