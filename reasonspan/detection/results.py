"""What detection returns: ranked candidates with their reasons, and the evidence read."""

from __future__ import annotations

import msgspec


class Candidate(msgspec.Struct, frozen=True):
    """One family's score for this folder, with the reasons (signed points) behind it."""

    name: str
    score: float
    reasons: tuple[str, ...]
    thinking_default: bool
    thinking_off: dict[str, bool | str] = {}
    """chat_template_kwargs that turn thinking off for this parser (keys the template
    reads first); empty when thinking is off by default or cannot be switched."""
    thinking_on: dict[str, bool | str] = {}
    """chat_template_kwargs that turn thinking on, for families where it is off by default."""


class TemplateEvidence(msgspec.Struct, frozen=True):
    """What the chat template says, read as text."""

    source: str
    """The file the template came from (chat_template.jinja or tokenizer_config.json)."""
    prefills_start: tuple[str, ...]
    """Start markers the generation prompt opens (the turn begins inside reasoning)."""
    prefills_end: tuple[str, ...]
    """End markers the generation prompt writes (the thinking-off form, e.g. an empty
    ``<think>\\n\\n</think>`` block)."""
    kwargs: tuple[str, ...]
    """chat_template_kwargs the template reads (tested with ``is defined``, or a name some
    registered family uses as a thinking switch)."""
    kwarg_defaults: dict[str, bool]
    """The value a boolean kwarg takes when the request does not set it, where the template
    makes it plain (``{% set thinking = false %}``, ``x is defined and x is false``)."""
    thinking_default: bool | None
    """Whether the template thinks by default, when it can be told."""
    markers: tuple[str, ...]
    """Registered markers the template spells out."""


class Evidence(msgspec.Struct, frozen=True):
    """Everything detection looked at."""

    source: str
    single_tokens: tuple[str, ...]
    """Registered markers that are single tokens in this vocabulary."""
    composed: tuple[str, ...]
    """Registered markers that are several tokens, at least one of them a special token of
    this vocabulary (e.g. ``<|open|>think<|sep|>``): the vocabulary was built for them."""
    template: TemplateEvidence | None
    model_type: str | None
    architectures: tuple[str, ...]
    declared: str | None = None
    """The output format the folder declares (transformers' ``response_template`` or
    ``response_schema``) as compiled, when it compiles: it then chooses the parser."""
    declaration_error: str | None = None
    """Why a declared format could not be used (detection then fell back to scoring)."""


class Detection(msgspec.Struct, frozen=True):
    """The answer: a parser name (or None) and what it rests on.

    ``parser`` is None when no family's markers are in this folder (not a reasoning model,
    as far as reasonspan can tell) or when the best candidates are too close to call; then
    ``ambiguous`` is True and ``tied`` names them.
    """

    parser: str | None
    candidates: tuple[Candidate, ...]
    evidence: Evidence
    ambiguous: bool
    tied: tuple[str, ...] = ()

    @property
    def best(self) -> Candidate | None:
        """The chosen candidate (None when nothing fits or the evidence ties)."""
        if self.parser is None:
            return None
        return next(c for c in self.candidates if c.name == self.parser)
