"""The runtime's exact path: a step's rows turned into chunk objects, request by request.

Every row the batch-wide output path (``sse_path``) did not write comes here: the rows of
requests read as chunks, and of SSE requests whose row was not plain (a tool-call region,
a stop string, citations, held reasoning, log probabilities, a full queue). A row goes
through the request's own machinery in the order the batch decided it: its log
probabilities are routed by label, its call writer takes the call regions out
(``runtime/wire/region_calls.py``), its decoder turns the rest into reasoning and content
text, harmony's call messages become ``delta.tool_calls``, and the result is one chunk
(or, with options that change a chunk, :meth:`StreamRecord.emit_text`). A request with
stop strings takes ``stop_step`` instead, which decodes a token at a time.

Whatever raises on one request's row fails that request alone (``fail``); the step and
the other requests go on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from reasonspan.runtime.batch.errors import RequestFailedError
from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.core.labels import TOOL_CALL
from reasonspan.runtime.stream.request import StreamRecord
from reasonspan.runtime.stream.stop_step import step_with_stop
from reasonspan.runtime.wire.openai import ChoiceDelta


def write_rows(
    res: BatchStepResult,
    rows: list[int] | None,
    records: Mapping[int, StreamRecord],
    alias: bool,
    room: int,
    fail: Callable[[StreamRecord, BaseException], None],
    end_on_stop: Callable[[StreamRecord], None],
) -> list[StreamRecord]:
    """Write the chunks of the step's ``rows`` (None: every row) into their requests'
    queues (``records``: open requests by engine id; ``room``: the buffer size; ``alias``:
    fill ``reasoning_content`` too). A request whose stop string matched is handed to
    ``end_on_stop``, one whose machinery raised to ``fail``. Returns the requests on the
    output path that took a row here (their plain bits must be worked out again)."""
    errors = res.errors
    touched: list[StreamRecord] = []
    for rid, ids, labels, spill in res.all_decided(rows) if rows != [] else ():
        got = records.get(rid)
        if got is None or got.closed or (errors and rid in errors) or not ids:
            continue
        if got.sse_slot >= 0:
            touched.append(got)
        # (A try costs nothing until it catches.)
        try:
            if got.logprobs is not None:
                got.logprobs.route(labels)
            if got.stop is not None:
                if step_with_stop(got, alias, room, ids, labels, spill):
                    end_on_stop(got)
                continue
            calls = None
            if got.call_writer is not None:
                ids, out_labels, out_spill, calls = got.call_writer.feed(ids, labels, spill)
                labels, spill = bytes(out_labels), tuple(out_spill)
            r_text, c_text = got.text_decoder().feed(ids, labels, spill)
            tools = got.tools
            if tools is not None and (TOOL_CALL in labels or tools.reader.busy):
                calls = got.message_calls(ids, labels)
            if not (r_text or c_text or calls or got.cites):
                continue
            if (
                got.include_reasoning
                and not got.hold_reasoning
                and not got.cites
                and got.logprobs is None
                and got.writer is None
                and len(got.queue) < room
            ):
                # The common case (it runs once per request-token): a new chunk.
                got.queue.append(
                    got.chunk(
                        ChoiceDelta(
                            content=c_text or None,
                            reasoning=r_text or None,
                            reasoning_content=(r_text or None) if alias else None,
                            tool_calls=calls,
                        )
                    )
                )
                got.notify()
            else:
                got.emit_text(alias, room, r_text, c_text, calls)
        except Exception as exc:
            fail(got, RequestFailedError(rid, got.parser.name, exc))
    return touched
