"""Kind ``lfm2``: LFM2's Python list of calls, read as vLLM's ``lfm2`` parser reads it.

LFM2 / LFM2.5 write a turn's calls as one Python list, ``[get_weather(city='Bern'), f()]``
(the LFM2.5 chat template renders strings in single quotes without escaping them, other
scalars as Python writes them and a mapping with ``tojson``). The list is read as the
``pythonic`` kind reads one (:mod:`ast`, never evaluated; keyword arguments, literal values,
JSON-safe: that kind's ``_call``), with what vLLM's ``lfm2`` parser (and its unit tests)
also accepts of this model:

- JSON's ``true`` / ``false`` / ``null`` as values (the template writes mappings as JSON),
  and a set literal, read as a list in the order written;
- a list that is not Python as written, read after rewrites that leave valid text alone,
  tried in turn until one parses: control characters inside a string (a raw newline, a
  NUL byte) escaped, integers written with leading zeros (``month=07``) read as integers,
  a keyword argument named after a Python keyword (``from=``) kept under its name; then,
  as a last resort, a quote inside a keyword argument's string that does not end it
  (``command='sed -n '1,9p' f.py'``: a quote ends such a string only before the next
  ``name=`` or the end of the call) escaped.

A call in the list that still does not read is dropped and its siblings are kept; a body
that is not one list of calls (``[]``, ``[1, 2]``, prose) is not this kind.
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Iterator

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools
from reasonspan.runtime.toolcalls.pythonic_calls import (
    parse_quietly,
    read_call,
    with_json_literals,
)

_RESERVED = "__rs_kw_"
_KEYWORD_ARG = re.compile(
    r"([(,]\s*)(" + "|".join(sorted(keyword.kwlist, key=len, reverse=True)) + r")(\s*=(?!=))"
)
_LEADING_ZEROS = re.compile(r"(?<![\w.])0+(\d+)(?![\w.])")
_ENDS_ARGUMENT = re.compile(r"\s*(?:,\s*[A-Za-z_]\w*\s*=(?!=)|\)\s*(?:,|\]|$))")
"""What follows the quote that ends a keyword argument's string: the next argument, or
the end of the call (then the next call or the end of the list)."""
_VALUE_START = re.compile(r"=\s*$")
_QUOTE = re.compile(r"['\"]")
_IN_STRING = {q: re.compile(r"[\\\x00-\x1f" + q + "]") for q in "'\""}
"""What a string scan stops at: a backslash, a control character, its own quote."""
_RAW_PREFIX = re.compile(r"(?<!\w)(?:[rR][bB]?|[bB][rR])$")
_ESCAPES = frozenset("\\'\"abfnrtv01234567xNuU\n")
"""Characters that make a Python string escape with the backslash before them."""


def _outside(text: str) -> str:
    """Rewrites of code outside strings: leading zeros, keyword-named arguments."""
    text = _LEADING_ZEROS.sub(r"\1", text)
    return _KEYWORD_ARG.sub(lambda m: m[1] + _RESERVED + m[2] + m[3], text)


def _escaped(ch: str) -> str:
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch, f"\\x{ord(ch):02x}")


def _repaired(text: str, requote: bool) -> str:
    """``text`` rewritten outside and inside its strings (module doc)."""
    out: list[str] = []
    i = 0
    while True:
        m = _QUOTE.search(text, i)
        before = _outside(text[i : len(text) if m is None else m.start()])
        out.append(before)
        if m is None:
            return "".join(out)
        value = requote and bool(_VALUE_START.search(before))
        raw = bool(_RAW_PREFIX.search(before))
        i = _string(text, m.start(), m[0], value, raw, out)


def _string(text: str, i: int, quote: str, value: bool, raw: bool, out: list[str]) -> int:
    """Copy the string opening at ``text[i]`` to ``out`` (control characters escaped; in
    a keyword argument's ``value``, a quote that does not end it escaped; outside a
    ``raw`` string, a backslash that escapes nothing doubled); the index after it."""
    special = _IN_STRING[quote]
    out.append(quote)
    i += 1
    while (m := special.search(text, i)) is not None:
        j, ch = m.start(), m[0]
        out.append(text[i:j])
        i = j + 1
        if ch == "\\":
            if j + 1 == len(text):
                out.append(ch)
            elif raw or text[j + 1] in _ESCAPES:
                out.append(text[j : j + 2])
                i = j + 2
            else:  # a backslash Python keeps as written (\,): the same text, said validly
                out.append("\\\\")
        elif ch != quote:
            out.append(_escaped(ch))
        elif not value or i == len(text) or _ENDS_ARGUMENT.match(text, i):
            out.append(ch)
            return i
        else:
            out.append("\\" + ch)
    out.append(text[i:])
    return len(text)


def _candidates(text: str) -> Iterator[str]:
    """The text itself when it has no backslash (no escape to warn about: most calls);
    the rewritten text, which changes no value of text that is already valid Python (it
    makes invalid escapes explicit, so parsing warns about none); then the text with its
    inner quotes escaped too."""
    if "\\" not in text:
        yield text
    yield _repaired(text, requote=False)
    yield _repaired(text, requote=True)


def parse_repaired(text: str) -> ast.expr | None:
    """The expression ``text`` parses as, itself or repaired (:func:`_candidates`), or None;
    the streamed reader (partial_pyliterals) reads an LFM2 value with it."""
    for candidate in _candidates(text):
        try:
            tree = parse_quietly(candidate, "eval")
        except (SyntaxError, ValueError):
            continue
        return tree.body if isinstance(tree, ast.Expression) else None
    return None


def _call(node: ast.Call) -> ToolCall | None:
    for kw in node.keywords:
        if kw.arg is not None and kw.arg.startswith(_RESERVED):
            kw.arg = kw.arg[len(_RESERVED) :]
        kw.value = with_json_literals(kw.value, sets_as_lists=True)
    return read_call(node)


@body_kind("lfm2")
def parse_lfm2(body: str, tools: Tools) -> list[ToolCall] | None:
    text = body.strip()
    if not text.startswith("["):
        return None
    tree = parse_repaired(text)
    if not isinstance(tree, ast.List) or not tree.elts:
        return None
    if not all(isinstance(node, ast.Call) for node in tree.elts):
        return None
    calls = [_call(node) for node in tree.elts if isinstance(node, ast.Call)]
    return [call for call in calls if call is not None] or None
