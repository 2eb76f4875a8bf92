"""The two whitespace sets the tool-call readers skip, checked against what defines them.

``sections.skip_space`` (and ``SPACE``, ``SPACE_RUN``) must be JSON's whitespace, which
Python's ``json`` decides; ``sections.skip_any_space`` must be what a pattern's ``\\s``
skips and what ``str.isspace`` tests (the tag grammars' readers once used either, and
share this one now). The wider set is kept apart on purpose: a form feed or a no-break
space between tag elements is space, between JSON values it is not.
"""

from __future__ import annotations

import json
import re
import sys

import pytest

from reasonspan.runtime.core.tool_types import NO_TOOLS
from reasonspan.runtime.toolcalls import dsml_calls, sections

_EVERY = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]


def _json_space(c: str) -> bool:
    """Does Python's ``json`` read ``c`` as space around a value?"""
    try:
        return json.loads(f"{c}1{c}") == 1
    except ValueError:
        return False


def test_skip_space_is_json_whitespace() -> None:
    json_space = {c for c in _EVERY[:0x3100] if _json_space(c)}
    assert json_space == set(sections.SPACE)
    for c in _EVERY[:0x3100]:
        assert sections.skip_space(f"{c}x", 0) == (1 if c in json_space else 0), repr(c)
        run = sections.SPACE_RUN.match(f"{c}{c}x")
        assert run is not None and run.end() == (2 if c in json_space else 0), repr(c)


def test_skip_any_space_is_the_pattern_space_and_isspace() -> None:
    pattern = re.compile(r"\s")
    for c in _EVERY:
        want = 1 if c.isspace() else 0
        assert sections.skip_any_space(f"{c}x", 0) == want, repr(c)
        assert bool(pattern.match(c)) == bool(want), repr(c)
    assert sections.skip_any_space("ab \f\u00a0\u3000", 2) == 6


@pytest.mark.parametrize("gap", ["\f", "\u00a0", "\u2003\n"])
def test_a_tag_grammar_takes_unicode_space_between_calls(gap: str) -> None:
    one = '<｜DSML｜invoke name="f">\n</｜DSML｜invoke>'
    calls = dsml_calls.parse_dsml(f"{gap}{one}{gap}{one}{gap}", NO_TOOLS)
    assert calls is not None and [c.name for c in calls] == ["f", "f"]
    assert dsml_calls.parse_dsml(f"{one}{gap}x", NO_TOOLS) is None
