"""Errors a user can act on: each names the thing that was wrong and what would be right."""

from __future__ import annotations

import json
from collections.abc import Iterable

from reasonspan.tokenizer.errors import ReasonspanError, TokenizerLoadError

__all__ = [
    "DeclarationError",
    "InvalidOptionError",
    "InvalidTokenError",
    "MissingMarkerError",
    "ParserNotDetectedError",
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


class DeclarationError(ReasonspanError, ValueError):
    """An output format the checkpoint declares (transformers' ``response_schema`` or
    ``response_template``) that cannot be compiled into markers: names the property, the
    pattern (or value) that was read there, and what is missing."""

    def __init__(self, source: str, prop: str, pattern: object, reason: str) -> None:
        self.source = source
        self.property = prop
        self.pattern = pattern
        self.reason = reason
        shown = pattern if isinstance(pattern, str) else json.dumps(pattern, default=str)
        super().__init__(
            f"cannot honour the format declared in {source}: property {prop!r} "
            f"({shown if len(shown) <= 200 else shown[:197] + '...'}): {reason}"
        )


class ParserNotDetectedError(ReasonspanError, ValueError):
    """``create_parser("auto", ...)`` on a folder where no parser can be chosen: nothing
    declared, and detection found no family or a tie; names the candidates."""

    def __init__(self, source: str, why: str, candidates: Iterable[str]) -> None:
        self.source = source
        self.candidates = tuple(candidates)
        listed = ", ".join(self.candidates) or "none"
        super().__init__(
            f"no reasoning parser could be chosen for {source!r}: {why} (candidates: {listed}); "
            "pass a parser name instead of 'auto' (`reasonspan detect` shows the evidence)"
        )
