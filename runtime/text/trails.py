"""Trailing characters held outside a request's trim, for the paths that take whole tokens'
texts from a table (:class:`~reasonspan.runtime.batch.text.BatchText`, the SSE output
path).

A trim with trailing characters (qwen3's reasoning: ``\\n``) holds a text's trailing run
of them until the next text shows whether a marker follows (then they are trimmed) or
not (then they go in front of it). In a reasoning transcript about one token in forty
ends in such a run (``.\\n\\n``), and the token after it releases the run; sending both
through the request's decoder costs some thirty plain rows. While the trim is otherwise
idle, a path holds the run itself, exactly what the trim would hold, in a per-request
pair of strings (``tails``: reasoning, content), and hands it back to the trim
(:func:`hand_back`) before anything else reaches the decoder, which then goes on as if it
had held the run all along (a trim's output depends only on the text it is given, not on
how it is cut).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from reasonspan.runtime.core.labels import CONTENT, REASONING
from reasonspan.runtime.text.decoding import LabelledDecoder
from reasonspan.runtime.text.token_text import TokenText

Trail = tuple[bytes, dict[int, tuple[str, str]]]
"""A channel's plain mask (one byte per token, :meth:`TokenText.plain`) and the splits of
the tokens that end in its trail characters (:meth:`TokenText.trail_splits`)."""

_CHANNELS = ((0, REASONING), (1, CONTENT))


def trail_of(
    holds: bool, table: TokenText, skip: frozenset[int], trail: str, mask: bytes
) -> Trail | None:
    """A channel's :data:`Trail` when its formatter ``holds`` a trail the way a trim does
    (:meth:`LabelledDecoder.holds_trail`) and it has trail characters; else None."""
    if not trail or not holds:
        return None
    return mask, table.trail_splits(skip, trail)


def take(
    trail: Trail,
    strings: np.ndarray[Any, np.dtype[np.object_]],
    tails: list[str],
    col: int,
    tok: int,
) -> str | None:
    """Token ``tok``'s text (``strings``: the tokenizer's, :meth:`TokenText.strings`) in
    channel ``col`` (0: reasoning, 1: content) of a request whose trim there is idle but
    for ``tails[col]``; ``tails[col]`` becomes what the trim would hold after it. A plain
    token gives the tail and its own text; a token ending in trail characters gives the
    tail and its text before them (nothing when it is all trail characters), and its run
    is held. None (nothing changed) for any other token: the decoder must take it."""
    mask, splits = trail
    held = tails[col]
    if tok < len(mask) and mask[tok]:
        tails[col] = ""
        text: str = strings[tok]
        return held + text
    split = splits.get(tok)
    if split is None:
        return None
    kept, run = split
    if kept:
        tails[col] = run
        return held + kept
    tails[col] = held + run
    return ""


def take_all(
    trail: Trail,
    strings: np.ndarray[Any, np.dtype[np.object_]],
    tails: list[str],
    col: int,
    ids: list[int],
) -> str | None:
    """:func:`take` for several tokens of one channel in a row: their text, or None
    (nothing changed) unless :func:`take` takes every one of them."""
    mask, splits = trail
    width = len(mask)
    for tok in ids:
        if not ((tok < width and mask[tok]) or tok in splits):
            return None
    out: list[str] = []
    for tok in ids:
        text = take(trail, strings, tails, col, tok)
        assert text is not None  # (each was checked above)
        out.append(text)
    return "".join(out)


def hand_back(dec: LabelledDecoder, tails: list[str]) -> None:
    """Give the trims of ``dec`` the runs held for them (each holds its run, as it would
    have); ``tails`` is emptied."""
    for col, channel in _CHANNELS:
        if tails[col]:
            out = dec.formatter_text(channel, tails[col])
            assert not out  # trailing characters alone: an idle trim holds them all
            tails[col] = ""
