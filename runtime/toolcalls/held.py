"""The tokens a request's tool-call extractor holds, and what their bytes say.

:class:`~reasonspan.runtime.toolcalls.extract.ToolCallExtractor` decides regions; this base
keeps the held run and answers questions about the open region's bytes: the body so far
(grown token by token, never joined again), where the opener ends, whether a cut falls
inside a string argument, which held token a byte offset falls in. Its own module because
these reads need the held tokens but none of the extractor's decisions.
"""

from __future__ import annotations

from typing import TypeVar

from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING, TOOL
from reasonspan.runtime.core.tool_format import CompiledToolFormat
from reasonspan.runtime.toolcalls.region_bytes import (
    WS,
    Bytes,
    ends_in_json_value,
    ends_in_string,
    first_marker,
)

_B = TypeVar("_B", bytes, bytearray)

BODY = (CONTENT, TOOL, DELIMITER)
"""Labels whose tokens are text of a region's body. A marker the reasoning machine consumes
in the answer (a stray ``</think>`` or ``<channel|>`` it drops) is, inside a call, text of
an argument (``text:<|"|>close with <channel|><|"|>``): special tokens inside a call are
never skipped."""

Item = tuple[int, int, list[tuple[bytes, int, int]] | None]
"""A held token: ``(id, label, spill parts)``."""


class HeldRegion:
    """The held tokens of one request's extractor and the open region's bytes."""

    __slots__ = ("_buf", "_buf_n", "_close_from", "_fmt", "_held", "_pending")

    def __init__(self, fmt: CompiledToolFormat) -> None:
        self._fmt = fmt
        self._held: list[Item] = []
        """Tokens not decided yet: a possible marker start (outside), or the region and
        everything after its first token (inside)."""
        self._pending: tuple[int, bytes] | None = None
        """The first close marker of the open region that its kind read as argument text
        (:meth:`ToolFormat.could_end`): ``(held tokens through it, bytes after it in its
        last token)``; the region closes there if the output ends right after it."""
        self._buf = bytearray()
        self._buf_n = 0
        self._close_from = 0
        """While a region is open: its body bytes so far (those of ``_held[:_buf_n]``),
        grown as tokens come (:meth:`_grown`), and the offset in them from which a byte
        close marker is still undecided. A closer found before it was decided already (a
        string argument's text, or ``_pending``: both depend only on the bytes before it),
        so a long call costs each token once, not its whole region again."""

    def _grown(self) -> bytearray:
        """The open region's body bytes, grown by the tokens held since the last call
        (:meth:`_region_bytes` of the whole region, without joining it again)."""
        held = self._held
        n = self._buf_n
        if n == len(held) - 1:  # one token since the last call: the common case
            t, lab, parts = held[n]
            if lab in BODY:
                self._buf += self._fmt.token_bytes[t] if parts is None else self._bytes(held[n])
            self._buf_n = n + 1
        elif n < len(held):
            table = self._fmt.token_bytes
            self._buf += b"".join(
                [
                    table[t] if parts is None else self._bytes((t, lab, parts))
                    for t, lab, parts in held[self._buf_n :]
                    if lab in BODY
                ]
            )
            self._buf_n = len(held)
        return self._buf

    def _through(self, buf: Bytes, end_byte: int) -> tuple[int, bytes]:
        """The held tokens through the one that completes a closer ending at ``end_byte``
        of the region's bytes ``buf``, and the bytes of that token after the closer."""
        pos, n = 0, 0
        while n < len(self._held) and pos < end_byte:
            item = self._held[n]
            if item[1] in BODY:
                pos += len(self._bytes(item))
            n += 1
        return n, bytes(buf[end_byte:pos])

    def _pending_reads(self) -> bool:
        """At the finish: does the output end with the close marker that was taken for
        argument text? Then that marker closes the region after all (GLM's
        ``<arg_value>celsius</tool_call>``; a malformed body goes back to the content);
        otherwise the region is a call cut by the end of the output, dropped."""
        assert self._pending is not None
        n, after = self._pending
        return n == len(self._held) and not after.strip(WS)

    def _could_end(self, buf: Bytes) -> bool:
        """May a close marker end the region here (its bytes so far ``buf``)?
        (:meth:`ToolFormat.could_end`; only formats with a completion check decode.)"""
        fmt = self._fmt.fmt
        if not fmt.checks_completion:
            return True
        return fmt.could_end(self._body(bytes(buf))[1].decode("utf-8", "replace"))

    def _region_bytes(self, n: int | None = None) -> bytes:
        """The body bytes of ``_held[:n]``: for the whole region or all but its last token
        (what closing and the finish ask for), cut from :meth:`_grown`, not joined again."""
        held = self._held
        if n is None or n == len(held):
            return bytes(self._grown())
        if n in (-1, len(held) - 1):
            last = held[-1]
            buf = self._grown()
            return bytes(buf[: len(buf) - len(self._bytes(last))] if last[1] in BODY else buf)
        return b"".join(self._bytes(item) for item in held[:n] if item[1] in BODY)

    @property
    def _quoted(self) -> bool:
        """The format has strings a close marker may sit in (JSON or a quote marker)."""
        return self._fmt.fmt.json_strings or bool(self._fmt.quote)

    def _bytes(self, item: Item) -> bytes:
        """A token's answer bytes: all of them, or for a token the reasoning machine split
        (spill parts), the parts that are not reasoning."""
        t, _, parts = item
        if parts is None:
            return self._fmt.token_bytes[t]
        return b"".join(d for d, ch, _ in sorted(parts, key=lambda p: p[2]) if ch != REASONING)

    def _in_argument(self, buf: Bytes) -> bool:
        """Does the region so far (``buf``) end inside a JSON string argument, where the
        format says where those are (``json_strings``, ``string_quote``, ``json_after``)?"""
        fmt = self._fmt.fmt
        if self._quoted and self._in_string(buf):
            return True
        return bool(fmt.json_after) and self._in_json_after(buf)

    def _in_json_after(self, buf: Bytes) -> bool:
        """Is ``buf`` cut inside a string of a JSON value after a ``json_after`` marker?"""
        markers = tuple(m.encode("utf-8") for m in self._fmt.fmt.json_after)
        return ends_in_json_value(buf, markers, self._opener(buf)[1])

    def _in_string(self, buf: Bytes) -> bool:
        """Does the body in ``buf`` (the region so far) end inside a string argument?"""
        return ends_in_string(buf, self._opener(buf)[1], self._fmt.quote)

    def _opener(self, buf: Bytes) -> tuple[int, int, bool]:
        """Where the region's opener begins and ends in its bytes (0, 0 for a region that
        a ``leading`` character opened: that character is part of the body), and whether
        it is an ``open_in_body`` marker (the body's own first text). A byte opener
        begins in the region's first token (:meth:`_find_open` released every token
        before it), so only that token's bytes and a marker's length after them are
        searched: a long region costs no more."""
        fmt = self._fmt
        first = self._held[0]
        if first[0] in fmt.open_ids:
            return 0, len(fmt.token_bytes[first[0]]), False
        window = len(self._bytes(first)) + fmt.max_marker
        at, size = first_marker(buf[:window], fmt.open_bytes)
        if at < 0:
            return 0, 0, False
        in_body = any(buf.startswith(m, at) for m in fmt.body_open_bytes)
        return at, at + size, in_body

    def _body(self, buf: _B) -> tuple[_B, _B]:
        """The text before the opener (in its first token) and the body a kind reads."""
        at, start, in_body = self._opener(buf)
        keep = in_body or self._fmt.fmt.keep_open_text
        return buf[:at], buf[at:] if keep else buf[start:]
