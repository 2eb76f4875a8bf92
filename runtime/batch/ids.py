"""Request ids and token ids as the batch takes them: the rules of
:mod:`reasonspan.runtime.core.ids` (what an id is, the one per-id loop), with the batch's
error for a bad container (:class:`InvalidStepError`) and its way of reporting a bad token.

A step's bad token id is not raised here: its error names the request it was given for,
which the step knows only once the offsets are checked (``checks.token_error``), so
:func:`token_array` returns the first bad id instead. What an id *is* is not decided here;
``parser.stream`` and ``ReasoningBatch.step`` refuse the same ids because both ask core.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reasonspan.runtime.batch.errors import InvalidStepError
from reasonspan.runtime.batch.types import IntArray
from reasonspan.runtime.core import ids
from reasonspan.runtime.core.ids import I64_END, I64_MAX, I64_MIN, as_request_id, reported, scan
from reasonspan.runtime.core.ids import int_array as _int_array

__all__ = ["BadToken", "as_request_id", "int_array", "token_array"]

_INTS = frozenset((int,))


def int_array(x: object, where: str) -> IntArray:
    """A 1-D int64 array owned by the batch (a copy), or :class:`InvalidStepError` naming
    the first element that is no int64 id (:func:`reasonspan.runtime.core.ids.int_array`)."""
    return _int_array(x, where, InvalidStepError)


BadToken = tuple[int, object]
"""``(position, value)`` of the first token id that is not an int of int64 (a numpy
integer reported as its int)."""


def token_array(x: object) -> tuple[IntArray, BadToken | None]:
    """A step's token ids as an int64 array, checked as ``parser.stream`` checks a delta
    (the same per-id rule): every id an int or a numpy integer (a bool, a float, a
    numeric string is refused, not converted). The first id that is no such int, or does
    not fit in int64, is returned, for the step to report against its request once the
    offsets are checked; the array then holds the ids before it (the step reports an id
    outside its vocabulary there first) and zeros after. A bad container raises
    :class:`InvalidStepError`."""
    if isinstance(x, np.ndarray):
        if x.ndim == 1 and x.dtype.kind == "u" and x.size and x.dtype.itemsize == 8:
            big = x > np.uint64(I64_MAX)
            if big.any():
                pos = int(np.argmax(big))
                return x.astype(np.int64), (pos, x[pos].item())
        return _int_array(x, "token_ids", InvalidStepError), None
    seq: Sequence[object]
    if type(x) is list or type(x) is tuple:
        seq = x
    else:  # any other Sequence is scanned as a list is (numpy would read True as 1)
        seq = ids.sequence_of(x, "token_ids", InvalidStepError)
    if not set(map(type, seq)) <= _INTS:
        pos = scan(seq, I64_MIN, I64_END)
        if pos >= 0:
            return _head(seq, pos), (pos, reported(seq[pos]))
    try:
        arr = np.array(seq, np.int64) if seq else np.zeros(0, np.int64)
    except OverflowError:
        pos = scan(seq, I64_MIN, I64_END)
        return _head(seq, pos), (pos, reported(seq[pos]))
    return arr, None


def _head(seq: Sequence[object], pos: int) -> IntArray:
    """The placeholder of a list whose id ``pos`` is bad: the ids before it (all ids of
    int64) converted, so the step can check them against their vocabularies first and
    report the first bad id in order, as ``stream`` does; zeros from ``pos`` on."""
    arr = np.zeros(len(seq), np.int64)
    arr[:pos] = np.array(seq[:pos], np.int64)
    return arr
