"""The batch runtime's shared vocabulary: its extra labels, the budget sentinel, the array
types, and the records a caller keeps (a request's usage, its final tail).

Owns what every batch module and every caller agrees on. It must not know how a batch
stores or steps its requests: nothing here imports another batch module.

Usage counts, exactly (:class:`RequestUsage`): completion = reasoning + content +
delimiters + held; consumed markers are delimiters, counted in neither reasoning nor
content; TOOL markers are content. ``reasoning_ended`` False after ``finish()`` means the
output stopped inside reasoning (finish_reason "length"), which the caller must surface.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
import numpy as np
import numpy.typing as npt

from reasonspan.runtime.core.machine import Spill as Spill  # (core's one Spill, re-exported)

HELD = 255
"""Label of a new token that is not decided yet: it may begin a multi-token marker, so it
is held back (families with text markers only). Its real label arrives in the step that
decides it (:meth:`BatchStepResult.decided`) or in :meth:`ReasoningBatch.finish`."""

FAILED = 254
"""Label of every new token of a request whose parser raised (see
:class:`RequestFailedError`); the request is frozen and must be removed."""

NO_BUDGET = int(np.iinfo(np.int64).max)
"""The thinking budget of a request added without one."""

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
LabelArray = npt.NDArray[np.uint8]


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
