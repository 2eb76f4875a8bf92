"""Inline citation markup: taken out of a channel's text, kept as :class:`Citation` records.

Cohere's Command models (Command R7B, Command A and later, "Command 3" in Cohere's own
``melody`` parser, ``parsing/citations.rs``) ground a span of their text with
``<co>cited text</co: 0:[1,2],1:[0]>``: the closing tag lists, per tool call (index 0 is
the request's top-level documents when it has any), the indices of the results the span
rests on. The markup is layout, not text: the reader sees ``cited text`` and, beside the
text, a citation with the span's position in the cleaned text.

:class:`CitationFormatter` is a text formatter (see :mod:`.formatters`): it sees one
channel's decoded text in order, with a ``marker()`` call wherever a delimiter token
passed, and its output depends only on that sequence, never on how the text was chunked.
So ``parse()``, ``TextSplitter`` and the runtime (which all decode through
:class:`~reasonspan.runtime.text.decoding.LabelledDecoder`) give the same cleaned text and the
same citations for any split of the output into deltas. Token labels never change: tokens
of the markup keep the label of their channel; only the text does, as with ``Trim``.

What is held back: only text that may still become markup -- a prefix of ``<co>``, and,
inside a citation, a prefix of ``</co: `` followed by the characters a source list is
written with (digits, ``:``, ``[``, ``]``, ``,``, spaces; at most :data:`MAX_CLOSER` of
them). The cited text itself streams as it comes, as in melody.

Decided here, following melody where it decides: a closing tag with no open citation is
text; an opening tag inside a citation is text; a citation that is still open when its
block ends (a delimiter token, or the end of the output) is dropped -- its opening tag
stays out of the text, which was already sent, and no citation is recorded; malformed
entries of a source list are skipped (``</co: >`` is a citation with no sources).
Positions count Unicode code points (Python ``str`` indices, melody's ``chars()``), in the
channel's text as this formatter emits it (after the family's ``Trim``).

This module knows text formatters; it does not know tokens, parsers or the wire format.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from reasonspan.runtime.core.spec import Trim
from reasonspan.runtime.text.formatters import (
    IdentityFormatter,
    TextFormatter,
    TextFormatterFactory,
    formatter_factory,
)

Channel = Literal["reasoning", "content"]

OPEN = "<co>"
CLOSE = "</co: "
SOURCE_CHARS = frozenset("0123456789:[], ")
"""Characters of a closing tag's source list (``0:[1,2],1:[0]``) and the spaces around."""
MAX_CLOSER = 256
"""Longest source list held back: a longer run is text, so hold-back stays bounded."""


class CitationSource(msgspec.Struct, frozen=True):
    """One ``N:[i,j]`` entry of a closing tag: results ``i``, ``j`` of tool call ``N``."""

    tool_call_index: int
    tool_result_indices: tuple[int, ...]


class Citation(msgspec.Struct, frozen=True):
    """A grounded span: ``text == <channel text>[start:end]`` in the cleaned text."""

    channel: Channel
    start: int
    """Offset of the span in its channel's cleaned text, in code points."""
    end: int
    """One past the span's last code point."""
    text: str
    sources: tuple[CitationSource, ...]


def parse_sources(body: str) -> tuple[CitationSource, ...]:
    """``0:[1,2],1:[0]`` -> sources, skipping entries that do not read as ``int:[ints]``
    (melody's ``convert_string_to_doc_indices`` does the same)."""
    out: list[CitationSource] = []
    parts = body.strip().split("]")
    for part in parts[:-1]:
        head, sep, tail = part.lstrip(",").partition(":")
        if not sep or ":" in tail:
            continue
        head = head.strip()
        if not _is_index(head):
            continue
        items = (item.strip() for item in tail.strip().removeprefix("[").split(","))
        out.append(CitationSource(int(head), tuple(int(i) for i in items if _is_index(i))))
    return tuple(out)


def _is_index(s: str) -> bool:
    return s.isascii() and s.isdigit()


class CitationFormatter:
    """Removes ``<co>`` … ``</co: …>`` from one channel's text (after ``inner``, the
    channel's own trimming) and records a :class:`Citation` per closed span."""

    __slots__ = ("_channel", "_cited", "_inner", "_open", "_pend", "_pos", "_start", "sink")

    def __init__(self, inner: TextFormatter, channel: Channel) -> None:
        self._inner = inner
        self._channel: Channel = channel
        self._pos = 0
        """Code points emitted so far: where the next text lands in the cleaned text."""
        self._pend = ""
        """Text that may still be markup (a prefix of the opening or closing tag)."""
        self._open = False
        self._start = 0
        self._cited: list[str] = []
        self.sink: list[Citation] = []
        """Citations closed so far; a decoder points both channels at one list, so they
        come in the order their closing tags were decoded."""

    # ------------------------------------------------------------------ formatter protocol

    def text(self, s: str) -> str:
        return self._scan(self._inner.text(s))

    def marker(self) -> str:
        """A block ends: what was held is text after all, and an open citation is dropped."""
        out = self._scan(self._inner.marker())
        return out + self._close_block()

    def idle_trail(self) -> str | None:
        return None  # markup may begin anywhere in a token: never bypassed

    def finish(self) -> str:
        out = self._scan(self._inner.finish())
        return out + self._close_block()

    # ------------------------------------------------------------------ scanning

    def _close_block(self) -> str:
        pend, self._pend = self._pend, ""
        self._open = False
        self._cited.clear()
        self._pos += len(pend)
        return pend

    def _emit(self, s: str, out: list[str]) -> None:
        out.append(s)
        self._pos += len(s)
        if self._open:
            self._cited.append(s)

    def _scan(self, s: str) -> str:
        if not s:
            return ""
        if not self._pend and "<" not in s:
            # Plain text with nothing held (almost every token).
            self._pos += len(s)
            if self._open:
                self._cited.append(s)
            return s
        out: list[str] = []
        todo = self._pend + s
        self._pend = ""
        i = 0
        n = len(todo)
        while i < n:
            if not self._pend:
                j = todo.find("<", i)
                if j < 0:
                    self._emit(todo[i:], out)
                    break
                if j > i:
                    self._emit(todo[i:j], out)
                self._pend = "<"
                i = j + 1
                continue
            cand = self._pend + todo[i]
            state = self._match(cand)
            if state == "more":
                self._pend = cand
                i += 1
            elif state == "done":
                self._pend = ""
                i += 1
                self._tag(cand)
            else:
                # Not markup: its '<' is text; look again from the next character.
                held = self._pend
                self._pend = ""
                self._emit("<", out)
                todo = held[1:] + todo[i:]
                n = len(todo)
                i = 0
        return "".join(out)

    def _match(self, cand: str) -> Literal["more", "done", "no"]:
        """Is ``cand`` (it begins with ``<``) a tag of the current state, or a prefix of one?"""
        if not self._open:
            if cand == OPEN:
                return "done"
            return "more" if OPEN.startswith(cand) else "no"
        if len(cand) <= len(CLOSE):
            return "more" if CLOSE.startswith(cand) else "no"
        if not cand.startswith(CLOSE):
            return "no"
        last = cand[-1]
        if last == ">":
            return "done"
        if last in SOURCE_CHARS and len(cand) - len(CLOSE) < MAX_CLOSER:
            return "more"
        return "no"

    def _tag(self, tag: str) -> None:
        if not self._open:
            self._open = True
            self._start = self._pos
            self._cited.clear()
            return
        text = "".join(self._cited)
        self._cited.clear()
        self._open = False
        self.sink.append(
            Citation(
                self._channel,
                self._start,
                self._start + len(text),
                text,
                parse_sources(tag[len(CLOSE) : -1]),
            )
        )


def as_content(citations: list[Citation], reasoning_chars: int) -> list[Citation]:
    """The citations of an output whose reasoning is presented as its content
    (``reasoning_as_content``): that content is the reasoning text, then the content text."""
    out: list[Citation] = []
    for c in citations:
        shift = reasoning_chars if c.channel == "content" else 0
        out.append(
            msgspec.structs.replace(c, channel="content", start=c.start + shift, end=c.end + shift)
        )
    return out


def channel_formatter(
    trim: Trim, citations: Literal["none", "cohere"], channel: Channel
) -> TextFormatterFactory | None:
    """The formatter factory of one channel: its ``Trim``, then citation markup removal
    when the family writes it (None when there is nothing to do, the common case)."""
    inner = formatter_factory(trim)
    if citations == "none":
        return inner
    if inner is None:
        return lambda: CitationFormatter(IdentityFormatter(), channel)
    make = inner
    return lambda: CitationFormatter(make(), channel)
