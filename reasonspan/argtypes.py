"""Argument types with ranges for the command line: a bad number is refused by argparse
(exit 2, one line naming the flag) before any work starts, instead of hanging a server
(``--tokens-per-step 0``) or running nothing (``--requests -3``)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def _bounds(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"from {lo} to {hi}"
    if lo is not None:
        return f">= {lo}"
    return f"<= {hi}"


def int_in(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer in ``[lo, hi]`` (either bound may be open)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer {_bounds(lo, hi)}, got {text!r}"
            ) from None
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"must be {_bounds(lo, hi)}, got {value}")
        return value

    parse.__name__ = f"integer {_bounds(lo, hi)}"
    return parse


def float_in(lo: float | None = None, hi: float | None = None) -> Callable[[str], float]:
    """An argparse ``type``: a finite number in ``[lo, hi]`` (nan and inf are refused)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a number {_bounds(lo, hi)}, got {text!r}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"must be {_bounds(lo, hi)}, got {text}")
        return value

    parse.__name__ = f"number {_bounds(lo, hi)}"
    return parse


POSITIVE = int_in(1)
"""A count that must be at least 1 (requests, repeats, tokens per step)."""

PORT = int_in(1, 65535)
"""A TCP port to listen on."""

NON_NEGATIVE_SECONDS = float_in(0.0)
"""A pause or timeout in seconds (0 allowed)."""
