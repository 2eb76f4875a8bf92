"""What a token id or a request id is, and the one check of a container of them.

An id is a Python int or a numpy integer, never a bool of either kind (``True`` is not
token 1, nor request 1), that fits in int64; a float, a numeric string or ``None`` is
refused, never converted. The paths that take ids read them here: the parser's
``stream`` and ``parse`` and a prompt's container, the batch's step (its request ids,
token ids and offsets) and its one-request methods. So one bad id is refused the same way
on every path, named by its position and value, whichever path a caller takes (a server
that feeds ``parser.stream`` one request and ``ReasoningBatch.step`` another must not see
an id accepted by one and refused by the other).

The rules are split by what a caller has (a list, an array, one id) so that each hot path
pays for one C-level pass or one Python loop, not both; the error *class* for a bad
container is the caller's (the parser's API raises TypeError, the batch's
InvalidStepError), the message is this module's. It knows nothing of vocabularies beyond
the bound a caller passes, nor of requests or slots.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from reasonspan.runtime.core.errors import InvalidTokenError

__all__ = [
    "ALL_INTS",
    "CONVERT",
    "I64_END",
    "I64_MAX",
    "I64_MIN",
    "ErrorClass",
    "as_request_id",
    "check_array",
    "check_container",
    "int_array",
    "is_id",
    "reported",
    "scan",
    "sequence_of",
    "token_ids",
]

I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1
I64_END = 1 << 63
"""``range(I64_MIN, I64_END)`` is what int64 holds: the bound :func:`scan` takes for an id
that has no vocabulary to fit (a request id, an offset, a token before its request is
known)."""

ALL_INTS = -1
""":func:`scan`: every element is a Python int in bounds (the sequence can be used as is)."""
CONVERT = -2
""":func:`scan`: every element is an id in bounds, but some are numpy integers or int
subclasses: convert with ``int()`` before they reach a result."""

_INTS = frozenset((int,))

ErrorClass = type[Exception]
"""The exception a caller raises for a bad container (its API's: TypeError for the
parser, InvalidStepError for the batch); it is called with the message alone."""


def is_id(x: object) -> bool:
    """The one dtype rule for a single id: an int or a numpy integer, not a bool (a Python
    ``bool`` is an int subclass; numpy's ``bool_`` is no ``np.integer``)."""
    return type(x) is int or (isinstance(x, (int, np.integer)) and not isinstance(x, bool))


def scan(seq: Sequence[object], lo: int, hi: int) -> int:
    """The one per-id loop: the position of the first element that is not an id in
    ``[lo, hi)``, else :data:`ALL_INTS` or :data:`CONVERT`.

    A plain loop, not ``set(map(type, ...))`` and ``min``/``max``: a parser's delta is one
    to a few ids, and three builtin calls cost more than the loop there. (The batch's
    lists are converted by numpy after a type check and come here only to name a culprit.)
    The int fast test comes first; a numpy integer before an int subclass."""
    got = ALL_INTS
    for i, t in enumerate(seq):
        if type(t) is int:
            if lo <= t < hi:
                continue
        elif (
            isinstance(t, np.integer) or (isinstance(t, int) and type(t) is not bool)
        ) and lo <= int(t) < hi:
            got = CONVERT
            continue
        return i
    return got


def reported(value: object) -> object:
    """An id as an error reports it: a numpy integer as its int, so the message says it is
    out of bounds, not "of type uint64, not int" (anything else as given)."""
    return int(value) if isinstance(value, np.integer) else value


def sequence_of(ids: object, where: str, error: ErrorClass) -> Sequence[object]:
    """``ids`` as a sequence to scan (a list, a tuple, a ``range``, any ``Sequence`` but a
    string), or ``error`` naming its type: a generator or a set has no positions to name."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise error(
            f"{where} must be a sequence of int ids or a 1-D integer array, "
            f"not {type(ids).__name__}"
        )
    return ids


def check_array(a: npt.NDArray[Any], where: str, error: ErrorClass) -> None:
    """The dtype rule for an array: 1-D, of a signed or unsigned integer dtype (an empty
    array of any dtype holds no bad id)."""
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise error(
            f"{where} must be a 1-D integer array (ints or numpy integers), got "
            f"dtype={a.dtype} with {a.ndim} dimension{'' if a.ndim == 1 else 's'}"
        )


def check_container(ids: object, where: str, error: ErrorClass = TypeError) -> None:
    """A container of ids (before its ids are read): a 1-D integer array or a sequence."""
    if type(ids) is list:  # the usual container, and always a Sequence: skip the ABC check
        return
    if isinstance(ids, np.ndarray):
        check_array(ids, where, error)
    else:
        sequence_of(ids, where, error)


def _element_message(seq: Sequence[object], pos: int, where: str) -> str:
    value = seq[pos]
    if is_id(value):
        return f"{where}[{pos}] = {int(value)} does not fit in int64"  # type: ignore[call-overload]
    return (
        f"{where} must hold integers (a 1-D sequence or array of ints), got "
        f"{where}[{pos}] = {value!r} of type {type(value).__name__}"
    )


def int_array(x: object, where: str, error: ErrorClass) -> npt.NDArray[np.int64]:
    """``x`` (request ids, offsets) as a 1-D int64 array the caller owns (a copy), or
    ``error`` naming the first element that is no id of int64 (a uint64 above 2**63 - 1
    included: converted, it would wrap round to a negative id and name the wrong one)."""
    if isinstance(x, np.ndarray):  # first: the batch's hot path (an engine's arrays)
        kind = x.dtype.kind
        if x.ndim != 1 or (kind not in "iu" and x.size):
            check_array(x, where, error)  # (raises; the rule is inlined for speed)
        if kind == "u" and x.dtype.itemsize == 8 and x.size:
            big = x > np.uint64(I64_MAX)
            if big.any():
                pos = int(np.argmax(big))
                raise error(f"{where}[{pos}] = {x[pos].item()} does not fit in int64")
        return x.astype(np.int64)
    seq = x if type(x) is list or type(x) is tuple else sequence_of(x, where, error)
    # A bool among ints would be converted to 0 or 1 by numpy: check types first.
    if not set(map(type, seq)) <= _INTS:
        pos = scan(seq, I64_MIN, I64_END)
        if pos >= 0:
            raise error(_element_message(seq, pos, where))
    try:
        return np.array(seq, np.int64)
    except OverflowError:
        pos = scan(seq, I64_MIN, I64_END)
        raise error(_element_message(seq, pos, where)) from None


def token_ids(ids: object, vocab: int, where: str) -> Sequence[int]:
    """Token ids checked before any state changes, as Python ints (numpy integers never
    reach a result; a list of ints is returned as it is): a bad container raises
    TypeError, an id that is no id or lies outside ``[0, vocab)`` InvalidTokenError."""
    if type(ids) is not list and type(ids) is not tuple:  # (both skip the ABC check)
        if isinstance(ids, np.ndarray):
            check_array(ids, where, TypeError)
            if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
                bad = int(np.flatnonzero((ids < 0) | (ids >= vocab))[0])
                raise InvalidTokenError(ids[bad].item(), bad, vocab, where)
            got: list[int] = ids.tolist()
            return got
        ids = sequence_of(ids, where, TypeError)
    seq: Sequence[object] = ids
    pos = scan(seq, 0, vocab)
    if pos == ALL_INTS:
        return seq  # type: ignore[return-value]
    if pos == CONVERT:
        return [int(t) for t in seq]  # type: ignore[call-overload]
    raise InvalidTokenError(reported(seq[pos]), pos, vocab, where)


def as_request_id(x: object, where: str) -> int:
    """One request id as an int (an int or a numpy integer that fits in int64), or a
    TypeError (not an id) or ValueError (too large) naming ``where``."""
    if type(x) is int and I64_MIN <= x <= I64_MAX:  # the usual id, without the checks below
        return x
    if not is_id(x):
        raise TypeError(f"{where}: request ids are ints, not {type(x).__name__}")
    v: int = int(x)  # type: ignore[call-overload]
    if not I64_MIN <= v <= I64_MAX:
        raise ValueError(f"{where}: request id {v} does not fit in int64")
    return v
