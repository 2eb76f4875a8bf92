"""What a family's spec cannot say about which models it serves: its detection hint.

A family declares it beside its spec, as the class attribute ``hint`` of its parser class;
``reasonspan detect`` (``reasonspan/detection/scoring.py``) reads it with :func:`hint_of`.
The runtime itself never reads a hint.
"""

from __future__ import annotations

from typing import NamedTuple


class DetectionHint(NamedTuple):
    """What a family's specs cannot say about which models it serves."""

    model_types: tuple[str, ...] = ()
    """config.json ``model_type`` values of this family's models (registered names and
    aliases count too; ``architectures`` are matched by the same names)."""
    tokens: tuple[str, ...] = ()
    """Single tokens that (among the families here) only this family's models ship."""
    absent: tuple[str, ...] = ()
    """Tokens its models do not have (a later model's additions): their presence counts
    against it."""
    prefills_start: bool | None = None
    """Whether this family's chat templates prefill the start marker, where that is what
    tells two families with the same markers apart."""
    plain_text_markers: bool = False
    """Its models write the markers as ordinary text: a vocabulary with special tokens for
    them belongs to another family."""
    needs_evidence: bool = False
    """It shares its markers with a more common family, so it ranks below that one unless
    config.json names its model type or the vocabulary has one of its ``tokens``."""


NO_HINT = DetectionHint()


def hint_of(cls: type) -> DetectionHint:
    """The hint a parser class declares in its own body (``hint = DetectionHint(...)``), or
    an empty one. Never inherited: a family built on another's class does not take its
    model types."""
    hint = vars(cls).get("hint")
    return hint if isinstance(hint, DetectionHint) else NO_HINT
