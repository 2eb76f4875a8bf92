"""One request's tool-call regions, found in the labelled token stream.

The reasoning machine labels every token first; this extractor then reads the tokens it
decided, in order, and takes call regions out of the answer:

- a region opens at an ``open`` marker (a token id, or the bytes of a run of tokens: such
  a run is held back until it is decided) or, for a format with ``leading`` characters, at
  the first non-space text of the answer;
- it closes at a ``close`` marker, or at the end of the output when the format has none
  (or says its close marker may be left out: ``close_optional``);
- its tokens are held until then, and only then decoded (its bytes, markers included) and
  read by the format's body kinds: well-formed calls label the region ``TOOL_CALL`` and
  become :class:`ToolCall` s; anything else (a malformed body, a region that never
  closes: ``max_tokens`` cut the call) never becomes a call: a malformed body goes back
  to the content verbatim, labelled ``TOOL`` (kept in the text, never skipped), and a
  call cut by the end of the output is dropped (labelled ``TOOL_CALL``, no call, no
  text), so no half call, and no half-written markup, is ever sent;
- a close marker met while the kind reads the body as an unfinished argument
  (:meth:`ToolFormat.could_end`) is argument text, unless the output ends right after it;
  a region an ``open_in_body`` marker opened that never closes is read at the finish
  (calls, or verbatim content).

Everything after a held token is held too, so the tokens come out in order and every
split of the output into deltas gives the same labels, text and calls (property-tested).
Tokens outside a region cost one set lookup each.
"""

from __future__ import annotations

from typing import TypeVar

from reasonspan.runtime.core.holdback import Spill
from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING, TOOL, TOOL_CALL
from reasonspan.runtime.core.tool_format import CompiledToolFormat
from reasonspan.runtime.core.tool_types import ToolCall, Tools
from reasonspan.runtime.toolcalls.region_bytes import (
    WS,
    Bytes,
    completed_calls,
    ends_in_json_value,
    ends_in_string,
    first_marker,
    strip_closer,
)

_B = TypeVar("_B", bytes, bytearray)

_OUT, _FRESH, _IN = 0, 1, 2

_BODY = (CONTENT, TOOL, DELIMITER)
"""Labels whose tokens are text of a region's body. A marker the reasoning machine consumes
in the answer (a stray ``</think>`` or ``<channel|>`` it drops) is, inside a call, text of
an argument (``text:<|"|>close with <channel|><|"|>``): special tokens inside a call are
never skipped."""

_Item = tuple[int, int, list[tuple[bytes, int, int]] | None]
"""A held token: ``(id, label, spill parts)``."""


class ToolCallExtractor:
    """Per request: feed decided ``(ids, labels, spill)``, get them back with call regions
    relabelled (or held), plus the calls completed."""

    __slots__ = (
        "_buf",
        "_buf_n",
        "_close_from",
        "_fmt",
        "_held",
        "_mode",
        "_pending",
        "_tools",
        "count",
    )

    def __init__(self, fmt: CompiledToolFormat, tools: Tools) -> None:
        self._fmt = fmt
        self._tools = tools
        self._mode = _FRESH if fmt.leading else _OUT
        self._held: list[_Item] = []
        """Tokens not decided yet: a possible marker start (outside), or the region and
        everything after its first token (inside)."""
        self._pending: tuple[int, bytes] | None = None
        """The first close marker of the open region that its kind read as argument text
        (:meth:`ToolFormat.could_end`): ``(held tokens through it, bytes after it in its
        last token)``; the region closes there if the output ends right after it."""
        self.count = 0
        """Calls completed so far."""
        self._buf = bytearray()
        self._buf_n = 0
        self._close_from = 0
        """While a region is open: its body bytes so far (those of ``_held[:_buf_n]``),
        grown as tokens come (:meth:`_grown`), and the offset in them from which a byte
        close marker is still undecided. A closer found before it was decided already (a
        string argument's text, or ``_pending``: both depend only on the bytes before it),
        so a long call costs each token once, not its whole region again."""

    @property
    def trims_gaps(self) -> bool:
        """The format trims the whitespace between the answer and a call
        (:attr:`ToolFormat.trim_gaps`): decode the content with ``call_gaps``."""
        return self._fmt.fmt.trim_gaps

    @property
    def busy(self) -> bool:
        """Tokens are held (a region is open or a marker may be starting)."""
        return bool(self._held)

    def passthrough_ids(self) -> frozenset[int] | None:
        """The opener ids, while :meth:`feed` hands every other answer token back as it
        is (nothing held, outside a region, openers matched on ids only); None otherwise.
        The runtime's output path writes such tokens without calling :meth:`feed`."""
        fmt = self._fmt
        if self._held or self._mode != _OUT or fmt.open_bytes:
            return None
        return fmt.open_ids

    # ------------------------------------------------------------------ feeding

    def feed(
        self, ids: list[int], labels: bytes | bytearray, spill: tuple[Spill, ...] | list[Spill]
    ) -> tuple[list[int], bytearray, list[Spill], list[ToolCall]]:
        fmt = self._fmt
        if (
            not self._held
            and self._mode == _OUT
            and not fmt.open_bytes
            and fmt.open_ids.isdisjoint(ids)
        ):
            return ids, bytearray(labels), list(spill), []
        out_ids: list[int] = []
        out_labels = bytearray()
        out_spill: list[Spill] = []
        calls: list[ToolCall] = []
        parts: dict[int, list[tuple[bytes, int, int]]] = {}
        for idx, data, channel, after in spill:
            parts.setdefault(idx, []).append((data, channel, after))
        for i, t in enumerate(ids):
            self._one((t, labels[i], parts.get(i)), out_ids, out_labels, out_spill, calls)
        return out_ids, out_labels, out_spill, calls

    def finish(self) -> tuple[list[int], bytearray, list[Spill], list[ToolCall]]:
        """End of output: a region that runs to the end is read now (and goes back to the
        content if it does not read as calls); any other open region is a call cut by
        ``max_tokens``, dropped (module doc)."""
        out_ids: list[int] = []
        out_labels = bytearray()
        out_spill: list[Spill] = []
        calls: list[ToolCall] = []
        if self._mode == _IN and self._pending is not None and self._pending_reads():
            n, after = self._pending
            self._close(n, after, out_ids, out_labels, out_spill, calls)
        if self._mode == _IN:
            fmt = self._fmt
            to_end = fmt.fmt.close_optional or not (fmt.close_ids or fmt.close_bytes)
            if to_end or self._opener(self._region_bytes())[2]:
                self._close(len(self._held), b"", out_ids, out_labels, out_spill, calls)
            else:
                self._cut(out_ids, out_labels, out_spill, calls)
        self._release(len(self._held), out_ids, out_labels, out_spill)
        return out_ids, out_labels, out_spill, calls

    # ------------------------------------------------------------------ one token

    def _one(
        self,
        item: _Item,
        ids: list[int],
        labels: bytearray,
        spill: list[Spill],
        calls: list[ToolCall],
    ) -> None:
        t, lab, _ = item
        fmt = self._fmt
        answer = lab in (CONTENT, TOOL)
        if self._mode == _IN:
            self._held.append(item)
            if not answer:
                return
            if t in fmt.close_ids:
                region = self._region_bytes(-1)
                if self._in_argument(region):
                    return  # the marker is text of a string argument
                if not self._could_end(region):
                    if self._pending is None:
                        self._pending = (len(self._held), b"")
                    return  # the marker is text of an unfinished argument, so far
                self._close(len(self._held), b"", ids, labels, spill, calls)
            elif fmt.close_bytes:
                self._find_close(ids, labels, spill, calls)
            return
        if not answer:
            # A marker never spans a token of another channel: what was held is content
            # after all. (A token the reasoning machine split between reasoning and the
            # answer, such as ``.<`` before a text marker that ends reasoning, takes part
            # with its answer bytes only: :meth:`_bytes`.)
            self._release(len(self._held), ids, labels, spill)
            self._emit(item, ids, labels, spill)
            if answer and self._mode == _FRESH:
                self._mode = _OUT
            return
        if t in fmt.open_ids:
            self._release(len(self._held), ids, labels, spill)
            self._enter()
            self._held.append(item)
            return
        if self._mode == _FRESH:
            self._held.append(item)
            data = self._bytes(item).lstrip(WS)
            if not data:
                return  # only space so far: the answer has not begun
            if data[:1] in fmt.leading:
                self._enter()
                return
            self._mode = _OUT
            if not fmt.open_bytes:
                self._release(len(self._held), ids, labels, spill)
                return
            # fall through: the held run may still begin a byte marker
        else:
            self._held.append(item)
        if fmt.open_bytes:
            self._find_open(ids, labels, spill, calls)
        else:
            self._release(len(self._held), ids, labels, spill)

    # ------------------------------------------------------------------ markers on bytes

    def _find_open(
        self, ids: list[int], labels: bytearray, spill: list[Spill], calls: list[ToolCall]
    ) -> None:
        """Outside, with byte open markers: open a region where one is complete, else keep
        only the tokens that may still begin one."""
        fmt = self._fmt
        chunks = [self._bytes(item) for item in self._held]
        buf = b"".join(chunks)
        at, _ = first_marker(buf, fmt.open_bytes)
        if at < 0:
            # Keep the shortest tail of tokens whose bytes may begin a marker.
            at = len(buf)
            for k in range(max(0, len(buf) - fmt.max_marker + 1), len(buf)):
                tail = buf[k:]
                if any(m.startswith(tail) for m in fmt.open_bytes):
                    at = k
                    break
            opened = False
        else:
            opened = True
        j, pos = 0, 0
        while j < len(chunks) and pos + len(chunks[j]) <= at:
            pos += len(chunks[j])
            j += 1
        self._release(j, ids, labels, spill)
        if opened:
            self._enter()
            # The rest of the run may already hold the whole call.
            if fmt.close_bytes:
                self._find_close(ids, labels, spill, calls)

    def _enter(self) -> None:
        """A region opens: its held tokens from here on are its own (:attr:`_buf`)."""
        self._mode = _IN
        self._buf = bytearray()
        self._buf_n = 0
        self._close_from = 0

    def _grown(self) -> bytearray:
        """The open region's body bytes, grown by the tokens held since the last call
        (:meth:`_region_bytes` of the whole region, without joining it again)."""
        held = self._held
        if self._buf_n < len(held):
            table = self._fmt.token_bytes
            self._buf += b"".join(
                [
                    table[t] if parts is None else self._bytes((t, lab, parts))
                    for t, lab, parts in held[self._buf_n :]
                    if lab in _BODY
                ]
            )
            self._buf_n = len(held)
        return self._buf

    def _find_close(
        self, ids: list[int], labels: bytearray, spill: list[Spill], calls: list[ToolCall]
    ) -> None:
        """Inside, with byte close markers: close where one is complete, after the opener.
        Only the bytes from :attr:`_close_from` on are searched."""
        fmt = self._fmt
        buf = self._grown()
        _, start, _ = self._opener(buf)
        at, size = first_marker(buf, fmt.close_bytes, max(start, self._close_from))
        while at >= 0:
            if self._in_argument(buf[:at]):
                pass  # text of a string argument
            elif self._could_end(buf[:at]):
                break
            elif self._pending is None:
                self._pending = self._through(buf, at + size)
            at, size = first_marker(buf, fmt.close_bytes, at + 1)
        if at < 0:
            # A closer may still end in the next token's bytes.
            self._close_from = max(start, len(buf) - fmt.max_marker + 1)
            return
        n, after = self._through(buf, at + size)
        self._close(n, after, ids, labels, spill, calls)

    def _through(self, buf: Bytes, end_byte: int) -> tuple[int, bytes]:
        """The held tokens through the one that completes a closer ending at ``end_byte``
        of the region's bytes ``buf``, and the bytes of that token after the closer."""
        pos, n = 0, 0
        while n < len(self._held) and pos < end_byte:
            item = self._held[n]
            if item[1] in _BODY:
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
            return bytes(buf[: len(buf) - len(self._bytes(last))] if last[1] in _BODY else buf)
        return b"".join(self._bytes(item) for item in held[:n] if item[1] in _BODY)

    @property
    def _quoted(self) -> bool:
        """The format has strings a close marker may sit in (JSON or a quote marker)."""
        return self._fmt.fmt.json_strings or bool(self._fmt.quote)

    def _bytes(self, item: _Item) -> bytes:
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

    # ------------------------------------------------------------------ deciding a region

    def _close(
        self,
        n: int,
        after: bytes,
        ids: list[int],
        labels: bytearray,
        spill: list[Spill],
        calls: list[ToolCall],
    ) -> None:
        """The region is ``_held[:n]`` (a region always begins the held run): read it;
        its calls, or back to content."""
        fmt = self._fmt
        buf = self._region_bytes(n)
        if after:
            buf = buf[: len(buf) - len(after)]
        before, body = self._body(buf)
        got = fmt.fmt.parse(strip_closer(fmt, body).decode("utf-8", "replace"), self._tools)
        region = self._held[:n]
        if got is None:
            for item in region:
                self._emit(item, ids, labels, spill, TOOL)
        else:
            first = len(ids)
            emit = self._emit
            for item in region:
                if item[2] is None:  # the common case, inlined: a region may be long
                    ids.append(item[0])
                    labels.append(TOOL_CALL if item[1] in _BODY else item[1])
                else:
                    emit(item, ids, labels, spill, TOOL_CALL)
            if before.strip(WS):
                spill.append((first, before, CONTENT, 0))
            if after.strip(WS):
                spill.append((len(ids) - 1, after, CONTENT, 0))
            calls.extend(got)
            self.count += len(got)
        rest = self._held[n:]
        self._held = []
        self._mode = _OUT
        self._pending = None
        # Tokens held after the region are decided afresh.
        for item in rest:
            self._one(item, ids, labels, spill, calls)

    def _cut(
        self, ids: list[int], labels: bytearray, spill: list[Spill], calls: list[ToolCall]
    ) -> None:
        """The output ended inside a closable region: no half call is sent. The calls it
        completed before the cut are kept where the format marks where one call ends
        (:attr:`ToolFormat.call_close`); text before the opener in its first token stays
        content; the rest of the region is dropped (``TOOL_CALL``, no text)."""
        fmt = self._fmt
        buf = self._region_bytes()
        before, body = self._body(buf)
        text = body.decode("utf-8", "replace")
        got = completed_calls(fmt.fmt, text, self._tools) if fmt.fmt.call_close else []
        first = len(ids)
        for item in self._held:
            self._emit(item, ids, labels, spill, TOOL_CALL)
        if before.strip(WS) and len(ids) > first:
            spill.append((first, before, CONTENT, 0))
        calls.extend(got)
        self.count += len(got)
        self._held.clear()
        self._mode = _OUT

    # ------------------------------------------------------------------ output

    def _release(self, n: int, ids: list[int], labels: bytearray, spill: list[Spill]) -> None:
        """The first ``n`` held tokens are decided as they were labelled."""
        if n <= 0:
            return
        for item in self._held[:n]:
            self._emit(item, ids, labels, spill)
        del self._held[:n]

    @staticmethod
    def _emit(
        item: _Item,
        ids: list[int],
        labels: bytearray,
        spill: list[Spill],
        relabel: int = -1,
    ) -> None:
        t, lab, parts = item
        if (relabel >= 0 and lab in (CONTENT, TOOL)) or (relabel == TOOL_CALL and lab in _BODY):
            lab = relabel
            if parts and relabel == TOOL_CALL:
                # its answer bytes are the call's; only its reasoning text stays text
                parts = [p for p in parts if p[1] == REASONING]
        if parts:
            at = len(ids)
            spill.extend((at, data, channel, after) for data, channel, after in parts)
        ids.append(t)
        labels.append(lab)
