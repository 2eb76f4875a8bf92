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

The machine is three jobs in three modules: its tables are built once
(:mod:`.marker_tables`), byte markers are matched with hold-back (:mod:`.holdback`), and a
prompt is scanned for the start state (:mod:`.prompt_scan`); ``Machine`` (here) builds the
tables and routes the output's tokens, and inherits the other two.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reasonspan.runtime.core.holdback import Carry, Cursor, Spill
from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING
from reasonspan.runtime.core.marker_tables import (
    CUT_STATE,
    END,
    HOLD,
    KIND_MASK,
    START,
    blank_table,
    kind_table,
    marker_lengths,
    marker_prefixes,
    transitions,
)
from reasonspan.runtime.core.prompt_scan import PromptScan
from reasonspan.runtime.core.spec import MarkerKind, ReasoningSpec
from reasonspan.tokenizer.loader import LoadedTokenizer

__all__ = ["HOLD", "Carry", "Cursor", "Machine", "Spill"]


class Machine(PromptScan):
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
        self._fits = marker_lengths(byte_markers)
        self.prefixes = marker_prefixes(byte_markers)
        self.token_bytes = tokenizer.token_bytes if byte_markers else []
        lut = kind_table(
            self.vocab_size, id_markers, byte_markers, self.token_bytes, self._candidate
        )
        self.lut = bytes(lut)
        self.np_lut = np.frombuffer(self.lut, dtype=np.uint8)
        self.has_byte_markers = bool(byte_markers)
        self.has_cut = any(k == MarkerKind.CUT for k in id_markers.values())
        """A cut marker (``ReasoningSpec.cut``): ``trans`` has the third row CUT_STATE."""
        self.trans = transitions(spec, thinking)
        # Rules for the output's first tokens (per request: Cursor.started).
        self.lead_end = thinking and spec.end_in_content == "drop_leading"
        self.lead_blank = thinking and spec.blank_before_start == "drop"
        self.has_lead = self.lead_end or self.lead_blank
        self.blank: bytes = (
            blank_table(spec, tokenizer, lut, byte_markers) if self.lead_blank else b""
        )
        """Per token id: 1 for a token of whitespace only that is no marker (lead_blank)."""
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

    def route_one(self, token: int, reasoning: bool, cursor: Cursor) -> tuple[int, bool] | None:
        """A custom machine's 1-token fast path: ``(label, still_reasoning)`` for a token it
        can decide at once (updating ``cursor`` as ``run`` would), or None to take the
        general path. The base machine's own fast path lives in the parser."""
        return None

    def new_cursor(self) -> Cursor:
        """Per-request matcher state; a custom machine returns its own Cursor subclass."""
        return Cursor()

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
            label = DELIMITER if (lut[tokens[i]] & KIND_MASK) == START else REASONING
            out_ids.extend(held)
            out_labels.extend(bytes((label,)) * len(held))
            held.clear()
            cursor.started = True
            return tokens[i:]
        cursor.started = True
        if not state and self.lead_end and (lut[tokens[0]] & KIND_MASK) == END:
            out_ids.append(tokens[0])
            out_labels.append(DELIMITER)
            return tokens[1:]
        return tokens

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
