"""A SIMULATED engine: continuous batching over scripted outputs, for demos, tests and
benchmarks. It is not a model: it replays real-tokenizer transcripts token by token.

The engine takes its scripts as input (:class:`SimRequest`); the demo's transcripts and
prompts live with the demo (``reasonspan.workload``), so the runtime ships only machinery.
It admits requests over time, emits 1 or k tokens per request per step (k models
speculative decoding), honours forced tokens (thinking budgets) and stops a request at the
end of its script or at its ``max_tokens``. Each step it hands out what a real engine
would: request ids, new token ids and CSR offsets, as numpy arrays.

Under a grammar (a request added with ``response_format``) it samples under the mask the
batch fills (:meth:`ReasoningBatch.fill_token_bitmask`), one token per step, by a simple
deterministic rule, since it has no logits: the scripted token when the mask allows it;
otherwise the first allowed token of a short preference list (``"``, ``}``, ``]``, ``0``,
``,``, ``:``: close a string, then an object, an array; the shortest number); otherwise
the lowest allowed id. A scripted answer that breaks the schema thus comes out as a valid
document, while the reasoning before it, sampled with no mask, is the script's. A
structured request's speculative proposal stops at the end of its scripted reasoning (the
tokens after it are sampled under the mask, from the next step); the request ends
("stop") when its grammar is complete, and goes on past the end of its script until it
is (or until ``max_tokens``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np

from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.core.errors import ReasonspanError
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RequestStream


@dataclass
class SimRequest:
    """One request the simulated engine will serve."""

    request_id: int
    parser: ReasoningParser
    prompt_ids: list[int]
    output_ids: list[int]
    arrival_step: int = 0
    max_tokens: int | None = None
    title: str = ""
    pos: int = 0
    emitted: int = 0
    forced_emitted: int = 0
    finish_reason: str | None = None
    emitted_ids: list[int] = field(default_factory=list)
    constrained: bool = False
    """Sampled under a grammar once reasoning ends (set by :func:`drive` for requests
    added with ``response_format``)."""

    def end_of_reasoning(self) -> int | None:
        """Index just after the first end marker of the script (where a forced end jumps)."""
        end_ids = self.parser.end_marker_token_ids()
        n = len(end_ids)
        if not n:
            return None
        for i in range(len(self.output_ids) - n + 1):
            if self.output_ids[i : i + n] == end_ids:
                return i + n
        return None


ForcedFn = Callable[[int], Sequence[int]]
CapFn = Callable[[int], int | None]

CLOSERS = ('"', "}", "]", "0", ",", ":")
"""The engine's preference when the scripted token is masked out (see the module docs)."""


class SimulatedEngine:
    """Continuous batching over :class:`SimRequest` scripts (a simulation, not a model)."""

    def __init__(
        self,
        requests: Sequence[SimRequest],
        *,
        max_batch: int = 64,
        tokens_per_step: int = 1,
        seed: int = 0,
    ) -> None:
        self.pending = sorted(requests, key=lambda r: r.arrival_step)
        self.active: list[SimRequest] = []
        self.finished: list[SimRequest] = []
        self.max_batch = max_batch
        self.k = tokens_per_step
        self.step_no = 0
        self.rng = random.Random(seed)

    @property
    def done(self) -> bool:
        return not self.pending and not self.active

    def stop(self, request_id: int) -> None:
        """End a running request now, finish reason "stop" (its grammar is complete)."""
        for r in self.active:
            if r.request_id == request_id:
                r.finish_reason = "stop"
                self.active.remove(r)
                self.finished.append(r)
                return

    def submit(self, request: SimRequest) -> None:
        """A request that arrives now (a server's admission), behind those already waiting."""
        request.arrival_step = min(request.arrival_step, self.step_no)
        self.pending.append(request)

    def abort(self, request_id: int) -> None:
        """The client went away: stop generating for this request (waiting or running)."""
        for r in self.pending:
            if r.request_id == request_id:
                r.finish_reason = "abort"
                self.pending.remove(r)
                self.finished.append(r)
                return
        for r in self.active:
            if r.request_id == request_id:
                r.finish_reason = "abort"
                self.active.remove(r)
                self.finished.append(r)
                return

    def admit(self) -> list[SimRequest]:
        """Requests that arrive by this step and fit in the batch."""
        admitted: list[SimRequest] = []
        while (
            self.pending
            and self.pending[0].arrival_step <= self.step_no
            and len(self.active) < self.max_batch
        ):
            r = self.pending.pop(0)
            self.active.append(r)
            admitted.append(r)
        return admitted

    def step(
        self,
        forced: ForcedFn | None = None,
        cap: CapFn | None = None,
        *,
        masks: Mapping[int, np.ndarray[Any, Any]] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[SimRequest]]:
        """Emit the next tokens of every active request.

        ``cap(request_id)`` bounds a request's new tokens this step (None: no bound), as a
        speculative engine caps its proposals at the thinking budget left
        (``budget_remaining``), so no reasoning token is spent past the budget.
        ``masks[request_id]`` is the request's next-token bitmask row (llguidance layout)
        when its grammar is active: it gets one token, sampled under it (module docs).

        Returns ``(request_ids, token_ids, offsets, finished)`` as int64 arrays (``offsets``
        has ``len(request_ids) + 1`` entries) and the requests that ended this step.
        """
        self.step_no += 1
        rids: list[int] = []
        toks: list[int] = []
        offsets = [0]
        done: list[SimRequest] = []
        for r in self.active:
            want = self.k
            if r.max_tokens is not None:
                want = min(want, r.max_tokens - r.emitted)
            out: list[int] = []
            force = list(forced(r.request_id)) if forced is not None else []
            limit = cap(r.request_id) if cap is not None and not force else None
            if limit is not None and limit > 0:
                want = min(want, limit)
            if force:
                out = force[:want]
                r.forced_emitted += len(out)
                end_ids = r.parser.end_marker_token_ids()
                if end_ids and out[-1] == end_ids[-1]:
                    # The forced end marker is out: the script resumes after its own end.
                    jump = r.end_of_reasoning()
                    r.pos = jump if jump is not None else r.pos
            elif masks is not None and r.request_id in masks:
                out = [sample_under_mask(r, masks[r.request_id])] if want else []
            else:
                if r.constrained:  # the tokens after reasoning are the grammar's
                    end = r.end_of_reasoning()
                    if end is not None and r.pos < end < r.pos + want:
                        want = end - r.pos
                out = r.output_ids[r.pos : r.pos + want]
                r.pos += len(out)
            r.emitted += len(out)
            r.emitted_ids += out
            rids.append(r.request_id)
            toks += out
            offsets.append(len(toks))
            # A request under its mask goes on past its script until its grammar is done.
            under_mask = masks is not None and r.request_id in masks
            if r.pos >= len(r.output_ids) and not force and not under_mask:
                r.finish_reason = "stop"
            elif r.max_tokens is not None and r.emitted >= r.max_tokens:
                r.finish_reason = "length"
            if r.finish_reason:
                done.append(r)
        for r in done:
            self.active.remove(r)
            self.finished.append(r)
        return (
            np.asarray(rids, dtype=np.int64),
            np.asarray(toks, dtype=np.int64),
            np.asarray(offsets, dtype=np.int64),
            done,
        )


def sample_under_mask(r: SimRequest, row: np.ndarray[Any, Any]) -> int:
    """The next token of ``r`` under its bitmask row (the rule of the module docs); the
    script moves on by one token either way (a replaced token is the model's deviation)."""

    def allowed(t: int) -> bool:
        return 0 <= t < 32 * row.shape[0] and bool((int(row[t >> 5]) >> (t & 31)) & 1)

    scripted = r.output_ids[r.pos] if r.pos < len(r.output_ids) else None
    r.pos += 1
    if scripted is not None and allowed(scripted):
        return scripted
    tok = r.parser.tokenizer
    for text in CLOSERS:
        t = tok.single_token_id(text)
        if t is not None and allowed(t):
            return t
    bits = np.unpackbits(np.ascontiguousarray(row).view(np.uint8), bitorder="little")
    hit = np.flatnonzero(bits)
    if not hit.shape[0]:
        raise ReasonspanError(f"request {r.request_id}: its grammar allows no token")
    return int(hit[0])


@dataclass
class DriveStats:
    """What one simulated run did, for the demo's table and the tests."""

    steps: int = 0
    tokens: int = 0
    admitted: int = 0
    finished: int = 0
    aborted: int = 0
    budget_hits: int = 0
    forced_tokens: int = 0
    grammar_stops: int = 0
    """Requests ended because their grammar was complete."""
    step_ns: list[int] = field(default_factory=list)


async def drive(
    engine: SimulatedEngine,
    runtime: ReasoningRuntime,
    *,
    options: Callable[[SimRequest], dict[str, Any]] | None = None,
    on_admit: Callable[[SimRequest, RequestStream], None] | None = None,
    on_step: Callable[[int, BatchStepResult], None] | None = None,
) -> DriveStats:
    """Run the simulated engine to the end, stepping ``runtime`` once per engine step.

    ``on_admit`` receives each admitted request and its stream (start a consumer task
    there). The loop yields to other tasks after every step, as a server's would. Requests
    added with ``response_format`` are sampled under their masks, filled once per step.
    """
    stats = DriveStats()
    last: BatchStepResult | None = None
    bitmask: np.ndarray[Any, Any] | None = None
    n_constrained = 0

    def forced(rid: int) -> Sequence[int]:
        if last is None:
            return ()
        try:
            return last.forced_token_ids(rid)
        except ReasonspanError:  # admitted after that step, or already gone
            return ()

    while not engine.done:
        for r in engine.admit():
            opts = options(r) if options else {}
            stream = runtime.add(r.request_id, r.parser, r.prompt_ids, **opts)
            r.constrained = opts.get("response_format") is not None
            n_constrained += r.constrained
            stats.admitted += 1
            if on_admit is not None:
                on_admit(r, stream)
        for rid in runtime.take_aborted():
            engine.abort(rid)
            stats.aborted += 1
        masks: dict[int, np.ndarray[Any, Any]] | None = None
        if n_constrained and engine.active:
            ids = [r.request_id for r in engine.active]
            if bitmask is None or bitmask.shape[0] < len(ids):
                bitmask = runtime.batch.allocate_token_bitmask(max(len(ids), engine.max_batch))
            masked = runtime.batch.fill_token_bitmask(ids, bitmask)
            masks = {ids[i]: bitmask[i] for i in np.flatnonzero(masked).tolist()}
        rids, toks, offs, done = engine.step(forced, masks=masks)
        t0 = time.perf_counter_ns()
        last = runtime.step(rids, toks, offs)
        for r in done:
            runtime.finish(r.request_id, "length" if r.finish_reason == "length" else "stop")
        if n_constrained and last.grammar_stopped.any():
            ended = {r.request_id for r in done}
            for i in np.flatnonzero(last.grammar_stopped).tolist():
                rid = int(last.request_ids[i])
                if rid not in ended:
                    engine.stop(rid)
                    runtime.finish(rid, "stop")
                    stats.grammar_stops += 1
        stats.step_ns.append(time.perf_counter_ns() - t0)
        stats.steps += 1
        stats.tokens += int(toks.shape[0])
        stats.finished += len(done)
        if on_step is not None:
            on_step(stats.steps, last)
        await anyio.sleep(0)
    stats.budget_hits = sum(1 for r in engine.finished if r.forced_emitted)
    stats.forced_tokens = sum(r.forced_emitted for r in engine.finished)
    return stats
