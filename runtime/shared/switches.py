"""Thinking switches read as one: a family whose engines turn thinking on when any of
several bool switches is true (vLLM's ling3 and poolside parsers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reasonspan.runtime.core.errors import InvalidOptionError


def either_switch(
    kwargs: Mapping[str, Any], keys: tuple[str, ...], default: bool
) -> tuple[bool, bool]:
    """``(given, on)`` for families whose engines read several bool switches as one: none
    given → ``default``; else on when any given one is true; a later key does not override
    an earlier one."""
    given = False
    on = False
    for key in keys:
        if key in kwargs:
            value = kwargs[key]
            if not isinstance(value, bool):
                raise InvalidOptionError(key, value, "a bool")
            given = True
            on = on or value
    return given, on if given else default
