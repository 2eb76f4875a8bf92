"""Checks of what a caller passes to a parser: token id containers, the reasoning state
argument and the reasoning-as-content switches, each failing with an error that names the
argument."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reasonspan.runtime.core.errors import InvalidOptionError
from reasonspan.runtime.core.spec import ReasoningSpec


def check_container(ids: object, where: str) -> None:
    if type(ids) is list:  # the usual container, and always a Sequence: skip the ABC check
        return
    if isinstance(ids, np.ndarray):
        if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
            raise TypeError(
                f"{where} must be a 1-D integer array, "
                f"got dtype={ids.dtype} with {ids.ndim} dimensions"
            )
        return
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise TypeError(
            f"{where} must be a sequence of int token ids or a numpy array, "
            f"not {type(ids).__name__}"
        )


def reasoning_arg(value: object, tracked: bool, where: str) -> bool:
    """``is_currently_reasoning``: a bool, or None for the state this parser tracked (what
    its last call left; ``default_reasoning`` before the first)."""
    if value is None:
        return tracked
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InvalidOptionError(where, value, "a bool, or None for the tracked state")


def swap_requested(spec: ReasoningSpec, kwargs: Mapping[str, Any]) -> bool:
    requested = False
    for key, value in spec.reasoning_as_content_if:
        if key in kwargs:
            got = kwargs[key]
            if not isinstance(got, bool):
                raise InvalidOptionError(key, got, "a bool")
            requested = requested or got is value
    return requested
