"""Checks of what a caller passes to a parser: the reasoning state argument and the
reasoning-as-content switches, each failing with an error that names the argument. (Token
ids are checked by :mod:`reasonspan.runtime.core.ids`, which the batch's step shares.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from reasonspan.runtime.core.errors import InvalidOptionError
from reasonspan.runtime.core.spec import ReasoningSpec


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
