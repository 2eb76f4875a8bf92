"""The hold-back matcher: byte markers matched over a run of tokens.

A marker that is no single token is matched on the bytes of each id
(``LoadedTokenizer.token_bytes``). Tokens that could begin such a run are flagged ``HOLD``
(:mod:`.marker_tables`) and are held back in the request's :class:`Cursor` until the
following tokens decide. Matching is leftmost, longest-first, and aligned to token
boundaries; a token that ends one marker and may begin the next is carried
(:class:`Carry`), and the bytes of a token that a marker begins or ends inside are spilled
to their channel (:data:`Spill`).

Its own module because it is the one part of the machine that reads bytes: the
single-token families never enter it (``Machine.run`` takes their tokens in one loop), and
the prompt scan reuses it with its own table (``PROBE``). It is a base class of
``Machine`` rather than an object the machine calls, so a held token costs no more calls
than before and a family's machine may override any of its steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING, TOOL
from reasonspan.runtime.core.marker_tables import (
    CUT_STATE,
    END,
    HOLD,
    KIND_MASK,
    PROBE,
    Trans,
)
from reasonspan.runtime.core.spec import MarkerKind

Spill = tuple[int, bytes, int, int]
"""``(index, text bytes, label, after)``: bytes of a token matched as part of a marker that
are not marker bytes (the marker began or ended inside the token). The token is labelled
DELIMITER; its spilled bytes belong to the channel ``label`` (REASONING or CONTENT), and
``after`` counts the consumed markers before them inside this token: 0 before the marker,
1 after it, 2 after a second marker that the same token begins (``></`` in
``<think></think>``). A TOOL marker that begins inside a token spills the bytes before it to
REASONING and the rest of that token (marker included) to CONTENT."""


@dataclass(slots=True)
class Carry:
    """A token whose bytes end one byte marker and may begin the next (a BPE merge such as
    ``></`` in ``<think></think>``). It is matched again from ``start``; if no marker
    claims it, it is labelled ``label`` with the spill ``parts`` decided so far."""

    label: int
    start: int
    parts: list[tuple[bytes, int, int]]
    stage: int


@dataclass(slots=True)
class Cursor:
    """Per-request matcher state: tokens held back because they may begin a marker."""

    held: list[int] = field(default_factory=list)
    held_bytes: bytes = b""
    offset: int = 0
    """Where, inside the first held token, the candidate marker begins."""
    carry: Carry | None = None
    """The first held token (or the next one to be read) already ends a matched marker."""
    started: bool = False
    """A token of this output was decided (kept only by a machine with a lead rule,
    ``Machine.has_lead``; ``clear()`` leaves it, since it is about the output, not the
    held run). Until then the family's rule for the output's first tokens applies."""
    lead_at: int = -1
    """While not started: the length of the caller's output list when this call began, so
    the byte matcher can tell a marker that opens the output (-1: no lead rule now)."""
    cut: bool = False
    """A cut marker passed (``ReasoningSpec.cut``): every later token is a DELIMITER."""

    def clear(self) -> None:
        """Forget the held tokens (a cut stays: it ends the request's output)."""
        self.held.clear()
        self.held_bytes = b""
        self.offset = 0
        self.carry = None


class HoldBackMatcher:
    """The byte-marker matching steps of :class:`~.machine.Machine` (its base class)."""

    # Set by Machine.__init__ (see there).
    token_bytes: list[bytes]
    byte_markers: dict[bytes, MarkerKind]
    prefixes: frozenset[bytes]
    _fits: tuple[tuple[int, ...], ...]
    lut: bytes
    trans: Trans
    lead_end: bool

    def _candidate(self, b: bytes, start: int) -> int:
        """First offset >= start where ``b[offset:]`` begins a marker or holds a whole one."""
        prefixes = self.prefixes
        for i in range(start, len(b)):
            seg = b[i:]
            if seg in prefixes or self._longest_at(seg) is not None:
                return i
        return -1

    def _longest_at(self, seg: bytes) -> bytes | None:
        """The longest byte marker ``seg`` begins with, or None."""
        markers = self.byte_markers
        fits = self._fits
        for length in fits[min(len(seg), len(fits) - 1)]:
            if (m := seg[:length]) in markers:
                return m
        return None

    @staticmethod
    def _cut(
        rest: Sequence[int], cursor: Cursor, out_ids: list[int], out_labels: bytearray
    ) -> None:
        """A cut marker passed: ``rest`` (the tokens after it, in order) and every later
        token are DELIMITERs. Nothing is held at a cut: the marker is one token, and a
        token is read as a marker only when nothing is held."""
        cursor.cut = True
        out_ids.extend(rest)
        out_labels.extend(bytes((DELIMITER,)) * len(rest))

    @staticmethod
    def _lead_seen(cursor: Cursor, out_ids: list[int]) -> None:
        """After a byte-matching call: the output has started once a token was decided (or
        a marker consumed part of a carried one)."""
        if len(out_ids) > cursor.lead_at or cursor.carry is not None:
            cursor.started = True
            cursor.lead_at = -1

    def _leading_end(self, cursor: Cursor, out_ids: list[int], kind: int, label: int) -> bool:
        """An end marker, about to be kept as content, that opens the output: dropped under
        ``end_in_content="drop_leading"`` (the byte matcher's side of :meth:`_lead`)."""
        return self.lead_end and kind == END and label == CONTENT and cursor.lead_at == len(out_ids)

    def _drain(
        self,
        queue: list[int],
        state: int,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None,
        min_offset: int = 0,
        trans: Trans | None = None,
    ) -> int:
        """Match byte markers over ``queue`` (reversed). Leftmost, longest, and the same
        whatever the split of the tokens into calls."""
        lut = self.lut
        tb = self.token_bytes
        trans = trans or self.trans
        prefixes = self.prefixes
        held = cursor.held
        while queue:
            t = queue.pop()
            if not held:
                k = lut[t]
                carry = cursor.carry
                if carry is not None:
                    min_offset = max(min_offset, carry.start)
                if k & HOLD:
                    off = self._candidate(tb[t], min_offset)
                    min_offset = 0
                    if off >= 0:
                        held.append(t)
                        cursor.held_bytes = tb[t]
                        cursor.offset = off
                        if tb[t][off:] in prefixes:
                            continue
                        # The token holds a whole marker: settle it now.
                        state = self._settle(
                            queue, state, cursor, out_ids, out_labels, spill, trans
                        )
                        continue
                min_offset = 0
                if carry is not None:
                    cursor.carry = None
                    self._release_carried(t, carry, state, out_ids, out_labels, spill)
                    continue
                if k & KIND_MASK:
                    label, state = trans[state][k & KIND_MASK]
                    if state == CUT_STATE and trans is not PROBE:
                        out_ids.append(t)
                        out_labels.append(label)
                        self._cut(queue[::-1], cursor, out_ids, out_labels)
                        queue.clear()
                        return state
                    if self._leading_end(cursor, out_ids, k & KIND_MASK, label):
                        label = DELIMITER
                else:
                    label = REASONING if state else CONTENT
                out_ids.append(t)
                out_labels.append(label)
                continue
            cand = cursor.held_bytes + tb[t]
            seg = cand[cursor.offset :]
            if seg in prefixes or self._longest_at(seg) is not None:
                held.append(t)
                cursor.held_bytes = cand
                if seg in prefixes:
                    continue
            else:
                queue.append(t)
            state = self._settle(queue, state, cursor, out_ids, out_labels, spill, trans)
        return state

    def _settle(
        self,
        queue: list[int],
        state: int,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None,
        trans: Trans | None = None,
    ) -> int:
        """The held run can grow no further: emit the longest marker that the held bytes
        begin with, or give up this candidate and look at the held tokens again."""
        held = list(cursor.held)
        off = cursor.offset
        data = cursor.held_bytes
        carry = cursor.carry
        cursor.clear()
        m = self._longest_at(data[off:])
        if m is not None:
            return self._emit_marker(
                m, held, off, data, carry, queue, state, cursor, out_ids, out_labels, spill, trans
            )
        # No marker here: try a later start inside the first token, else release it.
        queue.extend(reversed(held[1:]))
        first = held[0]
        nxt = self._candidate(self.token_bytes[first], off + 1)
        if nxt >= 0:
            queue.append(first)
            cursor.carry = carry
            return self._drain(queue, state, cursor, out_ids, out_labels, spill, nxt, trans)
        if carry is not None:
            self._release_carried(first, carry, state, out_ids, out_labels, spill)
            return state
        out_ids.append(first)
        out_labels.append(REASONING if state else CONTENT)
        return state

    def _emit_marker(
        self,
        m: bytes,
        held: list[int],
        off: int,
        data: bytes,
        carry: Carry | None,
        queue: list[int],
        state: int,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None,
        trans: Trans | None,
    ) -> int:
        """Emit the tokens that overlap marker ``m`` (at ``off`` in the held bytes); later
        ones go back to the queue. A last token whose remaining bytes may begin another
        marker goes back too, carried, so that back-to-back markers both match."""
        tb = self.token_bytes
        end = off + len(m)
        pos = n = 0
        for n, t in enumerate(held, 1):  # noqa: B007
            pos += len(tb[t])
            if pos >= end:
                break
        used, rest = held[:n], held[n:]
        queue.extend(reversed(rest))
        kind = int(self.byte_markers[m])
        label, new_state = (trans or self.trans)[state][kind]
        if off == 0 and carry is None and self._leading_end(cursor, out_ids, kind, label):
            label = DELIMITER
        # The first token already ends a consumed marker: it stays a delimiter whatever
        # this marker is, and its earlier spill parts come first.
        forced = carry is not None and carry.label == DELIMITER
        parts: list[tuple[bytes, int, int]] = list(carry.parts) if forced and carry else []
        stage = carry.stage if forced and carry else 0
        before = data[carry.start : off] if forced and carry else data[:off]
        channel = REASONING if state else CONTENT
        last = used[-1]
        at = end - (pos - len(tb[last]))  # where the marker ends inside the last token
        # Carry the last token when the rest of its bytes may begin another marker.
        again = (
            pos > end
            and (label == DELIMITER or spill is None or (label != TOOL and not forced))
            and (self.lut[last] & (HOLD | KIND_MASK)) == HOLD
            and self._candidate(tb[last], at) >= 0
        )
        first = len(out_ids)
        out_ids.extend(used)
        out_labels.extend([label] * len(used))
        if forced:
            out_labels[first] = DELIMITER
        if spill is not None:
            if label == DELIMITER:
                if before:
                    parts.append((before, channel, stage))
                later = self._spill_delimiter(
                    spill, first, n, parts, stage, data[end:pos], new_state, at if again else -1
                )
                if later is not None:
                    self._carry_back(queue, cursor, out_ids, out_labels, later)
                return new_state
            if forced:
                # A kept or tool marker that begins inside a token that ends a consumed one.
                if before:
                    parts.append((before, channel, stage))
                tail = tb[used[0]][off:]
                parts.append((tail, REASONING if label == REASONING else CONTENT, stage))
                self._spill_parts(spill, first, parts)
                return new_state
            if label == TOOL and off:
                # An implicit end that begins inside a token (DeepSeek V4's ".<" before
                # "｜DSML｜"): the bytes before it stay in the reasoning that it ends.
                spill.append((first, data[:off], REASONING, 0))
                spill.append((first, tb[used[0]][off:], CONTENT, 1))
                return new_state
        if again:
            self._carry_back(queue, cursor, out_ids, out_labels, Carry(label, at, [], 0))
        return new_state

    def _spill_delimiter(
        self,
        spill: list[Spill],
        first: int,
        n: int,
        parts: list[tuple[bytes, int, int]],
        stage: int,
        after: bytes,
        new_state: int,
        carry_at: int,
    ) -> Carry | None:
        """The spill of a consumed marker over its ``n`` tokens from ``first``: ``parts`` (the
        bytes before it, and those a carry brought) on the first token, ``after`` (in the
        channel of ``new_state``) on the last. When the last token is to be read again
        (``carry_at`` >= 0, its offset there), its parts go into the returned carry
        instead, decided when the next marker matches (or does not)."""
        last_parts = parts if n == 1 else []
        last_stage = stage + 1 if n == 1 else 1
        if carry_at >= 0:
            if n > 1:
                self._spill_parts(spill, first, parts)
            return Carry(DELIMITER, carry_at, last_parts, last_stage)
        if after or (n == 1 and stage):
            # An empty part still marks where this marker ends inside the token.
            last_parts.append((after, REASONING if new_state else CONTENT, last_stage))
        self._spill_parts(spill, first, parts)
        if n > 1:
            self._spill_parts(spill, first + n - 1, last_parts)
        return None

    @staticmethod
    def _carry_back(
        queue: list[int], cursor: Cursor, out_ids: list[int], out_labels: bytearray, carry: Carry
    ) -> None:
        """Take the last emitted token back to be read again from ``carry.start``: the rest
        of its bytes may begin another marker."""
        queue.append(out_ids.pop())
        out_labels.pop()
        cursor.carry = carry

    @staticmethod
    def _spill_parts(spill: list[Spill], index: int, parts: list[tuple[bytes, int, int]]) -> None:
        spill.extend((index, data, channel, after) for data, channel, after in parts)

    def _release_carried(
        self,
        t: int,
        carry: Carry,
        state: int,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None,
    ) -> None:
        """No later marker claimed a carried token: it keeps the label of the marker it
        ends; the rest of its bytes go to the current channel."""
        index = len(out_ids)
        out_ids.append(t)
        out_labels.append(carry.label)
        if carry.label == DELIMITER and spill is not None:
            parts = list(carry.parts)
            rest = self.token_bytes[t][carry.start :]
            parts.append((rest, REASONING if state else CONTENT, carry.stage))
            self._spill_parts(spill, index, parts)

    def _flush(
        self,
        state: int,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None,
        trans: Trans,
    ) -> int:
        while cursor.held:
            queue: list[int] = []
            state = self._settle(queue, state, cursor, out_ids, out_labels, spill, trans)
            if queue:
                state = self._drain(queue, state, cursor, out_ids, out_labels, spill, 0, trans)
        return state
