"""The machine's tables, built once per (family, tokenizer, thinking switch).

Its own module because building and reading are two jobs: this one runs once per
compiled machine and may be slow (it reads every token's bytes), while the matcher
(:mod:`.holdback`) and the routing loop (:mod:`.machine`) only look the tables up.

- ``lut[id]``: the marker kind of a single-token marker in the low bits (``KIND_MASK``)
  and the ``HOLD`` flag above them (:func:`kind_table`);
- ``trans[state][kind] -> (label, next_state)`` (:func:`transitions`), and the prompt
  scan's own table (``PROBE``);
- the byte markers' lengths and prefixes, which the hold-back matcher asks about
  (:func:`marker_lengths`, :func:`marker_prefixes`);
- the blank-token table of a ``blank_before_start="drop"`` family (:func:`blank_table`).
"""

from __future__ import annotations

from collections.abc import Callable

from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING, TOOL
from reasonspan.runtime.core.spec import MarkerKind, ReasoningSpec
from reasonspan.tokenizer.loader import LoadedTokenizer

HOLD = 8
"""Flag in ``Machine.lut``: some suffix of the token's bytes may begin a multi-token marker
(or the token holds a whole one), so it is held until the following tokens decide."""
KIND_MASK = 7

START, END, TOOL_KIND, STRIP, TURN, CUT = (int(k) for k in list(MarkerKind)[1:])
CUT_STATE = 2
"""Third row of ``Machine.trans`` for a spec with cut markers: the output is over, every
token is a DELIMITER. Only a CUT marker leads there; a request's cursor remembers it
(``Cursor.cut``), since the caller's state is a bool (reasoning or not)."""

Trans = tuple[tuple[tuple[int, int], ...], ...]


def marker_lengths(byte_markers: dict[bytes, MarkerKind]) -> tuple[tuple[int, ...], ...]:
    """``fits[n]``: the byte markers' lengths up to n bytes, longest first.

    A match is always the longest marker at its position: one set lookup per length, not
    a startswith per marker (the HOLD table asks this for every byte offset of every
    token: 50 markers took 3 s), and only the lengths a segment can hold."""
    lengths = sorted({len(m) for m in byte_markers}, reverse=True)
    longest = lengths[0] if lengths else 0
    return tuple(tuple(k for k in lengths if k <= n) for n in range(longest + 1))


def marker_prefixes(byte_markers: dict[bytes, MarkerKind]) -> frozenset[bytes]:
    """Every proper prefix of a byte marker: a held run that is one may still grow."""
    return frozenset(m[:i] for m in byte_markers for i in range(1, len(m)))


def kind_table(
    vocab_size: int,
    id_markers: dict[int, MarkerKind],
    byte_markers: dict[bytes, MarkerKind],
    token_bytes: list[bytes],
    candidate: Callable[[bytes, int], int],
) -> bytearray:
    """``lut``: each single-token marker's kind, and HOLD on every other token some of
    whose bytes ``candidate`` (the matcher's) says may begin a byte marker."""
    lut = bytearray(vocab_size)
    for tid, kind in id_markers.items():
        lut[tid] = int(kind)
    if byte_markers:
        # A token can only be held if it has a byte some marker starts with: deleting
        # every other byte (C speed) leaves most tokens empty, and only the rest are
        # read offset by offset (0.4-0.6 s of CPU for Qwen3's vocabulary otherwise).
        firsts = {m[0] for m in byte_markers if m}
        others = bytes(c for c in range(256) if c not in firsts) if all(byte_markers) else b""
        for tid, b in enumerate(token_bytes):
            if b and not lut[tid] and b.translate(None, others) and candidate(b, 0) >= 0:
                lut[tid] |= HOLD
    return lut


def blank_table(
    spec: ReasoningSpec,
    tokenizer: LoadedTokenizer,
    lut: bytes | bytearray,
    byte_markers: dict[bytes, MarkerKind],
) -> bytes:
    """Per token id: 1 for a token of whitespace only that is no marker (the rule
    ``blank_before_start="drop"``, which needs single-token markers)."""
    if byte_markers:
        raise ValueError(
            f"{spec.name}: blank_before_start='drop' needs single-token markers, but "
            f"{sorted(m.decode('utf-8', 'replace') for m in byte_markers)} are matched "
            f"on bytes in {tokenizer.source}"
        )
    vocab_size = tokenizer.vocab_size
    blank = bytearray(vocab_size)
    for tid, b in enumerate(tokenizer.token_bytes[:vocab_size]):
        if b.isspace() and not lut[tid]:
            blank[tid] = 1
    return bytes(blank)


PROBE: Trans = tuple(
    tuple(
        (
            CONTENT,
            k if k in (START, END, TOOL_KIND) else END if k == CUT else 0 if k == TURN else s,
        )
        for k in range(8)
    )
    for s in range(8)
)
"""Prompt-scan table: the state becomes the kind of the last START/END/TOOL marker (a cut
marker counts as an end). A turn marker matched on bytes (a multi-token turn opener)
resets it to 0, "nothing seen in this turn yet", so markers in the history before it
never decide the scan."""


def transitions(spec: ReasoningSpec, thinking: bool) -> Trans:
    """``trans[state][kind] -> (label, next_state)`` for state 0 (content) and 1 (reasoning),
    and CUT_STATE (the output is over) when the spec has cut markers."""
    ordinary = ((CONTENT, 0), (REASONING, 1))
    rows: list[tuple[tuple[int, int], ...]] = []
    for state in (0, 1):
        row: list[tuple[int, int]] = [ordinary[state]] * 8
        if thinking:
            if state:
                row[START] = (DELIMITER, 1)
                row[END] = (DELIMITER, 0)
                row[TOOL_KIND] = (TOOL, 0)
            else:
                row[START] = (DELIMITER, 1) if spec.start_in_content == "enter" else (CONTENT, 0)
                row[END] = (DELIMITER, 0) if spec.end_in_content == "drop" else (CONTENT, 0)
                row[TOOL_KIND] = (CONTENT, 0)
        row[STRIP] = (DELIMITER, state)
        row[TURN] = (DELIMITER, state) if spec.turn_in_output == "drop" else ordinary[state]
        if spec.cut:
            row[CUT] = (DELIMITER, CUT_STATE)
        rows.append(tuple(row))
    if spec.cut:
        rows.append(((DELIMITER, CUT_STATE),) * 8)
    return tuple(rows)
