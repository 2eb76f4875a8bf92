"""Every registered family has its own test module, ``tests/families/test_<family>.py``.

Adding a family means one module in ``architectures/`` and one test file here, and a reader
looking for a family's cases finds them in one place: the tokenizer it is tested on
(``FIXTURE``, and ``ADDED_TOKENS`` for a synthetic one, at the top of the module: read by
``tests/support/fixtures.py``), its call templates for the hostile-input and fuzz tests
(``CALL_TEMPLATES``, read into ``tests/support/hostile.py::CALLS``), its matrix rows, fidelity cases and tool-call cases,
declared as data where a shared check runs them (``tests/support/``:
``family_cases`` for rows, seeds and splits; ``xml_calls``, ``section_calls`` and
``end_calls`` for the tool-call formats). Tables that compare families (aliases,
detection, the hostile values and gap-separator tables, the SSE path's call texts) stay in
their shared files.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reasonspan.runtime.parser import registry
from tests.support.fixtures import FAMILY_TOKENIZERS, family_declarations, how_to_declare

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


def test_every_registered_family_declares_its_fixture() -> None:
    missing = [f for f in _registered() if f not in FAMILY_TOKENIZERS]
    assert not missing, "\n".join(how_to_declare(f) for f in missing)


# The loader's checks, on modules written to a temporary folder (no fake family registered).
# Only the declarations are parsed: a comment between them, or inside a literal, is theirs.
QWEN_DECLARED = (
    '# why\nFIXTURE = "qwen-2.5_base_with_a_special_tokens"\n'
    'ADDED_TOKENS = (\n    "<a>",  # a fact\n    # another\n)\nX = 1\n'
)


def _modules(folder: Path, **modules: str) -> Path:
    for family, text in modules.items():
        (folder / f"test_{family}.py").write_text(f"{text}\n\ndef test_x() -> None:\n    pass\n")
    return folder


def test_declarations_are_read_from_the_modules_top(tmp_path: Path) -> None:
    folder = _modules(
        tmp_path,
        a=QWEN_DECLARED + "KWARGS = [{}, {'thinking': False}]",
        b='FIXTURE = "qwen-2.5_base_with_a_special_tokens"  # shares a\'s',
        c='FIXTURE = "qwen-3"',
        helper="X = 1",
    )
    tokenizers, synthetic, kwargs = family_declarations(folder)
    shared = "qwen-2.5_base_with_a_special_tokens"
    assert tokenizers == {"a": shared, "b": shared, "c": "qwen-3"}
    assert synthetic == {shared: ("qwen-2.5", ("<a>",))}
    assert kwargs == {"a": [{}, {"thinking": False}]}


@pytest.mark.parametrize(
    ("modules", "message"),
    [
        # A module naming another's synthetic fixture depends on its declaration.
        ({"b": 'FIXTURE = "qwen-2.5_base_with_a_special_tokens"'}, "neither a tokenizer folder"),
        ({"a": 'FIXTURE = "no-such-tokenizer"'}, "neither a tokenizer folder"),
        ({"a": QWEN_DECLARED, "b": QWEN_DECLARED}, "already declared by families/test_a.py"),
        ({"a": 'ADDED_TOKENS = ("<a>",)'}, "no FIXTURE"),
        ({"a": 'FIXTURE = "nobase_base_with_a"\nADDED_TOKENS = ()'}, "has no 'nobase'"),
        ({"a": 'FIXTURE = "qwen-3"\nADDED_TOKENS = ("<a>",)'}, "<base>_base_with_"),
        ({"a": "FIXTURE = NAME"}, "FIXTURE must be a literal"),
        ({"a": 'def f() -> None: ...\n\nFIXTURE = "qwen-3"'}, "above the first def"),
    ],
)
def test_a_wrong_declaration_stops_the_loader(
    tmp_path: Path, modules: dict[str, str], message: str
) -> None:
    folder = tmp_path / "families"
    folder.mkdir()
    with pytest.raises(ValueError, match=re.escape(message)):
        family_declarations(_modules(folder, **modules))
