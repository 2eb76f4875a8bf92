"""The prompt scan: does the output start inside reasoning, given the prompt?

A right-to-left scan for the last marker of the current assistant turn, with the id
checks ``stream()`` applies to a delta. Its own module because it reads a whole prompt
once per request (numpy over chunks, most of a long prompt never read) where the rest of
the machine reads one output token at a time; families with byte markers replay the
current turn through the hold-back matcher (:mod:`.holdback`) with the scan's own table
(``PROBE``), which is why the scan is a step of the matcher's class hierarchy.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from reasonspan.runtime.core.errors import InvalidTokenError
from reasonspan.runtime.core.holdback import Cursor, HoldBackMatcher
from reasonspan.runtime.core.ids import reported, scan
from reasonspan.runtime.core.marker_tables import CUT, END, KIND_MASK, PROBE, START, TOOL_KIND, TURN


class PromptScan(HoldBackMatcher):
    """The prompt-scan steps of :class:`~.machine.Machine` (its base class)."""

    # Set by Machine.__init__ (see there).
    vocab_size: int
    thinking: bool
    turn_start_reasoning: bool
    has_byte_markers: bool
    turn_ids: frozenset[int]
    np_lut: npt.NDArray[np.uint8]
    _lowest_marker: int

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
        pos = scan(ids, 0, n)
        if pos >= 0:
            raise InvalidTokenError(reported(ids[pos]), offset + pos, n, where)

    def _decide(self, kind: int) -> bool | None:
        kind &= KIND_MASK
        if kind == START:
            return True
        if kind in (END, TOOL_KIND, CUT):
            return False
        if kind == TURN:
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
        last = self._drain(queue, 0, cursor, ids, labels, None, 0, PROBE)
        last = self._flush(last, cursor, ids, labels, None, PROBE)
        decided = self._decide(last) if last else None
        return self.turn_start_reasoning if decided is None else decided
