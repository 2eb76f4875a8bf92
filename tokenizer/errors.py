"""The base error of reasonspan and the tokenizer layer's own error.

They live in the lowest layer so that every layer may raise and catch them without
importing a layer above its own; ``reasonspan.runtime.core.errors`` re-exports both.
"""

from __future__ import annotations


class ReasonspanError(Exception):
    """Base class of every error raised by reasonspan."""


class TokenizerLoadError(ReasonspanError, OSError):
    """A tokenizer file or model folder that could not be read or understood."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"cannot load tokenizer from {path!r}: {reason}")
