"""The errors a consumer or an engine may meet on the async runtime, and the request id
they are named by."""

from __future__ import annotations

from reasonspan.runtime.batch.errors import BatchTokenError
from reasonspan.runtime.core.errors import ReasonspanError

RequestKey = str | int
"""A server's request id: a string (``"chatcmpl-…"``) or an int64."""


class RequestCancelledError(ReasonspanError, RuntimeError):
    """Raised to a consumer whose request was cancelled or aborted."""


class RuntimeClosedError(ReasonspanError, RuntimeError):
    """The runtime was closed, or its engine failed: open streams end with this error
    (the engine's exception is its ``__cause__``), and no request can be added."""


class DuplicateRequestIdError(ReasonspanError, ValueError):
    """``add()`` of an id whose request is still open in this runtime."""

    def __init__(self, key: RequestKey) -> None:
        self.request_id = key
        super().__init__(
            f"request {key!r} is still open in this runtime; finish() or abort() it before "
            "adding the id again"
        )


class RequestNotOpenError(ReasonspanError, KeyError):
    """``finish()`` of an id that is not open in this runtime: never added, or already
    finished by the engine. (An id the runtime ended itself -- aborted, cancelled, failed,
    stopped on a stop string -- is not an error: the engine may not have heard yet.)"""

    def __init__(self, key: RequestKey, where: str) -> None:
        self.request_id = key
        super().__init__(
            f"{where}: request {key!r} is not open in this runtime (never added, or already "
            "finished)"
        )

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class RequestTokenError(ReasonspanError, ValueError):
    """The engine sent a token id outside the vocabulary of one request: that request
    fails alone with this error (the step goes on for the others). Named by the caller's
    request id; the batch's own error, with the engine id and step position, is
    ``__cause__``."""

    def __init__(self, key: RequestKey, cause: BatchTokenError) -> None:
        self.request_id = key
        self.value = cause.value
        self.vocab_size = cause.vocab_size
        self.parser = cause.parser
        value = cause.value
        what = (
            f"is outside the vocabulary [0, {cause.vocab_size})"
            if isinstance(value, int) and not isinstance(value, bool)
            else f"is of type {type(value).__name__}, not int"
        )
        super().__init__(
            f"request {key!r}: the engine sent token id {value!r}, which {what} "
            f"(parser {cause.parser!r})"
        )
        self.__cause__ = cause
