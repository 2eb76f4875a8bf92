"""CI-sized runs of the long tests, and the full runs under ``pytest --long``.

The suite has to finish in a few minutes on a 2-core CI machine, yet its family sweeps,
corpus replays and property tests are worth running in full before a release. Two knobs,
both off under ``pytest --long`` (or ``REASONSPAN_LONG=1``):

- :func:`examples` scales a Hypothesis ``max_examples`` down for CI;
- ``@pytest.mark.sampled(every=k, by=...)`` (applied in ``conftest.py``) runs one case in
  ``k`` of a parametrized test, keeping at least one case per stratum (``by``), so a sample
  never hides a family from the test: see :func:`sample`.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

import pytest

LONG_ENV = "REASONSPAN_LONG"

# CI runs this fraction of a property test's examples (at least CI_MIN_EXAMPLES).
CI_EXAMPLES_DIVISOR = 4
CI_MIN_EXAMPLES = 5


def long_run() -> bool:
    """True under ``pytest --long`` or ``REASONSPAN_LONG=1`` (conftest sets the variable
    from the flag before any test module is imported, xdist workers included)."""
    return bool(os.environ.get(LONG_ENV))


def examples(full: int) -> int:
    """``max_examples`` for a Hypothesis test: ``full`` under ``--long``, a quarter in CI."""
    if long_run():
        return full
    return min(full, max(CI_MIN_EXAMPLES, full // CI_EXAMPLES_DIVISOR))


Stratum = str | Callable[[Mapping[str, Any]], Hashable] | None


def _stratum_key(by: Stratum, params: Mapping[str, Any]) -> Hashable:
    if by is None:
        return None
    if isinstance(by, str):
        return params[by]
    return by(params)


def sample(items: Iterable[pytest.Item]) -> list[pytest.Item]:
    """The items of ``sampled`` tests that CI leaves out (deterministic, the same in every
    xdist worker: no ``hash()``, whose value changes per process).

    Per test function, its cases are grouped by ``by`` (a parameter name, or a function of
    the parameters; None: one group), in collection order. Of a group of ``n`` cases the
    ones at positions ``j`` with ``j % every == r`` run, where ``r`` rotates with the
    group's ordinal and the test's name and is below ``min(every, n)``: every group keeps
    at least one case, and sibling groups and tests keep different ones (a family sweep
    paired with kwargs variants or chunk sizes runs a different variant per family).
    """
    groups: dict[tuple[str, str], list[pytest.Item]] = {}
    for item in items:
        if item.get_closest_marker("sampled") is None or not hasattr(item, "callspec"):
            continue
        parent = item.parent.nodeid if item.parent is not None else ""
        groups.setdefault((parent, getattr(item, "originalname", item.name)), []).append(item)
    left_out: list[pytest.Item] = []
    for (parent, name), members in groups.items():
        mark = members[0].get_closest_marker("sampled")
        assert mark is not None
        every = mark.kwargs.get("every", mark.args[0] if mark.args else None)
        if not isinstance(every, int) or every < 1:
            raise pytest.UsageError(f"{parent}::{name}: sampled(every=...) needs an int >= 1")
        by: Stratum = mark.kwargs.get("by")
        strata: dict[Hashable, list[pytest.Item]] = {}
        for item in members:
            params = item.callspec.params  # type: ignore[attr-defined]
            strata.setdefault(_stratum_key(by, params), []).append(item)
        offset = zlib.crc32(f"{parent}::{name}".encode())
        for ordinal, cases in enumerate(strata.values()):
            keep = (offset + ordinal) % min(every, len(cases))
            left_out += [c for j, c in enumerate(cases) if j % every != keep]
    return left_out
