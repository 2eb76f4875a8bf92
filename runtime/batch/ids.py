"""Request ids and token ids as the batch takes them: a caller's lists, tuples or arrays
turned into owned int64 arrays and Python ints, or refused with a clear error.

Kept apart from the slot store (``slots``) and the step's checks against it
(``checks``) because it knows nothing of either: what an id *is* (an int that fits in
int64, never a bool, a float or a numeric string) is one rule, read the same by the slot
lookups of every public method and by the step's input checks.
"""

from __future__ import annotations

import numpy as np

from reasonspan.runtime.batch.errors import InvalidStepError
from reasonspan.runtime.batch.types import IntArray

_I64_MIN = int(np.iinfo(np.int64).min)
_I64_MAX = int(np.iinfo(np.int64).max)


def int_array(x: object, where: str) -> IntArray:
    """A 1-D int64 array owned by the batch (a copy), or a clear error. A list or tuple
    must hold ints or numpy integers: numpy would turn a bool among ints into 0 or 1 (a
    request id ``True`` would step request 1)."""
    if (type(x) is list or type(x) is tuple) and not set(map(type, x)) <= {int}:
        for i, v in enumerate(x):
            if isinstance(v, (bool, np.bool_)):  # (any other type: numpy's dtype tells)
                raise InvalidStepError(
                    f"{where} must hold integers, got {where}[{i}] = {v!r} of type "
                    f"{type(v).__name__}"
                )
    a = np.asarray(x)
    if a.ndim != 1:
        raise InvalidStepError(f"{where} must be a 1-D array, got {a.ndim} dimensions")
    if a.dtype.kind not in "iu" and a.size:
        raise InvalidStepError(f"{where} must hold integers, got dtype {a.dtype}")
    return a.astype(np.int64)


BadToken = tuple[int, object]
"""``(position, value as given)`` of the first token id that is not an int of int64."""


def token_array(x: object) -> tuple[IntArray, BadToken | None]:
    """A step's token ids as an int64 array, validated as ``parser.stream`` validates a
    delta: every id an int or a numpy integer (a bool, a float, a numeric string is
    refused, not converted). The first id that is no such int, or does not fit in int64
    (uint64 above 2**63 - 1), is returned as given, for the step to report against its
    request once the offsets are checked; the array is then a placeholder."""
    if isinstance(x, np.ndarray):
        if x.ndim == 1 and x.dtype.kind == "u" and x.size and x.dtype.itemsize == 8:
            big = x > np.uint64(_I64_MAX)
            if big.any():
                pos = int(np.argmax(big))
                return np.zeros(x.shape[0], np.int64), (pos, x[pos].item())
        return int_array(x, "token_ids"), None
    if isinstance(x, (list, tuple)):
        if not set(map(type, x)) <= {int}:
            for i, t in enumerate(x):
                if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
                    return np.zeros(len(x), np.int64), (i, t)
        try:
            arr = np.array(x, np.int64) if x else np.zeros(0, np.int64)
        except OverflowError:
            for i, t in enumerate(x):
                if not _I64_MIN <= int(t) <= _I64_MAX:
                    return np.zeros(len(x), np.int64), (i, t)
            raise
        return arr, None
    return int_array(x, "token_ids"), None


def as_request_id(x: object, where: str) -> int:
    """A request id as an int (ints and numpy integers that fit in int64), or a clear error."""
    if type(x) is int and _I64_MIN <= x <= _I64_MAX:  # the usual id, without the checks below
        return x
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{where}: request ids are ints, not {type(x).__name__}")
    v = int(x)
    if not _I64_MIN <= v <= _I64_MAX:
        raise ValueError(f"{where}: request id {v} does not fit in int64")
    return v
