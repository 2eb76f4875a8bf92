"""Python string literals and values as the Python-call kinds read them (shared by
:mod:`.partial_pythonic`'s reader): where an escape ends and what it decodes to, which
quote opens a string, and one argument's value text read with the kind's whole-read rules.
"""

from __future__ import annotations

import ast
import functools
import re
import warnings
from typing import Any

from reasonspan.runtime.toolcalls import lfm2_calls
from reasonspan.runtime.toolcalls.pythonic_calls import (
    BAD_VALUE,
    as_json,
    parse_quietly,
    with_json_literals,
)

_HEX = frozenset("0123456789abcdefABCDEF")
_OCT = frozenset("01234567")
_ESCAPE_LENGTH = {"x": 2, "u": 4, "U": 8}
IN_STRING = {q: re.compile(r"[\\\n" + q + "]") for q in "'\""}
"""What a string scan stops at: a backslash, a newline, its own quote."""
LOOK = 256
"""Characters a name, a keyword or an escape may take before a reader gives up."""


@functools.lru_cache(maxsize=1024)
def unescaped(seq: str) -> str | None:
    """A string escape (``\\n``, ``\\x41``, ``\\N{BULLET}``, ``\\q``) as Python reads it in
    a plain string; None: Python rejects it, or it makes a lone surrogate (which no UTF-8
    JSON text holds)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = ast.literal_eval('"' + seq + '"')
    except (SyntaxError, ValueError):
        return None
    if not isinstance(value, str) or any("\ud800" <= c <= "\udfff" for c in value):
        return None
    return value


def escape_end(text: str, j: int) -> int | None:
    """Where the escape at ``text[j]`` (a backslash) ends; None: not known yet; -1: Python
    rejects it."""
    if j + 1 >= len(text):
        return None
    c = text[j + 1]
    if c in _ESCAPE_LENGTH:
        digits = text[j + 2 : j + 2 + _ESCAPE_LENGTH[c]]
        if not all(d in _HEX for d in digits):
            return -1
        return j + 2 + len(digits) if len(digits) == _ESCAPE_LENGTH[c] else None
    if c == "N":
        if j + 2 < len(text) and text[j + 2] != "{":
            return -1
        close = text.find("}", j + 2, j + LOOK)
        if close < 0:
            return None if len(text) < j + LOOK else -1
        return close + 1
    if c in _OCT:
        k = j + 1
        while k < len(text) and k < j + 4 and text[k] in _OCT:
            k += 1
        return None if k < j + 4 and k == len(text) else k
    return j + 2


def quote_at(text: str, j: int) -> str | None:
    """The quote opening at ``text[j]`` (``'``, ``'''``, …); "" : not known yet."""
    q = text[j]
    if text.startswith(q * 3, j):
        return q * 3
    rest = text[j : j + 3]
    return "" if rest == q * len(rest) else q


def read_value(text: str, dialect: str) -> Any:
    """One argument's value text as the kind's whole read reads it (``BAD_VALUE``: it does
    not). In parentheses, as inside the call: the lines of a value join."""
    source = "(" + text + "\n)"
    try:
        if dialect == "lfm2":
            node = lfm2_calls.parse_repaired(source)
            if node is None:
                return BAD_VALUE
        else:
            tree = parse_quietly(source, "eval")
            assert isinstance(tree, ast.Expression)
            node = tree.body
        node = with_json_literals(node, sets_as_lists=dialect == "lfm2")
        return as_json(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return BAD_VALUE
