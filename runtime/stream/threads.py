"""An engine loop on another thread: the engine-side calls of a runtime, each run on the
event loop through an anyio ``BlockingPortal`` (see
:meth:`reasonspan.runtime.stream.runtime.ReasoningRuntime.from_thread`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import numpy as np
from anyio.from_thread import BlockingPortal

from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.stream.errors import RequestKey
from reasonspan.runtime.stream.logprobs import StepLogprobs
from reasonspan.runtime.wire.openai import FinishReason

T = TypeVar("T")


class EngineSide(Protocol):
    """The runtime's engine-side calls (what :class:`RuntimeFromThread` forwards)."""

    def step(
        self,
        request_ids: np.ndarray[Any, Any],
        token_ids: np.ndarray[Any, Any],
        offsets: np.ndarray[Any, Any],
        logprobs: StepLogprobs | None = None,
    ) -> BatchStepResult: ...

    def finish(self, request_id: RequestKey, finish_reason: FinishReason = "stop") -> None: ...

    def take_aborted(self) -> list[int]: ...

    def abort(self, request_id: RequestKey) -> bool: ...

    def fail(self, exc: BaseException) -> None: ...


class RuntimeFromThread:
    """The engine-side calls of a :class:`ReasoningRuntime`, for an engine loop on another
    thread: each call runs on the event loop (see :meth:`ReasoningRuntime.from_thread`)."""

    def __init__(self, runtime: EngineSide, portal: BlockingPortal) -> None:
        self.runtime = runtime
        self._portal = portal

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the event loop and return its result (one hop for several calls:
        step, finish, take_aborted together)."""
        return self._portal.call(fn)

    def step(
        self,
        request_ids: np.ndarray[Any, Any],
        token_ids: np.ndarray[Any, Any],
        offsets: np.ndarray[Any, Any],
        logprobs: StepLogprobs | None = None,
    ) -> BatchStepResult:
        return self._portal.call(self.runtime.step, request_ids, token_ids, offsets, logprobs)

    def finish(self, request_id: RequestKey, finish_reason: FinishReason = "stop") -> None:
        self._portal.call(self.runtime.finish, request_id, finish_reason)

    def take_aborted(self) -> list[int]:
        return self._portal.call(self.runtime.take_aborted)

    def abort(self, request_id: RequestKey) -> bool:
        return self._portal.call(self.runtime.abort, request_id)

    def fail(self, exc: BaseException) -> None:
        self._portal.call(self.runtime.fail, exc)
