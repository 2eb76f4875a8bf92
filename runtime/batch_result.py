"""What the batch runtime hands back: one step's result, a request's final tail and usage,
and the errors a caller can act on.

A step result holds arrays over the whole batch (cheap: a few gathers per step). Anything
per request and list-shaped (``split()``, ``forced_token_ids()``) is built only when asked
for, so a scheduler that only needs the arrays never pays for per-request Python objects.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec
import numpy as np
import numpy.typing as npt

from .errors import InvalidTokenError, ReasonspanError
from .labels import split_labels

if TYPE_CHECKING:
    from .batch import ReasoningBatch

HELD = 255
"""Label of a new token that is not decided yet: it may begin a multi-token marker, so it
is held back (families with text markers only). Its real label arrives in the step that
decides it (:meth:`BatchStepResult.decided`) or in :meth:`ReasoningBatch.finish`."""

FAILED = 254
"""Label of every new token of a request whose parser raised (see
:class:`RequestFailedError`); the request is frozen and must be removed."""

Spill = tuple[int, bytes, int, int]
"""``(index, bytes, channel label, after)``: text of a token only partly covered by a text
marker (see :data:`reasonspan.runtime.machine.Spill`); ``index`` counts decided tokens."""

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
LabelArray = npt.NDArray[np.uint8]


# ---------------------------------------------------------------------------- errors


class UnknownRequestError(ReasonspanError, KeyError):
    """A request id that is not in the batch (never added, or already removed)."""

    def __init__(self, request_id: int, where: str) -> None:
        self.request_id = request_id
        super().__init__(f"{where}: request {request_id} is not in the batch")

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class DuplicateRequestError(ReasonspanError, ValueError):
    """``add()`` of a request id that is already in the batch."""

    def __init__(self, request_id: int) -> None:
        self.request_id = request_id
        super().__init__(
            f"request {request_id} is already in the batch; remove() it before adding it again"
        )


class InvalidStepError(ReasonspanError, ValueError):
    """A ``step()`` whose arrays do not fit together (offsets, shapes, repeated ids)."""


class RequestFinishedError(ReasonspanError, ValueError):
    """A step or ``finish()`` for a request that ``finish()`` already ended."""

    def __init__(self, request_id: int, where: str) -> None:
        self.request_id = request_id
        super().__init__(f"{where}: request {request_id} is already finished; remove() it")


class RequestFailedError(ReasonspanError, RuntimeError):
    """The per-request parser of one request raised. Only that request is affected: it is
    frozen (its later tokens are labelled FAILED), ``finish()`` raises this error again, and
    ``remove()`` frees it. The original exception is ``__cause__``."""

    def __init__(self, request_id: int, parser: str, cause: BaseException) -> None:
        self.request_id = request_id
        self.parser = parser
        super().__init__(
            f"request {request_id}: parser {parser!r} raised {type(cause).__name__}: {cause}"
        )
        self.__cause__ = cause


class BatchTokenError(InvalidTokenError):
    """A token id outside the vocabulary of the request it was given for."""

    def __init__(
        self, value: object, position: int, vocab_size: int, request_id: int, parser: str
    ) -> None:
        super().__init__(value, position, vocab_size, "token_ids")
        self.request_id = request_id
        self.parser = parser
        self.args = (f"{self.args[0]} of request {request_id} (parser {parser!r})",)


# ---------------------------------------------------------------------------- records


class RequestUsage(msgspec.Struct, frozen=True, gc=False):
    """Token counts of one request, all derived from the labels.

    Every generated token (forced ones included) is counted exactly once:
    ``completion_tokens == reasoning_tokens + content_tokens + delimiter_tokens +
    held_tokens``. Consumed markers (``<think>``, ``</think>``, stripped wrappers) are
    ``delimiter_tokens``: billed as completion tokens, counted in neither reasoning nor
    content (OpenAI's ``completion_tokens_details.reasoning_tokens`` is
    ``reasoning_tokens``). TOOL markers and TOOL_CALL messages count as content here (not
    reasoning; the tool parser receives them).
    """

    completion_tokens: int
    reasoning_tokens: int
    content_tokens: int
    delimiter_tokens: int
    held_tokens: int
    """Tokens not decided yet (hold-back families); always 0 after ``finish()``."""
    reasoning_ended: bool
    """False while (or, after ``finish()``, because) the request is still inside reasoning:
    with finish_reason "length" that means the model never reached its answer."""
    budget_exhausted: bool
    """The thinking budget ran out at some point and the end of reasoning was forced."""


class BatchFinish(msgspec.Struct, frozen=True):
    """The tail of a finished request: the held-back tokens, decided now, and final usage.

    Unpacks as ``reasoning_ids, content_ids = batch.finish(rid)``.
    """

    reasoning_token_ids: list[int]
    content_token_ids: list[int]
    token_ids: list[int]
    labels: bytes
    usage: RequestUsage
    reasoning_as_content: bool = False
    """For a family that returns its reasoning as content when no content came
    (``reasoning_as_content_if``, e.g. nemotron_v3 with ``enable_thinking: false``): present
    everything this request streamed as reasoning as its content instead. The tail here
    and ``usage`` already count it as content, as ``parse()`` does."""

    spill: tuple[Spill, ...] = ()
    """Text of tail tokens only partly covered by a text marker, for the text decoder."""

    @property
    def reasoning_ended(self) -> bool:
        return self.usage.reasoning_ended

    def __iter__(self) -> Iterator[list[int]]:
        return iter((self.reasoning_token_ids, self.content_token_ids))


# ---------------------------------------------------------------------------- step result


class BatchStepResult:
    """One engine step, for the whole batch. Arrays are aligned with ``request_ids``
    (per request) or with ``token_ids`` (per token); all of them are owned by the result.

    Per-request lookups (:meth:`split`, :meth:`decided`, :meth:`forced_token_ids`) are valid
    until the request is removed from the batch.
    """

    __slots__ = (
        "_batch",
        "_decided",
        "_forced_pos",
        "_gen",
        "_include",
        "_rows",
        "_slots",
        "_spill",
        "budget_remaining",
        "errors",
        "forcing",
        "grammar_active",
        "grammar_mask",
        "held_tokens",
        "is_reasoning",
        "labels",
        "next_forced_token",
        "offsets",
        "reasoning_tokens",
        "request_ids",
        "token_ids",
    )

    request_ids: IntArray
    token_ids: IntArray
    offsets: IntArray
    labels: LabelArray
    """One label per entry of ``token_ids``: a :class:`~reasonspan.Label` value, or
    :data:`HELD` (not decided yet) or :data:`FAILED` (the request's parser raised)."""
    is_reasoning: BoolArray
    """The request is inside reasoning after this step's decided tokens."""
    grammar_active: BoolArray
    """Sample the request's next token under its grammar (structured_output requests
    outside reasoning; always False for the others)."""
    grammar_mask: BoolArray
    """Per token: it was generated while the request's grammar was active, so the engine
    hands it to the grammar matcher. These are the content tokens after the end of
    reasoning; the marker that ends reasoning (or a TOOL marker that does) is never among
    them. A marker that the grammar itself let through while active (a ``<think>`` that
    re-enters reasoning in glm45-like families, a repeated ``</think>``) is, because the
    grammar sampled it; the tokens after a re-entry are reasoning and are not."""
    reasoning_tokens: IntArray
    """Reasoning tokens so far (decided, REASONING label), per request."""
    budget_remaining: IntArray
    """Reasoning tokens the request may still generate before its end is forced; -1 for
    no budget. A speculative engine proposes at most this many model tokens before the
    forced ones. Held-back tokens count once decided (a held ``</`` may be the model's own
    end marker, which forcing must not cut off), so in hold-back families a reasoning token
    that looked like the start of a marker can take the count past the budget."""
    forcing: BoolArray
    """The thinking budget is spent: the engine must emit :meth:`forced_token_ids`."""
    next_forced_token: IntArray
    """The first forced token per request, -1 when nothing is forced (plain decoding:
    ``np.where(res.next_forced_token >= 0, res.next_forced_token, sampled)``)."""
    held_tokens: IntArray
    """Tokens held back (undecided) per request after this step."""
    errors: dict[int, RequestFailedError]
    """Requests whose parser raised (this step or earlier), by request id."""

    _slots: IntArray
    _include: BoolArray | None
    _forced_pos: IntArray | None
    _gen: IntArray | None

    def __init__(self, batch: ReasoningBatch) -> None:
        self._batch = batch
        self._rows: dict[int, int] | None = None
        self._decided: dict[int, tuple[list[int], bytes]] = {}
        self._spill: dict[int, tuple[Spill, ...]] = {}

    # ------------------------------------------------------------------ lookups

    def row(self, request_id: int) -> int:
        """Index of ``request_id`` in ``request_ids``."""
        rows = self._rows
        if rows is None:
            rows = self._rows = {r: i for i, r in enumerate(self.request_ids.tolist())}
        try:
            return rows[request_id]
        except KeyError:
            raise UnknownRequestError(request_id, "this step") from None

    def decided(self, request_id: int) -> tuple[list[int], bytes]:
        """``(token_ids, labels)`` decided for the request in this step, in order: what the
        per-request ``stream()`` returns. It differs from the step's own tokens only for
        hold-back families (earlier held tokens first, tokens still held left out)."""
        i = self.row(request_id)
        got = self._decided.get(i)
        if got is not None:
            return got
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.token_ids[a:b].tolist(), self.labels[a:b].tobytes()

    def all_decided(self) -> Iterator[tuple[int, list[int], bytes, tuple[Spill, ...]]]:
        """``(request_id, token_ids, labels, spill)`` for every request of the step, as
        :meth:`decided` and :meth:`spill` give them, converting the arrays once (the
        async runtime turns every request's tokens into text each step)."""
        toks = self.token_ids.tolist()
        labels = self.labels.tobytes()
        offs = self.offsets.tolist()
        decided = self._decided
        spill = self._spill
        for i, rid in enumerate(self.request_ids.tolist()):
            got = decided.get(i) if decided else None
            if got is not None:
                yield rid, got[0], got[1], spill.get(i, ())
            else:
                a, b = offs[i], offs[i + 1]
                yield rid, toks[a:b], labels[a:b], ()

    def spill(self, request_id: int) -> tuple[Spill, ...]:
        """Text of this step's decided tokens that a text marker covers only in part
        (indices into :meth:`decided`), for ``LabelledDecoder.feed``; empty except for
        families with text markers."""
        return self._spill.get(self.row(request_id), ())

    def split(self, request_id: int) -> tuple[list[int], list[int]]:
        """``(reasoning_ids, content_ids)`` decided in this step for one request; reasoning
        is empty for a request added with ``include_reasoning=False``."""
        i = self.row(request_id)
        include = True if self._include is None else bool(self._include[i])
        ids, labels = self.decided(request_id)
        return split_labels(ids, labels, include)

    def forced_token_ids(self, request_id: int) -> list[int]:
        """The tokens the engine must emit next, one per position (empty when nothing is
        forced): the rest of the lead-in phrase, then the end marker."""
        i = self.row(request_id)
        if self._forced_pos is None:
            return []
        pos = int(self._forced_pos[i])
        if pos < 0:
            return []
        slot = int(self._slots[i])
        if self._gen is not None and self._batch.slot_generation(slot) != int(self._gen[i]):
            raise UnknownRequestError(request_id, "forced_token_ids (removed since this step)")
        return self._batch.forced_sequence(slot)[pos:]

    def __len__(self) -> int:
        return int(self.request_ids.shape[0])

    def __repr__(self) -> str:
        return (
            f"BatchStepResult(requests={len(self)}, tokens={self.token_ids.shape[0]}, "
            f"reasoning={int(self.is_reasoning.sum())}, errors={len(self.errors)})"
        )
