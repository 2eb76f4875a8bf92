"""Log probabilities, carried from the engine to each request's chunks.

The engine hands them over with a step (:class:`StepLogprobs`, one entry per token of the
step, in the step's order); each request that asked for them (``add(..., logprobs=k)``)
keeps its own (:class:`RequestLogprobs`). Which list a token's entry joins is decided by
the token's label, the same label that decides where its text goes
(``runtime/core/labels.py``):

- ``content``: the answer's tokens (``CONTENT``, the ``TOOL`` markers kept for the tool
  parser, harmony's ``TOOL_CALL`` messages): what OpenAI's ``logprobs.content`` holds,
  aligned with ``message.content`` and the calls instead of with the raw output (SGLang
  #25055: engines that report the reasoning tokens there misalign the two);
- ``reasoning`` (an extension, beside ``delta.reasoning``): the reasoning tokens, left out
  when the request leaves reasoning out (``include_reasoning=False``); a reasoning-only
  answer that the family presents as content (nemotron_v3's swap) moves them to
  ``content`` with its text;
- neither: a consumed marker (``DELIMITER``), whose text is in neither.

A token's entry joins its list when the batch decides the token's label (a token held at a
possible marker is decided later), and goes out with the request's next chunk, so each
list, joined over the chunks, holds every such token once, in order. (The text of a token
may come a chunk later than its entry: the decoder holds a split character or a trailing
newline it may trim. A step whose stop string matched reports every token of that step.)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

import msgspec
import numpy as np

from reasonspan.runtime.batch.errors import InvalidStepError
from reasonspan.runtime.core.labels import CONTENT, REASONING, TOOL, TOOL_CALL
from reasonspan.runtime.wire.openai import ChoiceLogprobs, ChunkChoice, TokenLogprob, TopLogprob

MAX_TOP_LOGPROBS = 20
"""The most likeliest tokens a request may ask for per position (OpenAI's limit)."""

_ANSWER = frozenset({CONTENT, TOOL, TOOL_CALL})


class StepLogprobs(msgspec.Struct, frozen=True):
    """What the engine sampled with, for each token of one step, in the step's token order
    (``token_ids`` of :meth:`~reasonspan.ReasoningRuntime.step`): ``logprobs[i]`` the log
    probability of token ``i``; ``top_ids[i]`` / ``top_logprobs[i]`` the ``k`` likeliest
    tokens at its position, likeliest first (None: no request asked for any; ``k`` at
    least the largest ``top_logprobs`` a request of the step asked for)."""

    logprobs: Any
    top_ids: Any = None
    top_logprobs: Any = None

    def checked(self, n_tokens: int) -> StepLogprobs:
        """This step's arrays as numpy arrays of the right shapes; a shape that does not fit
        the step raises :class:`InvalidStepError` naming the field (before any request
        changes)."""
        values = np.asarray(self.logprobs, dtype=np.float64)
        if values.shape != (n_tokens,):
            raise InvalidStepError(
                f"logprobs.logprobs has shape {values.shape}: expected ({n_tokens},), one"
                " value per token of the step"
            )
        if (self.top_ids is None) != (self.top_logprobs is None):
            raise InvalidStepError("logprobs.top_ids and logprobs.top_logprobs go together")
        if self.top_ids is None:
            return StepLogprobs(values)
        ids = np.asarray(self.top_ids, dtype=np.int64)
        tops = np.asarray(self.top_logprobs, dtype=np.float64)
        if ids.ndim != 2 or ids.shape[0] != n_tokens or tops.shape != ids.shape:
            raise InvalidStepError(
                f"logprobs.top_ids {ids.shape} and top_logprobs {tops.shape}: expected"
                f" ({n_tokens}, k), one row per token of the step"
            )
        return StepLogprobs(values, ids, tops)


class RequestLogprobs:
    """One request's entries: those the engine sent for tokens not decided yet
    (``waiting``), and those decided and not sent yet, by list (module doc)."""

    __slots__ = ("_bytes", "content", "reasoning", "top", "waiting")

    def __init__(self, top: int, token_bytes: list[bytes]) -> None:
        self.top = top
        """How many likeliest tokens each entry carries (0 to :data:`MAX_TOP_LOGPROBS`)."""
        self.waiting: deque[TokenLogprob] = deque()
        self.content: list[TokenLogprob] = []
        self.reasoning: list[TokenLogprob] = []
        self._bytes = token_bytes

    def take(self, step: StepLogprobs, token_ids: list[int], start: int) -> None:
        """The engine's entries for this request's tokens of a step, which sit at
        ``start`` onwards in the step. A top id outside the vocabulary raises ValueError
        (the runtime fails this request alone)."""
        top = self.top
        values = step.logprobs[start : start + len(token_ids)].tolist()
        if top:
            if step.top_ids is None or step.top_ids.shape[1] < top:
                have = 0 if step.top_ids is None else step.top_ids.shape[1]
                raise ValueError(
                    f"the request asked for top_logprobs={top} and the engine's step has {have}"
                )
            ids_rows = step.top_ids[start : start + len(token_ids), :top].tolist()
            top_rows = step.top_logprobs[start : start + len(token_ids), :top].tolist()
        for i, (tid, value) in enumerate(zip(token_ids, values, strict=True)):
            tops = (
                [self._top(t, v) for t, v in zip(ids_rows[i], top_rows[i], strict=True)]
                if top
                else []
            )
            data = self._bytes[tid]
            self.waiting.append(
                TokenLogprob(data.decode("utf-8", "replace"), value, list(data), tops)
            )

    def _top(self, tid: int, value: float) -> TopLogprob:
        if not 0 <= tid < len(self._bytes):
            raise ValueError(f"top_logprobs: token id {tid} is not in the vocabulary")
        data = self._bytes[tid]
        return TopLogprob(data.decode("utf-8", "replace"), value, list(data))

    def route(self, labels: bytes | bytearray) -> None:
        """The next ``len(labels)`` waiting entries are decided: each joins its label's
        list (module doc)."""
        waiting = self.waiting
        if len(waiting) < len(labels):
            raise ValueError(
                f"the engine sent log probabilities for {len(waiting)} of {len(labels)} tokens"
                " of a request that asked for them (step(..., logprobs=...) on every step)"
            )
        for lab in labels:
            entry = waiting.popleft()
            if lab == REASONING:
                self.reasoning.append(entry)
            elif lab in _ANSWER:
                self.content.append(entry)

    def as_content(self) -> None:
        """The reasoning is presented as the answer (the family's swap): so are its
        entries."""
        self.content[:0] = self.reasoning
        self.reasoning = []

    def sendable(self, include_reasoning: bool) -> ChoiceLogprobs | msgspec.UnsetType:
        """The entries decided since the last chunk, for the next one (UNSET: none; the
        reasoning entries are dropped when reasoning is left out)."""
        content = self.content
        reasoning = self.reasoning if include_reasoning else None
        if not content and not reasoning:
            self.reasoning = []
            return msgspec.UNSET
        self.content = []
        self.reasoning = []
        return ChoiceLogprobs(content=content, reasoning=reasoning or None)

    def add_to(self, choice: ChunkChoice, include_reasoning: bool) -> None:
        """Put the entries decided since the last chunk into ``choice`` too (a chunk not
        read yet that a new delta was merged into: the runtime's buffer policy)."""
        got = self.sendable(include_reasoning)
        if got is msgspec.UNSET:
            return
        have = choice.logprobs
        if have is msgspec.UNSET:
            choice.logprobs = got
            return
        for name in ("content", "reasoning"):
            more = getattr(got, name)
            if more:
                mine = getattr(have, name)
                if mine is None:
                    setattr(have, name, more)
                else:
                    mine.extend(more)


class Holder(Protocol):
    """What :func:`hand_out` reads of a request's record (``StreamRecord``)."""

    logprobs: RequestLogprobs | None
    closed: bool


H = TypeVar("H", bound=Holder)


def hand_out(
    step: StepLogprobs,
    records: Mapping[int, H],
    request_ids: Any,
    token_ids: Any,
    offsets: Any,
) -> list[tuple[H, ValueError]]:
    """Give each open request of the step that asked for log probabilities the entries of
    its tokens (``step`` checked against the step); return the requests whose entries
    were wrong (a top id outside the vocabulary), for the runtime to fail alone."""
    offs = np.asarray(offsets, dtype=np.int64).tolist()
    toks = np.asarray(token_ids, dtype=np.int64)
    failed: list[tuple[H, ValueError]] = []
    for row, rid in enumerate(np.asarray(request_ids, dtype=np.int64).tolist()):
        got = records.get(rid)
        if got is None or got.logprobs is None or got.closed:
            continue
        try:
            got.logprobs.take(step, toks[offs[row] : offs[row + 1]].tolist(), offs[row])
        except ValueError as exc:
            failed.append((got, exc))
    return failed
