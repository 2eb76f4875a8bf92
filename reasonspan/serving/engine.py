"""Engines behind the reference server, and the small interface one's own engine fills.

The server admits a request into the runtime (which returns its stream and engine id),
then hands the engine an :class:`EngineRequest`. The engine's loop does what a real one
does each step: stop the ids in ``runtime.take_aborted()``, admit new requests, generate
(honouring the forced tokens of thinking budgets), call ``runtime.step(...)`` with the
step arrays, and ``runtime.finish(id, reason)`` for requests that hit their end of
sequence ("stop") or ``max_tokens`` ("length").

:class:`SimulatedServingEngine` is the SIMULATED engine over real tokenizers: it replays a
script per request and does not model the prompt. The script is the request's
``simulated_output_ids`` (exact token ids, to replay a recorded output) or
``simulated_output`` text when given (tests use this), else one of the demo transcripts in
the family's format, chosen deterministically by a hash of the prompt. It honours
``max_tokens``, thinking budgets and ``response_format`` (it samples under the grammar's
mask, as :mod:`reasonspan.runtime.stream.simulation` describes, and stops when the document is
complete) and ignores the decoding parameters of ``EngineRequest.sampling`` (temperature,
seed, ...), which mean nothing to a script. A request that asks for ``logprobs`` gets
simulated ones (:func:`simulated_logprobs`: a fixed function of each token id, the
sampled token first among its ``top_logprobs``), so the path from the engine to each
chunk is the one a real engine's values take. With
``threaded=True`` its loop runs on a thread of its own and reaches the runtime through
:meth:`ReasoningRuntime.from_thread`, as an engine around GPU kernels would.
"""

from __future__ import annotations

import hashlib
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import numpy as np

from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.stream.logprobs import StepLogprobs
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RuntimeFromThread
from reasonspan.runtime.stream.simulation import SimRequest, SimulatedEngine
from reasonspan.serving.protocol import ChatCompletionRequest, SamplingParams
from reasonspan.transcripts import ALL
from reasonspan.workload import scripted_output


@dataclass
class EngineRequest:
    """What the server hands its engine for one admitted request."""

    engine_id: int
    """The request's id in the step arrays (``RequestStream.engine_id``)."""
    parser: ReasoningParser
    prompt_ids: list[int]
    request: ChatCompletionRequest
    """The validated request: sampling fields, ``max_tokens``, ``response_format``."""
    sampling: SamplingParams | None = None
    """The request's sampling parameters (``temperature``, ``stop``, ``seed``, ...; see
    :class:`~reasonspan.serving.protocol.SamplingParams`); filled from ``request`` when
    not given."""
    script_ids: list[int] | None = None
    """For the SIMULATED engine: the request's ``simulated_output`` as token ids (or its
    ``simulated_output_ids``), tokenized by the server on a worker thread and bounded by
    its ``max_model_len``, so that :meth:`Engine.submit`, on the event loop, never
    tokenizes megabytes. None: the engine works the script out itself (:func:`script_for`)."""

    def __post_init__(self) -> None:
        if self.sampling is None:
            self.sampling = self.request.sampling_params()


class Engine(Protocol):
    """What the reference server needs from an engine."""

    def submit(self, request: EngineRequest) -> None:
        """A new request (called on the event loop; must not block)."""
        ...

    async def run(self, runtime: ReasoningRuntime) -> None:
        """The engine loop, for the server's lifetime (cancelled at shutdown)."""
        ...


def script_for(req: EngineRequest) -> list[int]:
    """The token ids the simulated model "writes" for a request (see the module docs).

    Called on the event loop (from :meth:`SimulatedServingEngine.submit`): a given script
    comes tokenized (``script_ids``) from the server; only a demo transcript, a few hundred
    tokens, is encoded here."""
    tok = req.parser.tokenizer
    if req.script_ids is not None:
        return req.script_ids
    if req.request.simulated_output_ids is not None:
        return list(req.request.simulated_output_ids)
    if req.request.simulated_output is not None:
        return tok.encode(req.request.simulated_output)
    digest = hashlib.blake2b(np.asarray(req.prompt_ids, np.int64).tobytes(), digest_size=8)
    t = ALL[int.from_bytes(digest.digest(), "little") % len(ALL)]
    text = scripted_output(
        req.parser, t.reasoning, t.answer, t.tool_call, prompt_ids=req.prompt_ids
    )
    return tok.encode(text)


class SimulatedServingEngine:
    """The SIMULATED engine as a serving engine: scripts replayed with continuous
    batching, ``tokens_per_step`` tokens per request per step (k > 1 models speculative
    decoding), a pause of ``step_interval`` seconds between steps."""

    def __init__(
        self,
        *,
        max_batch: int = 256,
        tokens_per_step: int = 1,
        step_interval: float = 0.0,
        threaded: bool = False,
    ) -> None:
        self.sim = SimulatedEngine([], max_batch=max_batch, tokens_per_step=tokens_per_step)
        self.step_interval = step_interval
        self.threaded = threaded
        self._inbox: deque[SimRequest] = deque()
        self._forced: dict[int, list[int]] = {}
        self._budget: dict[int, int] = {}
        """Thinking budget left per request (requests with a budget only)."""
        self._kick = anyio.Event()
        self._thread_kick = threading.Event()
        self.steps = 0
        self.aborted = 0
        """Requests stopped because the runtime aborted them (client gone)."""
        self._runtime: ReasoningRuntime | None = None
        self._constrained: set[int] = set()
        """Requests with a grammar (``response_format``): sampled under their masks."""
        self._masks: dict[int, np.ndarray[Any, Any]] = {}
        """Next-token bitmask rows of the constrained requests whose grammar is active."""
        self._logprobs: dict[int, tuple[int, int]] = {}
        """Requests that asked for log probabilities: their top count and vocabulary size."""

    def submit(self, request: EngineRequest) -> None:
        limit = request.request.token_limit
        budget = request.request.thinking_token_budget
        if budget is not None:
            self._budget[request.engine_id] = budget
        self._inbox.append(
            SimRequest(
                request_id=request.engine_id,
                parser=request.parser,
                prompt_ids=request.prompt_ids,
                output_ids=script_for(request),
                max_tokens=limit,
                constrained=request.request.structured_output,
            )
        )
        top = request.request.logprobs_top
        if top is not None:
            self._logprobs[request.engine_id] = (top, len(request.parser.tokenizer.token_bytes))
        if request.request.structured_output and self._runtime is not None:
            self._constrained.add(request.engine_id)
            self._fill_masks(self._runtime)  # the first token may be the grammar's
        self._kick.set()
        self._thread_kick.set()

    # ------------------------------------------------------------------ one step

    def _generate(self, aborted: Sequence[int]) -> tuple[Any, Any, Any, list[SimRequest]] | None:
        """The model's part of a step (no runtime call): aborts, admission, new tokens."""
        sim = self.sim
        while self._inbox:  # first: a request submitted and aborted since the last step
            sim.submit(self._inbox.popleft())  # is then found, not admitted after its abort
        for eid in aborted:
            self.aborted += 1
            sim.abort(eid)
            self._forced.pop(eid, None)
            self._budget.pop(eid, None)
            self._constrained.discard(eid)
            self._logprobs.pop(eid, None)
        sim.admit()
        sim.finished.clear()  # a server runs forever: keep nothing per finished request
        if not sim.active:
            return None
        forced = self._forced
        budget = self._budget
        if self._masks:
            masks = dict(self._masks)
            return sim.step(lambda rid: forced.get(rid, ()), budget.get, masks=masks)
        return sim.step(lambda rid: forced.get(rid, ()), budget.get)

    def _commit(
        self, runtime: ReasoningRuntime, step: tuple[Any, Any, Any, list[SimRequest]]
    ) -> list[int]:
        """The runtime's part of a step (on the event loop): labels and text, finished
        requests, the forced tokens of the next step; returns the ids to abort."""
        rids, toks, offs, done = step
        lp = simulated_logprobs(rids, toks, offs, self._logprobs) if self._logprobs else None
        res = runtime.step(rids, toks, offs, logprobs=lp)
        self._forced = _forced_tokens(res)
        if self._budget:
            left = res.budget_remaining.tolist()
            for row, rid in enumerate(res.request_ids.tolist()):
                if left[row] >= 0:
                    self._budget[rid] = left[row]
        for r in done:
            self._budget.pop(r.request_id, None)
            self._constrained.discard(r.request_id)
            self._logprobs.pop(r.request_id, None)
            runtime.finish(r.request_id, "length" if r.finish_reason == "length" else "stop")
        if self._constrained:
            if res.grammar_stopped.any():  # the document is complete: end it there
                ended = {r.request_id for r in done}
                for row in np.flatnonzero(res.grammar_stopped).tolist():
                    rid = int(res.request_ids[row])
                    if rid not in ended:
                        self.sim.stop(rid)
                        self._constrained.discard(rid)
                        self._budget.pop(rid, None)
                        self._logprobs.pop(rid, None)
                        runtime.finish(rid, "stop")
            self._fill_masks(runtime)
        self.steps += 1
        return runtime.take_aborted()

    def _fill_masks(self, runtime: ReasoningRuntime) -> None:
        """The next step's masks of the constrained requests (on the event loop, where the
        runtime lives), one parallel fill for all of them."""
        batch = runtime.batch
        ids = [rid for rid in self._constrained if rid in batch]
        self._masks = {}
        if not ids:
            return
        bitmask = batch.allocate_token_bitmask(len(ids))
        masked = batch.fill_token_bitmask(ids, bitmask)
        self._masks = {ids[i]: bitmask[i] for i in np.flatnonzero(masked).tolist()}

    # ------------------------------------------------------------------ loops

    async def run(self, runtime: ReasoningRuntime) -> None:
        self._runtime = runtime
        try:
            if self.threaded:
                await self._run_threaded(runtime)
            else:
                await self._run_async(runtime)
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:
            runtime.fail(exc)  # no consumer waits forever on a dead engine
            raise

    async def _run_async(self, runtime: ReasoningRuntime) -> None:
        aborted: list[int] = []
        while True:
            step = self._generate(aborted + runtime.take_aborted())
            if step is None:
                aborted = []
                await self._kick.wait()
                self._kick = anyio.Event()
                continue
            aborted = self._commit(runtime, step)
            await anyio.sleep(self.step_interval)

    async def _run_threaded(self, runtime: ReasoningRuntime) -> None:
        stop = threading.Event()
        failure: list[BaseException] = []
        async with runtime.from_thread() as link:
            thread = threading.Thread(
                target=self._thread_loop,
                args=(runtime, link, stop, failure),
                name="reasonspan-simulated-engine",
                daemon=True,
            )
            thread.start()
            try:
                while thread.is_alive():
                    await anyio.sleep(0.05)
            finally:
                stop.set()
                self._thread_kick.set()
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(thread.join)
        if failure:
            raise failure[0]

    def _thread_loop(
        self,
        runtime: ReasoningRuntime,
        link: RuntimeFromThread,
        stop: threading.Event,
        failure: list[BaseException],
    ) -> None:
        """The engine thread: generates on its own thread, one portal hop per step."""
        aborted: list[int] = []
        try:
            while not stop.is_set():
                step = self._generate(aborted + link.take_aborted())
                if step is None:
                    aborted = []
                    self._thread_kick.wait(0.05)
                    self._thread_kick.clear()
                    continue
                aborted = link.call(lambda s=step: self._commit(runtime, s))  # type: ignore[misc]
                if self.step_interval:
                    stop.wait(self.step_interval)
        except BaseException as exc:
            failure.append(exc)


def _forced_tokens(res: BatchStepResult) -> dict[int, list[int]]:
    """Requests whose thinking budget is spent: the tokens they must emit next."""
    rows = np.flatnonzero(res.forcing)
    if not rows.shape[0]:
        return {}
    ids = res.request_ids[rows].tolist()
    return {rid: res.forced_token_ids(rid) for rid in ids}


def simulated_logprobs(
    rids: Any, toks: Any, offs: Any, asked: dict[int, tuple[int, int]]
) -> StepLogprobs:
    """The step's log probabilities, simulated: token ``t`` was sampled with log
    probability ``-(t % 997) / 1000``; the likeliest tokens at its position are ``t``
    itself and then ``t + 1``, ``t + 2``, ... (within the vocabulary), each 1 less likely
    than the last. Enough columns for the largest ``top_logprobs`` asked in the step."""
    toks = np.asarray(toks, dtype=np.int64)
    values = -(toks % 997) / 1000.0
    rows = np.asarray(rids, dtype=np.int64).tolist()
    k = max((asked[r][0] for r in rows if r in asked), default=0)
    if not k:
        return StepLogprobs(values)
    vocab = np.full(toks.shape[0], 1 << 62, dtype=np.int64)
    bounds = np.asarray(offs, dtype=np.int64).tolist()
    for row, rid in enumerate(rows):
        if rid in asked:
            vocab[bounds[row] : bounds[row + 1]] = asked[rid][1]
    steps = np.arange(k, dtype=np.int64)
    top_ids = (toks[:, None] + steps[None, :]) % vocab[:, None]
    top_values = values[:, None] - steps[None, :].astype(np.float64)
    return StepLogprobs(values, top_ids, top_values)
