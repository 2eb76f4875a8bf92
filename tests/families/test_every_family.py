"""Every registered family has its own test module, ``tests/families/test_<family>.py``.

Adding a family means one module in ``architectures/`` and one test file here, and a reader
looking for a family's cases finds them in one place: its matrix rows, fidelity cases and
tool-call cases, declared as data where a shared check runs them (``tests/support/``:
``family_cases`` for rows, seeds and splits; ``xml_calls``, ``section_calls`` and
``end_calls`` for the tool-call formats). Tables that compare families (aliases, the
hostile-input and gap-separator tables, the SSE path's call texts) stay in their shared
files. :data:`NOT_YET_MOVED` names, for a family without its module, the files that hold
its cases today; it can only shrink, and a new family must come with its module.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonspan.runtime.parser import registry

FAMILIES_DIR = Path(__file__).resolve().parent
TESTS = FAMILIES_DIR.parent

# Family -> the files (under tests/) that hold its cases until they move to its module.
NOT_YET_MOVED: dict[str, tuple[str, ...]] = {
    "declared": ("runtime/test_declared.py",),
}


def _registered() -> list[str]:
    """Every family's name (aliases folded): the name its parser class registered."""
    return [cls.spec.name for cls in registry.families()]


def _has_module(family: str) -> bool:
    return (FAMILIES_DIR / f"test_{family}.py").is_file()


def test_every_registered_family_has_its_module_or_a_listed_reason() -> None:
    missing = [f for f in _registered() if not _has_module(f) and f not in NOT_YET_MOVED]
    assert not missing, (
        f"add tests/families/test_<family>.py (its matrix rows, fidelity and tool-call cases)"
        f" for: {missing}"
    )


def test_the_list_only_shrinks() -> None:
    """A family that has its module, or is no longer registered, leaves the list."""
    registered = set(_registered())
    moved = sorted(f for f in NOT_YET_MOVED if _has_module(f))
    gone = sorted(f for f in NOT_YET_MOVED if f not in registered)
    assert not moved, (
        f"these families have their module now: remove them from NOT_YET_MOVED: {moved}"
    )
    assert not gone, f"not registered families: remove them from NOT_YET_MOVED: {gone}"


@pytest.mark.parametrize("family", sorted(NOT_YET_MOVED))
def test_a_listed_family_names_files_that_hold_its_cases(family: str) -> None:
    """The reason stays true as files move: each file it names exists and names the family."""
    for name in NOT_YET_MOVED[family]:
        path = TESTS / name
        assert path.is_file(), f"{family}: {name} does not exist"
        assert family in path.read_text("utf-8"), f"{family}: {name} has none of its cases"
