"""Every registered family has its own test module, ``tests/families/test_<family>.py``.

Adding a family means one module in ``architectures/`` and one test file here, and a reader
looking for a family's cases finds them in one place: its matrix rows, fidelity cases and
tool-call cases, declared as data where a shared check runs them (``tests/support/``:
``family_cases`` for rows, seeds and splits; ``xml_calls``, ``section_calls`` and
``end_calls`` for the tool-call formats). Tables that compare families (aliases,
detection, the hostile-input and gap-separator tables, the SSE path's call texts) stay in
their shared files.
"""

from __future__ import annotations

from pathlib import Path

from reasonspan.runtime.parser import registry

FAMILIES_DIR = Path(__file__).resolve().parent


def _registered() -> list[str]:
    """Every family's name (aliases folded): the name its parser class registered."""
    return [cls.spec.name for cls in registry.families()]


def test_every_registered_family_has_its_module() -> None:
    missing = [f for f in _registered() if not (FAMILIES_DIR / f"test_{f}.py").is_file()]
    assert not missing, (
        f"add tests/families/test_<family>.py (its matrix rows, fidelity and tool-call cases)"
        f" for: {missing}"
    )
