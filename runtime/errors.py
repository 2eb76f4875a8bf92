"""Errors a user can act on: each names the thing that was wrong and what would be right."""

from __future__ import annotations

from collections.abc import Iterable

from ..tokenizer.errors import ReasonspanError, TokenizerLoadError

__all__ = [
    "InvalidOptionError",
    "InvalidTokenError",
    "MissingMarkerError",
    "ReasonspanError",
    "TokenizerLoadError",
    "UnknownParserError",
]


class UnknownParserError(ReasonspanError, KeyError):
    """A parser name that is not registered; lists the names that are."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name = name
        self.known = sorted(known)
        super().__init__(
            f"unknown reasoning parser {name!r}; known parsers: {', '.join(self.known)}"
        )

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class MissingMarkerError(ReasonspanError, ValueError):
    """A marker that this family needs as a single token is not one in this tokenizer."""

    def __init__(self, parser: str, marker: str, source: str, detail: str = "") -> None:
        self.parser = parser
        self.marker = marker
        self.source = source
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"parser {parser!r} needs marker {marker!r} as a single token, but the tokenizer "
            f"loaded from {source!r} does not have it{extra}"
        )


class InvalidTokenError(ReasonspanError, ValueError):
    """A token id that is not an int in [0, vocab_size)."""

    def __init__(self, value: object, position: int, vocab_size: int, where: str) -> None:
        self.value = value
        self.position = position
        self.vocab_size = vocab_size
        if isinstance(value, bool) or not isinstance(value, int):
            what = f"is of type {type(value).__name__}, not int"
        else:
            what = f"is outside the vocabulary [0, {vocab_size})"
        super().__init__(f"{where}[{position}] = {value!r} {what}")


class InvalidOptionError(ReasonspanError, ValueError):
    """A chat_template_kwargs entry or request option with a value of the wrong kind."""

    def __init__(self, key: str, value: object, expected: str) -> None:
        self.key = key
        self.value = value
        super().__init__(f"option {key!r} = {value!r}: expected {expected}")
