"""Kind ``plamo3``: PLaMo 3's tool requests.

Inside ``<|plamo:begin_tool_requests:plamo|>`` … ``<|plamo:end_tool_requests:plamo|>`` (the
format's region) each call is::

    <|plamo:begin_tool_request:plamo|>
      <|plamo:begin_tool_name:plamo|>NAME<|plamo:end_tool_name:plamo|>
      <|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{…}
      <|plamo:end_tool_arguments:plamo|>
    <|plamo:end_tool_request:plamo|>

written back to back (vLLM's ``plamo3`` tool parser, ``vllm/tool_parsers/plamo3_tool_parser.py``,
and the tags of ``vllm/reasoning/plamo3_reasoning_parser.py``). The tags are several tokens
each in PLaMo's vocabulary (``<|plamo:begin_``, the name, ``:plamo|>``), so they are read
here on the region's text. The ``<|plamo:constrain|>json<|plamo:msg|>`` after the arguments
tag (a constrained-decoding header) is accepted and may be missing.

Arguments are one JSON object, read as JSON (``raw_decode``): a tag written inside an
argument string is text of the argument. vLLM passes the arguments text through unread and
drops every call of a block when one is malformed; here a call whose name or arguments do
not read is dropped and its siblings are kept (:mod:`.sections`), and a block none of whose
calls reads goes back to the content verbatim.
"""

from __future__ import annotations

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, checked_call
from reasonspan.runtime.toolcalls.sections import json_object_at, plain_name, read_section

REQUEST_BEGIN = "<|plamo:begin_tool_request:plamo|>"
REQUEST_END = "<|plamo:end_tool_request:plamo|>"
NAME_BEGIN = "<|plamo:begin_tool_name:plamo|>"
NAME_END = "<|plamo:end_tool_name:plamo|>"
ARGS_BEGIN = "<|plamo:begin_tool_arguments:plamo|>"
ARGS_HEADER = "<|plamo:constrain|>json<|plamo:msg|>"
ARGS_END = "<|plamo:end_tool_arguments:plamo|>"


def _request(text: str, i: int) -> tuple[ToolCall, int] | None:
    """One request's name and arguments from ``text[i]`` (just after its begin tag), and
    the offset after its arguments' end tag."""
    if not text.startswith(NAME_BEGIN, i):
        return None
    i += len(NAME_BEGIN)
    at = text.find(NAME_END, i)
    if at < 0:
        return None
    name = plain_name(text[i:at])
    i = at + len(NAME_END)
    if name is None or not text.startswith(ARGS_BEGIN, i):
        return None
    i += len(ARGS_BEGIN)
    if text.startswith(ARGS_HEADER, i):
        i += len(ARGS_HEADER)
    got = json_object_at(text, i)
    if got is None:
        return None
    args, j = got
    if not text.startswith(ARGS_END, j):
        return None
    call = checked_call(name, args)
    return None if call is None else (call, j + len(ARGS_END))


@body_kind(
    "plamo3",
    markers=(REQUEST_BEGIN, REQUEST_END, NAME_BEGIN, NAME_END, ARGS_BEGIN, ARGS_HEADER, ARGS_END),
)
def parse_plamo3(body: str, tools: Tools) -> list[ToolCall] | None:
    return read_section(body, REQUEST_BEGIN, REQUEST_END, _request)
