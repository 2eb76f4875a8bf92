"""The compiled state machine: one per (family, tokenizer, thinking switch), shared by all requests.

``compile_machine`` (:mod:`.markers`) resolves a spec's marker strings against a tokenizer:

- a marker that is a single token becomes an entry of ``kinds`` (token id -> MarkerKind);
- any other marker becomes a byte pattern, matched over a run of tokens on the bytes of
  each id (``LoadedTokenizer.token_bytes``). Tokens that could begin such a run are flagged
  ``HOLD`` and are held back until the following tokens decide. Matching is leftmost,
  longest-first, and aligned to token boundaries.

Per-request state is a :class:`Cursor` (the held tokens) plus the reasoning flag the caller
passes in. Decisions depend only on the token sequence, never on how it was split into
deltas: that is what makes streaming and ``parse()`` agree.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from reasonspan.runtime.core.errors import InvalidTokenError
from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING, TOOL
from reasonspan.runtime.core.spec import MarkerKind, ReasoningSpec
from reasonspan.tokenizer.loader import LoadedTokenizer

HOLD = 8
"""Flag in ``Machine.lut``: some suffix of the token's bytes may begin a multi-token marker
(or the token holds a whole one), so it is held until the following tokens decide."""
KIND_MASK = 7

_START, _END, _TOOL, _STRIP, _TURN, _CUT = (int(k) for k in list(MarkerKind)[1:])
CUT_STATE = 2
"""Third row of ``Machine.trans`` for a spec with cut markers: the output is over, every
token is a DELIMITER. Only a CUT marker leads there; a request's cursor remembers it
(``Cursor.cut``), since the caller's state is a bool (reasoning or not)."""

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


class Machine:
    """Marker tables and transitions for one family on one tokenizer.

    ``lut[id]`` holds the marker kind of single-token markers in its low bits and the HOLD
    flag above them; ``trans[state][kind]`` gives ``(label, next_state)``.
    """

    def __init__(
        self,
        spec: ReasoningSpec,
        tokenizer: LoadedTokenizer,
        *,
        thinking: bool,
        prompt_start: bool,
        id_markers: dict[int, MarkerKind],
        byte_markers: dict[bytes, MarkerKind],
    ) -> None:
        self.spec = spec
        self.tokenizer = tokenizer
        self.thinking = thinking
        self.turn_start_reasoning = thinking and prompt_start
        self.vocab_size = tokenizer.vocab_size
        self.id_markers = id_markers
        self.byte_markers = byte_markers
        self._lowest_marker = min(id_markers) if id_markers else self.vocab_size
        self.turn_ids = frozenset(t for t, k in id_markers.items() if k == MarkerKind.TURN)
        # Marker lengths, longest first, so that a match is always the longest marker at
        # its position: one set lookup per length, not a startswith per marker (the HOLD
        # table below asks this for every byte offset of every token: 50 markers took 3 s),
        # and only the lengths a segment can hold (``_fits[n]``: those up to n bytes).
        lengths = sorted({len(m) for m in byte_markers}, reverse=True)
        longest = lengths[0] if lengths else 0
        self._fits: tuple[tuple[int, ...], ...] = tuple(
            tuple(k for k in lengths if k <= n) for n in range(longest + 1)
        )
        self.prefixes: frozenset[bytes] = frozenset(
            m[:i] for m in byte_markers for i in range(1, len(m))
        )
        lut = bytearray(self.vocab_size)
        for tid, kind in id_markers.items():
            lut[tid] = int(kind)
        self.token_bytes: list[bytes] = tokenizer.token_bytes if byte_markers else []
        if byte_markers:
            # A token can only be held if it has a byte some marker starts with: deleting
            # every other byte (C speed) leaves most tokens empty, and only the rest are
            # read offset by offset (0.4-0.6 s of CPU for Qwen3's vocabulary otherwise).
            firsts = {m[0] for m in byte_markers if m}
            others = bytes(c for c in range(256) if c not in firsts) if all(byte_markers) else b""
            for tid, b in enumerate(self.token_bytes):
                if b and not lut[tid] and b.translate(None, others) and self._candidate(b, 0) >= 0:
                    lut[tid] |= HOLD
        self.lut: bytes = bytes(lut)
        self.np_lut = np.frombuffer(self.lut, dtype=np.uint8)
        self.has_byte_markers = bool(byte_markers)
        self.has_cut = any(k == MarkerKind.CUT for k in id_markers.values())
        """A cut marker (``ReasoningSpec.cut``): ``trans`` has the third row CUT_STATE."""
        self.trans = _transitions(spec, thinking)
        # Rules for the output's first tokens (per request: Cursor.started).
        self.lead_end = thinking and spec.end_in_content == "drop_leading"
        self.lead_blank = thinking and spec.blank_before_start == "drop"
        self.has_lead = self.lead_end or self.lead_blank
        self.blank: bytes = b""
        """Per token id: 1 for a token of whitespace only that is no marker (lead_blank)."""
        if self.lead_blank:
            if byte_markers:
                raise ValueError(
                    f"{spec.name}: blank_before_start='drop' needs single-token markers, but "
                    f"{sorted(m.decode('utf-8', 'replace') for m in byte_markers)} are matched "
                    f"on bytes in {tokenizer.source}"
                )
            blank = bytearray(self.vocab_size)
            for tid, b in enumerate(tokenizer.token_bytes[: self.vocab_size]):
                if b.isspace() and not lut[tid]:
                    blank[tid] = 1
            self.blank = bytes(blank)
        self.vectorizable = (
            not byte_markers
            and not self.has_cut
            and not self.has_lead
            and type(self).run is Machine.run
        )
        self.skipped_ids: frozenset[int] | None = None
        """Special tokens text leaves out (``ReasoningParser.skipped_token_ids``), once."""
        self.parser_shared: object | None = None
        """What the parsers on this machine compute once and share (their formatters and
        1-token deltas); this layer does not know parsers, so it only holds it."""

    vectorizable: bool = True
    """True when every marker is one token and no family hook overrides routing, so the
    batch runtime may route this family with table lookups over the whole batch."""

    def route_one(self, token: int, reasoning: bool, cursor: Cursor) -> tuple[int, bool] | None:
        """A custom machine's 1-token fast path: ``(label, still_reasoning)`` for a token it
        can decide at once (updating ``cursor`` as ``run`` would), or None to take the
        general path. The base machine's own fast path lives in the parser."""
        return None

    def new_cursor(self) -> Cursor:
        """Per-request matcher state; a custom machine returns its own Cursor subclass."""
        return Cursor()

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

    # ------------------------------------------------------------------ output routing

    def run(
        self,
        tokens: Sequence[int],
        reasoning: bool,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None = None,
    ) -> bool:
        """Label ``tokens`` (after any held ones); append decided tokens; return the state."""
        lut = self.lut
        trans = self.trans
        if cursor.cut:
            out_ids.extend(tokens)
            out_labels.extend(bytes((DELIMITER,)) * len(tokens))
            return False
        state = 1 if (reasoning and self.thinking) else 0
        if not self.has_byte_markers:
            if self.has_lead and not cursor.started:
                tokens = self._lead(tokens, state, cursor, out_ids, out_labels)
            for i, t in enumerate(tokens):
                k = lut[t]
                if k:
                    label, state = trans[state][k]
                    if state == CUT_STATE:
                        out_ids.append(t)
                        out_labels.append(label)
                        self._cut(tokens[i + 1 :], cursor, out_ids, out_labels)
                        return False
                else:
                    label = REASONING if state else CONTENT
                out_ids.append(t)
                out_labels.append(label)
            return bool(state)
        queue = list(tokens)
        queue.reverse()  # pop() from the end = next token
        lead = self.has_lead and not cursor.started
        if lead:
            cursor.lead_at = len(out_ids)
        state = self._drain(queue, state, cursor, out_ids, out_labels, spill)
        if lead:
            self._lead_seen(cursor, out_ids)
        return state == 1

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

    def _lead(
        self,
        tokens: Sequence[int],
        state: int,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
    ) -> Sequence[int]:
        """The output's first tokens under the family's lead rules (single-token markers):
        decide what they make of the output's start and return the tokens left to route.
        Nothing is decided yet while only blank tokens came (they are held)."""
        if not tokens:
            return tokens
        lut = self.lut
        if state and self.lead_blank:
            blank = self.blank
            held = cursor.held
            i, n = 0, len(tokens)
            while i < n and blank[tokens[i]]:
                held.append(tokens[i])
                i += 1
            if i == n:
                return ()
            # A start marker drops the blank run before it (the marker itself is consumed
            # by the transitions, as any start inside reasoning); other text keeps it.
            label = DELIMITER if (lut[tokens[i]] & KIND_MASK) == _START else REASONING
            out_ids.extend(held)
            out_labels.extend(bytes((label,)) * len(held))
            held.clear()
            cursor.started = True
            return tokens[i:]
        cursor.started = True
        if not state and self.lead_end and (lut[tokens[0]] & KIND_MASK) == _END:
            out_ids.append(tokens[0])
            out_labels.append(DELIMITER)
            return tokens[1:]
        return tokens

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
        return (
            self.lead_end and kind == _END and label == CONTENT and cursor.lead_at == len(out_ids)
        )

    def _drain(
        self,
        queue: list[int],
        state: int,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None,
        min_offset: int = 0,
        trans: _Trans | None = None,
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
                    if state == CUT_STATE and trans is not _PROBE:
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
        trans: _Trans | None = None,
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
        trans: _Trans | None,
    ) -> int:
        """Emit the tokens that overlap marker ``m`` (at ``off`` in the held bytes); later
        ones go back to the queue. A last token whose remaining bytes may begin another
        marker goes back too, carried, so that back-to-back markers both match."""
        tb = self.token_bytes
        end = off + len(m)
        pos = 0
        n = 0
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
        last_start = pos - len(tb[last])
        # Carry the last token when the rest of its bytes may begin another marker.
        again = (
            pos > end
            and (label == DELIMITER or spill is None or (label != TOOL and not forced))
            and (self.lut[last] & (HOLD | KIND_MASK)) == HOLD
            and self._candidate(tb[last], end - last_start) >= 0
        )
        first = len(out_ids)
        out_ids.extend(used)
        out_labels.extend([label] * len(used))
        if forced:
            out_labels[first] = DELIMITER
        if spill is None:
            if again:
                out_ids.pop()
                out_labels.pop()
                queue.append(last)
                cursor.carry = Carry(label, end - last_start, [], 0)
            return new_state
        if label == DELIMITER:
            if before:
                parts.append((before, channel, stage))
            after = data[end:pos]
            last_parts = parts if n == 1 else []
            last_stage = stage + 1 if n == 1 else 1
            if again:
                # Decided later, when the next marker matches (or does not).
                if n > 1:
                    self._spill_parts(spill, first, parts)
                out_ids.pop()
                out_labels.pop()
                queue.append(last)
                cursor.carry = Carry(DELIMITER, end - last_start, last_parts, last_stage)
                return new_state
            if after or (n == 1 and stage):
                # An empty part still marks where this marker ends inside the token.
                last_parts.append((after, REASONING if new_state else CONTENT, last_stage))
            self._spill_parts(spill, first, parts)
            if n > 1:
                self._spill_parts(spill, first + n - 1, last_parts)
        elif forced:
            # A kept or tool marker that begins inside a token that ends a consumed one.
            if before:
                parts.append((before, channel, stage))
            tail = tb[used[0]][off:]
            parts.append((tail, REASONING if label == REASONING else CONTENT, stage))
            self._spill_parts(spill, first, parts)
        elif label == TOOL and off:
            # An implicit end that begins inside a token (DeepSeek V4's ".<" before
            # "｜DSML｜"): the bytes before it stay in the reasoning that it ends.
            spill.append((first, data[:off], REASONING, 0))
            spill.append((first, tb[used[0]][off:], CONTENT, 1))
        elif again:
            out_ids.pop()
            out_labels.pop()
            queue.append(last)
            cursor.carry = Carry(label, end - last_start, [], 0)
        return new_state

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

    def flush(
        self,
        reasoning: bool,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None = None,
    ) -> bool:
        """End of output: settle whatever is held, as if no further token could match."""
        if cursor.cut:
            return False
        state = 1 if (reasoning and self.thinking) else 0
        if self.has_lead and not cursor.started:
            if not self.has_byte_markers:
                # Blank tokens that no start marker followed: the reasoning's first text.
                out_ids.extend(cursor.held)
                out_labels.extend(bytes((REASONING,)) * len(cursor.held))
                cursor.held.clear()
                return bool(state)
            cursor.lead_at = len(out_ids)
            state = self._flush(state, cursor, out_ids, out_labels, spill, self.trans)
            self._lead_seen(cursor, out_ids)
            return state == 1
        return self._flush(state, cursor, out_ids, out_labels, spill, self.trans) == 1

    def _flush(
        self,
        state: int,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None,
        trans: _Trans,
    ) -> int:
        while cursor.held:
            queue: list[int] = []
            state = self._settle(queue, state, cursor, out_ids, out_labels, spill, trans)
            if queue:
                state = self._drain(queue, state, cursor, out_ids, out_labels, spill, 0, trans)
        return state

    # ------------------------------------------------------------------ prompt scan

    def prompt_in_reasoning(self, prompt: Sequence[int] | np.ndarray) -> bool:
        """Right-to-left scan for the last marker of the current assistant turn.

        Every token the scan reads is validated as strictly as ``stream()`` validates a delta
        (an int or numpy integer in the vocabulary: no bool, float or numeric string is
        converted). The scan stops at the current turn's last marker or turn start, so a
        128k-token prompt costs what its last turn costs; the tokens before that point
        cannot change the answer and are not read, so not validated either (checking a
        128k-token list costs ~3.5 ms, a thousand times the scan: see README)."""
        n = len(prompt)
        # Most prompts end a few tokens after their last marker or turn start: look at
        # the tail in Python first, then fall back to numpy over growing chunks. The tail
        # is validated even when nothing is scanned (thinking off), so that a bad prompt
        # is refused whatever the switches say.
        tail_start = max(0, n - 64)
        tail = prompt[tail_start:] if tail_start else prompt
        if type(tail) is not list:  # a list (a slice of one, or a short prompt) is only read
            tail = tail.tolist() if isinstance(tail, np.ndarray) else list(tail)
        self.validate(tail, tail_start, "prompt_token_ids")
        if not self.thinking:
            return False
        if self.has_byte_markers:
            return self._prompt_bytes(prompt)
        lut = self.lut
        for i in range(len(tail) - 1, -1, -1):
            k = lut[tail[i]]
            if k:
                decided = self._decide(k)
                if decided is not None:
                    return decided
        # Markers are mostly high ids (added tokens): one comparison per chunk picks the
        # positions that may hold one, and only those are read through the table. As
        # uint64, a negative id is huge, so the same comparison picks every id outside
        # the vocabulary too, and the chunk is validated when one is among them.
        lowest = np.uint64(self._lowest_marker)
        vocab = self.vocab_size
        np_lut = self.np_lut
        for begin, part in self._int64_chunks(prompt, tail_start):
            u = part.view(np.uint64)
            ids = u.compress(u >= lowest)  # in order; positions are never needed
            if not ids.size:
                continue
            if ids.max() >= vocab:
                self.validate(part.tolist(), begin, "prompt_token_ids")
            flags = np_lut.take(ids)
            hits = flags.nonzero()[0]
            for j in hits[::-1]:
                decided = self._decide(int(flags[j]))
                if decided is not None:
                    return decided
        return self.turn_start_reasoning

    def chunks_backward(
        self, prompt: Sequence[int] | np.ndarray, end: int
    ) -> Iterator[tuple[int, npt.NDArray[np.int64], int]]:
        """``(begin, ids, max id)`` for ``prompt[:end]`` as validated int64 arrays, last
        chunk first, chunks growing 8x: a right-to-left scan that usually stops in the
        first chunk reads little."""
        for begin, part in self._int64_chunks(prompt, end):
            top = int(part.max())
            if top >= self.vocab_size or part.min() < 0:
                self.validate(part.tolist(), begin, "prompt_token_ids")
            yield begin, part, top

    def _int64_chunks(
        self, prompt: Sequence[int] | np.ndarray, end: int
    ) -> Iterator[tuple[int, npt.NDArray[np.int64]]]:
        """``(begin, ids)`` for ``prompt[:end]`` as int64 arrays, last chunk first, chunks
        growing 8x (few numpy calls on a prompt read to its start); every id an integer
        (refused otherwise), not yet checked against the vocabulary."""
        chunk = 4096
        where = "prompt_token_ids"
        while end > 0:
            begin = max(0, end - chunk)
            seg = prompt[begin:end]
            if isinstance(seg, np.ndarray):
                if seg.dtype.kind != "i" and not (seg.dtype.kind == "u" and seg.max() < 2**63):
                    self.validate(seg.tolist(), begin, where)  # names the id as given
                part = seg.astype(np.int64, copy=False)
            else:
                # Strict as stream(): a bool, float or string is refused, never converted.
                if not set(map(type, seg)) <= {int}:
                    self.validate(list(seg), begin, where)
                try:
                    part = np.asarray(seg, dtype=np.int64)
                except (TypeError, ValueError, OverflowError):
                    self.validate(list(seg), begin, where)
                    raise
            yield begin, part
            end = begin
            chunk = min(chunk * 8, 1 << 20)

    def validate(self, ids: Sequence[object], offset: int, where: str) -> None:
        """Raise InvalidTokenError for the first id that is not an int in the vocabulary."""
        n = self.vocab_size
        for i, t in enumerate(ids):
            if type(t) is int:
                if 0 <= t < n:
                    continue
            elif isinstance(t, np.integer) and not isinstance(t, bool) and 0 <= int(t) < n:
                continue
            raise InvalidTokenError(t, offset + i, n, where)

    def _decide(self, kind: int) -> bool | None:
        kind &= KIND_MASK
        if kind == _START:
            return True
        if kind in (_END, _TOOL, _CUT):
            return False
        if kind == _TURN:
            return self.turn_start_reasoning
        return None

    def _prompt_bytes(self, prompt: Sequence[int] | np.ndarray) -> bool:
        """Prompt scan for families with byte markers: replay the current turn through the
        matcher with a table whose state is the kind of the last marker seen."""
        begin = 0
        turn_ids = self.turn_ids
        for i in range(len(prompt) - 1, -1, -1):
            t = prompt[i]
            if type(t) is not int:  # a list inside would be unhashable: say what is wrong
                self.validate([t], i, "prompt_token_ids")
            if t in turn_ids:
                begin = i + 1
                break
        turn = list(prompt[begin:])
        self.validate(turn, begin, "prompt_token_ids")
        queue = [int(t) for t in turn]
        queue.reverse()
        ids: list[int] = []
        labels = bytearray()
        cursor = Cursor()
        last = self._drain(queue, 0, cursor, ids, labels, None, 0, _PROBE)
        last = self._flush(last, cursor, ids, labels, None, _PROBE)
        decided = self._decide(last) if last else None
        return self.turn_start_reasoning if decided is None else decided


_Trans = tuple[tuple[tuple[int, int], ...], ...]

_PROBE: _Trans = tuple(
    tuple(
        (
            CONTENT,
            k if k in (_START, _END, _TOOL) else _END if k == _CUT else 0 if k == _TURN else s,
        )
        for k in range(8)
    )
    for s in range(8)
)
"""Prompt-scan table: the state becomes the kind of the last START/END/TOOL marker (a cut
marker counts as an end). A turn marker matched on bytes (a multi-token turn opener)
resets it to 0, "nothing seen in this turn yet", so markers in the history before it
never decide the scan."""


def _transitions(spec: ReasoningSpec, thinking: bool) -> _Trans:
    """``trans[state][kind] -> (label, next_state)`` for state 0 (content) and 1 (reasoning),
    and CUT_STATE (the output is over) when the spec has cut markers."""
    ordinary = ((CONTENT, 0), (REASONING, 1))
    rows: list[tuple[tuple[int, int], ...]] = []
    for state in (0, 1):
        row: list[tuple[int, int]] = [ordinary[state]] * 8
        if thinking:
            if state:
                row[_START] = (DELIMITER, 1)
                row[_END] = (DELIMITER, 0)
                row[_TOOL] = (TOOL, 0)
            else:
                row[_START] = (DELIMITER, 1) if spec.start_in_content == "enter" else (CONTENT, 0)
                row[_END] = (DELIMITER, 0) if spec.end_in_content == "drop" else (CONTENT, 0)
                row[_TOOL] = (CONTENT, 0)
        row[_STRIP] = (DELIMITER, state)
        row[_TURN] = (DELIMITER, state) if spec.turn_in_output == "drop" else ordinary[state]
        if spec.cut:
            row[_CUT] = (DELIMITER, CUT_STATE)
        rows.append(tuple(row))
    if spec.cut:
        rows.append(((DELIMITER, CUT_STATE),) * 8)
    return tuple(rows)
