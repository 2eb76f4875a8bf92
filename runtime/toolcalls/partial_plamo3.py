"""Kind ``plamo3`` (PLaMo 3's tool requests) read while its region is open (``partial.py``).

A request is a section call (:mod:`.sections`, as :mod:`.plamo3_calls` reads it):
``<|plamo:begin_tool_request:plamo|>`` begins it, its head is the name between the name
tags followed by the arguments tag (and the optional ``<|plamo:constrain|>json<|plamo:msg|>``
header), its arguments one JSON object, then ``<|plamo:end_tool_arguments:plamo|>`` and
``<|plamo:end_tool_request:plamo|>``. So the section kinds' reader
(:class:`.SectionCallsReader`: its lexer, argument writer and commit rule) reads it, given
this head and the arguments' end tag as the closer before the call-end marker.

Two things differ from the other section kinds: the whole read takes the arguments' end
tag only right after the object's ``}`` (whitespace there drops the call), so the reader
does too: whitespace there loses the call (never sent, or broken once committed); and the
region's close tag is several tokens, so its first ones reach the reader after the last
request: text that may still be that tag is waited on, not read as stray text (which
would make the section malformed).
"""

from __future__ import annotations

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls import plamo3_calls as p
from reasonspan.runtime.toolcalls.partial import opens_with, partial_kind
from reasonspan.runtime.toolcalls.partial_sections import (
    AFTER,
    BETWEEN,
    DROP,
    HEAD_MAX,
    SKIP,
    SectionCallsReader,
)
from reasonspan.runtime.toolcalls.sections import SPACE, plain_name

_CLOSE = "<|plamo:end_tool_requests:plamo|>"
"""The region's close tag (:data:`architectures.plamo3.END_TOOL_REQUESTS`): its first
tokens reach the reader before the region closes."""


def _head(text: str, i: int) -> tuple[int, str | None] | None:
    """``<name tag>NAME<end name tag><arguments tag>[header]``, as :func:`.plamo3_calls._request`
    reads it: where the arguments begin and the name; :data:`DROP` when it does not read;
    None: wait for more text."""
    rest = text[i : i + len(p.NAME_BEGIN)]
    if not text.startswith(p.NAME_BEGIN, i):
        return None if p.NAME_BEGIN.startswith(rest) else DROP
    j = i + len(p.NAME_BEGIN)
    at = text.find(p.NAME_END, j, i + HEAD_MAX)
    if at < 0:
        return None
    name = plain_name(text[j:at])
    j = at + len(p.NAME_END)
    if name is None:
        return DROP
    rest = text[j : j + len(p.ARGS_BEGIN)]
    if not text.startswith(p.ARGS_BEGIN, j):
        return None if p.ARGS_BEGIN.startswith(rest) else DROP
    j += len(p.ARGS_BEGIN)
    rest = text[j : j + len(p.ARGS_HEADER)]
    if len(rest) < len(p.ARGS_HEADER) and p.ARGS_HEADER.startswith(rest):
        return None  # the header may still come
    return (j + len(p.ARGS_HEADER) if rest == p.ARGS_HEADER else j), name


class Plamo3CallsReader(SectionCallsReader):
    """The section kinds' reader with PLaMo 3's tags (module doc)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(p.REQUEST_BEGIN, _head, p.REQUEST_END, noise=False, closers=(p.ARGS_END,))

    def _step(self) -> bool:
        at = self._i
        if self._state == BETWEEN:
            gap = self._text[at:].lstrip(SPACE)
            if gap and len(gap) < len(_CLOSE) and _CLOSE.startswith(gap):
                return False  # the region's close tag, several tokens, may be coming
        text = self._text
        if self._state == AFTER and self._k == 0 and at < len(text) and text[at] in SPACE:
            self._lost()  # not the end tag right after the object: the call is dropped
            self._state = SKIP
            return True
        return super()._step()


@partial_kind("plamo3", opens_with(p.REQUEST_BEGIN))
def _reader(tools: Tools) -> Plamo3CallsReader:
    return Plamo3CallsReader()
