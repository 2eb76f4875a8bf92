"""The errors of the batch runtime that a caller can act on: which request, and why.

Owns the exception types only. It must not know how a batch stores or steps its requests;
it imports no other batch module. Bad input raises one of these before any request's state
changes; a per-request parser that raises fails its request alone
(:class:`RequestFailedError`, reported in ``res.errors``; ``finish()`` re-raises it).
"""

from __future__ import annotations

from reasonspan.runtime.core.errors import InvalidTokenError, ReasonspanError


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
