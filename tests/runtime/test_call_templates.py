"""The loader of the families' call templates (``CALL_TEMPLATES`` at the top of each
``tests/families/test_<family>.py``, read into ``tests/support/hostile.py``'s ``CALLS``), on
modules written to a temporary folder: what it reads, what stops it, and that the ratchet's
message (:func:`~tests.support.fixtures.how_to_declare_calls`) shows a declaration it reads.
Whether each real template reads as its call is ``test_fuzz_paths``'s
``test_each_call_template_reads``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.support.fixtures import declared_calls, family_declarations, how_to_declare_calls

QWEN = '<tool_call>\\n{"name": "f", "arguments": {"a": V}}\\n</tool_call>'


def _modules(folder: Path, **modules: str) -> Path:
    for family, text in modules.items():
        (folder / f"test_{family}.py").write_text(f"{text}\n\ndef test_x() -> None:\n    pass\n")
    return folder


def test_templates_are_read_from_the_modules_top(tmp_path: Path) -> None:
    folder = _modules(
        tmp_path,
        a=f"FIXTURE = 'qwen-3'\n# why\nCALL_TEMPLATES = (\n    '{QWEN}',  # a fact\n    '[f(a=V)]',\n)",
        b='FIXTURE = "qwen-3"\nKWARGS = [{}]',
        c='FIXTURE = "qwen-3"\nCALL_TEMPLATES = ("<x>V"\n    "</x>",)\nX = 1',
    )
    want_a = ('<tool_call>\n{"name": "f", "arguments": {"a": V}}\n</tool_call>', "[f(a=V)]")
    assert declared_calls(folder) == {"a": want_a, "c": ("<x>V</x>",)}
    # The fixtures' loader reads the same modules and is not disturbed by the templates.
    assert family_declarations(folder)[0] == {"a": "qwen-3", "b": "qwen-3", "c": "qwen-3"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('CALL_TEMPLATES = ["<x>V</x>"]', "must be a tuple of str"),
        ("CALL_TEMPLATES = ()", "must be a tuple of str"),
        ('CALL_TEMPLATES = ("<x>a</x>",)', "one V where"),
        ('CALL_TEMPLATES = ("<x>V</x>", "<V>V</V>")', "one V where"),
        ("CALL_TEMPLATES = (TEMPLATE,)", "CALL_TEMPLATES must be a literal"),
        ('def f() -> None: ...\n\nCALL_TEMPLATES = ("<x>V</x>",)', "above the first def"),
    ],
)
def test_a_wrong_declaration_stops_the_loader(tmp_path: Path, text: str, message: str) -> None:
    folder = _modules(tmp_path, a='FIXTURE = "qwen-3"\n' + text)
    with pytest.raises(ValueError, match=re.escape(message)):
        declared_calls(folder)


def test_templates_without_a_fixture_stop_the_fixtures_loader(tmp_path: Path) -> None:
    """A family is fuzzed on its fixture: templates alone would have no tokenizer to run."""
    folder = _modules(tmp_path, a='CALL_TEMPLATES = ("<x>V</x>",)')
    with pytest.raises(ValueError, match="no FIXTURE"):
        family_declarations(folder)


def test_the_ratchet_message_shows_a_declaration_the_loader_reads(tmp_path: Path) -> None:
    message = how_to_declare_calls("my_model")
    assert "tests/families/test_my_model.py" in message
    example = re.search(r"such as (CALL_TEMPLATES = \(.*?,\)) for", message)
    assert example is not None, message
    templates = ast.literal_eval(example.group(1).split(" = ", 1)[1])
    folder = _modules(tmp_path, my_model=f'FIXTURE = "qwen-3"\n{example.group(1)}')
    assert declared_calls(folder) == {"my_model": templates}
    assert templates == ('<tool_call>\n{"name": "f", "arguments": {"a": V}}\n</tool_call>',)
