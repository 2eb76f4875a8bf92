"""Kind ``pythonic``: a Python list of calls, ``[get_weather(city="Paris"), f(a=1)]``.

Llama 4 (Meta's Llama 4 prompt format; vLLM's ``llama4_pythonic`` and SGLang's
``pythonic`` parsers) writes its calls as one Python list of function calls with keyword
arguments, optionally between ``<|python_start|>`` and ``<|python_end|>``. The list is read
with :mod:`ast` and every argument value with :func:`ast.literal_eval` (literals only:
strings, numbers, ``True``/``False``/``None``, lists, tuples, dicts; never evaluated), then
turned into JSON (tuples become arrays). JSON's ``true`` / ``false`` / ``null`` are read as
``True`` / ``False`` / ``None`` wherever a value holds them (``f(a=true, b=[null])``), as
vLLM's ``llama4_pythonic`` parser reads them (the ``get_parameter_value`` its pythonic
parsers share, ``_JSON_NAME_LITERALS``; SGLang's ``PythonicDetector`` refuses them and
returns the whole list as text); as a dict key such a name is no literal, so that call does
not read. Parsing never prints a warning (:func:`parse_quietly`): a string such as
``"C:\\d"`` holds an invalid escape Python warns about, and a model's call is no place
for a :class:`SyntaxWarning` on a server's stderr.

Text that is not one list of calls (an ordinary answer such as ``[1, 2] are numbers``, a
list holding anything but calls) is not this kind: the region goes back to the content
verbatim. A call in the list that does not read (a
positional argument, ``**kwargs``, a name that is not a plain or dotted identifier, a
value that is not a literal or that JSON cannot hold: ``b'z'``, ``1e999``) is dropped and
the other calls are kept, as vLLM and SGLang keep the well-formed calls beside a
malformed one (their parsers' unit-test cases); a list none of whose calls
reads goes back to the content. A list the end of the output cut does not
parse either, so it comes back as content too (a bare answer cannot be told from a cut
call).

``<|python_end|>`` closes the list (the family's format declares it the region's close
marker: text after it is content); the kind still strips one the body ends with.
"""

from __future__ import annotations

import ast
import warnings
from typing import Any, Literal

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, checked_call

PYTHON_END = "<|python_end|>"

BAD_VALUE = object()
"""What :func:`as_json` gives for a literal with no JSON value; the streamed readers
(partial_pyliterals, partial_pythonic) test for it too."""


JSON_NAMES: dict[str, bool | None] = {"true": True, "false": False, "null": None}
"""JSON's three literal names, which pythonic dialects (LFM2, Olmo 3) write as values."""


def with_json_literals(node: ast.expr, *, sets_as_lists: bool = False) -> ast.expr:
    """``node`` with every bare ``true`` / ``false`` / ``null`` in it made a constant, and
    with ``sets_as_lists`` every set literal made a list (LFM2 writes ``{1, 2}`` for an
    array), for the dialects whose values are JSON-ish. Iterative (:func:`ast.walk`
    keeps no recursion), so a deeply nested value cannot exhaust the stack here."""

    def swap(child: Any) -> Any:
        if isinstance(child, ast.Name) and child.id in JSON_NAMES:
            return ast.Constant(JSON_NAMES[child.id])
        if sets_as_lists and isinstance(child, ast.Set):
            return ast.List(elts=child.elts, ctx=ast.Load())
        return child

    top: ast.expr = swap(node)
    for parent in ast.walk(top):
        for field, value in ast.iter_fields(parent):
            if isinstance(value, list):
                value[:] = [swap(v) for v in value]
            elif isinstance(value, ast.AST):
                setattr(parent, field, swap(value))
    return top


def parse_quietly(text: str, mode: Literal["eval", "exec"]) -> ast.AST:
    """:func:`ast.parse` with its warnings silenced: an invalid escape (``"\\d"``) or a
    number glued to a name (``1if``) is a :class:`SyntaxWarning` (a
    :class:`DeprecationWarning` before Python 3.12) that parsing a model's text would
    otherwise print, or raise under ``-W error``. The value read is the same: Python keeps
    such an escape as written. (``warnings.catch_warnings`` swaps the process's filters for
    the parse, as vLLM's ``safe_literal_eval`` does.)"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text, mode=mode)


def as_json(value: Any) -> Any:
    """A literal as a JSON value, or ``BAD_VALUE`` (bytes, sets, complex numbers, …); the
    streamed reader (partial_pyliterals) types a value with it, as the whole read does."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        out = [as_json(v) for v in value]
        return BAD_VALUE if any(v is BAD_VALUE for v in out) else out
    if isinstance(value, dict):
        obj: dict[str, Any] = {}
        for k, v in value.items():
            got = as_json(v)
            if not isinstance(k, str) or got is BAD_VALUE:
                return BAD_VALUE
            obj[k] = got
        return obj
    return BAD_VALUE


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _name(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def read_call(node: ast.expr) -> ToolCall | None:
    if not isinstance(node, ast.Call) or node.args:
        return None
    name = _name(node.func)
    if name is None:
        return None
    args: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:  # **kwargs
            return None
        try:
            value = as_json(ast.literal_eval(kw.value))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        if value is BAD_VALUE:
            return None
        args[kw.arg] = value
    return checked_call(name, args)


@body_kind("pythonic", markers=(PYTHON_END,))
def parse_pythonic(body: str, tools: Tools) -> list[ToolCall] | None:
    text = body.strip()
    if text.endswith(PYTHON_END):
        text = text[: -len(PYTHON_END)].strip()
    if not text.startswith("["):
        return None
    try:
        tree = parse_quietly(text, "eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    top = tree.body if isinstance(tree, ast.Expression) else None
    elts = top.elts if isinstance(top, ast.List) else []
    nodes = [node for node in elts if isinstance(node, ast.Call)]
    if not nodes or len(nodes) != len(elts):
        return None
    calls: list[ToolCall] = []
    for node in nodes:
        for kw in node.keywords:
            kw.value = with_json_literals(kw.value)
        call = read_call(node)
        if call is not None:
            calls.append(call)
    return calls or None
