"""The batch's step as the runtime calls it: rows of requests that ended early dropped, and
a request whose token is outside its vocabulary failed alone.

The engine may still send tokens for a request the runtime ended (aborted, cancelled,
failed, stopped on a stop string) before it hears of that from ``take_aborted()``: the
batch no longer knows such an id and refuses the step, so the step is retried without
those rows (they are dropped quietly). A token id outside one request's vocabulary fails
that request (``fail``) and the step is retried without its rows too; the other requests'
tokens are applied. An unknown id that was never ended is the engine's bug: it raises.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np

from reasonspan.runtime.batch.errors import BatchTokenError, UnknownRequestError
from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.batch.step import ReasoningBatch
from reasonspan.runtime.stream.errors import RequestTokenError
from reasonspan.runtime.stream.request import StreamRecord


def batch_step(
    batch: ReasoningBatch,
    gone: Collection[int],
    records: Mapping[int, StreamRecord],
    fail: Callable[[StreamRecord, BaseException], None],
    request_ids: Any,
    token_ids: Any,
    offsets: Any,
) -> BatchStepResult:
    """``batch.step``, retried without the rows of ``gone`` requests (ended early) and of a
    request whose token is outside its vocabulary (failed here); the requests whose
    parser raised in the step are failed here too (``records``: open requests by engine
    id)."""
    rids_in: Any = request_ids
    toks_in: Any = token_ids
    offs_in: Any = offsets
    while True:
        try:
            res = batch.step(rids_in, toks_in, offs_in)
            break
        except UnknownRequestError as err:
            rids, toks, offs = without_rows(gone, rids_in, toks_in, offs_in)
            if rids is None:
                raise err from None
            rids_in, toks_in, offs_in = rids, toks, offs
        except BatchTokenError as err:
            bad = records.get(err.request_id)
            if bad is None:
                raise
            # Only this request fails; the step is retried without its rows.
            fail(bad, RequestTokenError(bad.key, err))
            rids, toks, offs = without_rows(gone, rids_in, toks_in, offs_in)
            if rids is None:
                raise
            rids_in, toks_in, offs_in = rids, toks, offs
    for rid, exc in res.errors.items():
        failed = records.get(int(rid))
        if failed is not None:
            fail(failed, exc)
    return res


def without_rows(
    gone: Collection[int], request_ids: Any, token_ids: Any, offsets: Any
) -> tuple[np.ndarray[Any, Any] | None, np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A step without the rows of the requests in ``gone`` (ended early; their tokens are
    dropped quietly). None: there are none, so an unknown id in it is a real error."""
    rids = np.asarray(request_ids, dtype=np.int64)
    toks = np.asarray(token_ids, dtype=np.int64)
    offs = np.asarray(offsets, dtype=np.int64)
    if not gone or offs.shape[0] != rids.shape[0] + 1:
        return None, toks, offs
    dropped = np.isin(rids, np.fromiter(gone, np.int64, len(gone)))
    if not dropped.any():
        return None, toks, offs
    keep = ~dropped
    counts = np.diff(offs)[keep]
    starts = offs[:-1][keep]
    toks = (
        np.concatenate([toks[s : s + c] for s, c in zip(starts, counts, strict=True)])
        if counts.size
        else toks[:0]
    )
    offs = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return rids[keep], toks, offs
