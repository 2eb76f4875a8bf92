"""Kind ``pythonic``: a Python list of calls, ``[get_weather(city="Paris"), f(a=1)]``.

Llama 4 (Meta's Llama 4 prompt format; vLLM's ``llama4_pythonic`` and SGLang's
``pythonic`` parsers) writes its calls as one Python list of function calls with keyword
arguments, optionally between ``<|python_start|>`` and ``<|python_end|>``. The list is read
with :mod:`ast` and every argument value with :func:`ast.literal_eval` (literals only:
strings, numbers, ``True``/``False``/``None``, lists, tuples, dicts; never evaluated), then
turned into JSON (tuples become arrays). A positional argument, a name that is not a plain
or dotted identifier, a value that is not a literal, or text that is not one list of calls
(an ordinary answer such as ``[1, 2] are numbers``) is not this kind: the region goes back
to the content verbatim. A list the end of the output cut does not parse either, so it
comes back as content too (a bare answer cannot be told from a cut call).
"""

from __future__ import annotations

import ast
from typing import Any

from .format import body_kind
from .types import ToolCall, Tools, dump_arguments

PYTHON_END = "<|python_end|>"

_BAD = object()


def _json(value: Any) -> Any:
    """A literal as a JSON value, or ``_BAD`` (bytes, sets, complex numbers, …)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        out = [_json(v) for v in value]
        return _BAD if any(v is _BAD for v in out) else out
    if isinstance(value, dict):
        obj: dict[str, Any] = {}
        for k, v in value.items():
            got = _json(v)
            if not isinstance(k, str) or got is _BAD:
                return _BAD
            obj[k] = got
        return obj
    return _BAD


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _name(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _call(node: ast.expr) -> ToolCall | None:
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
            value = _json(ast.literal_eval(kw.value))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        if value is _BAD:
            return None
        args[kw.arg] = value
    return ToolCall(name=name, arguments=dump_arguments(args))


@body_kind("pythonic")
def parse_pythonic(body: str, tools: Tools) -> list[ToolCall] | None:
    text = body.strip()
    if text.endswith(PYTHON_END):
        text = text[: -len(PYTHON_END)].strip()
    if not text.startswith("["):
        return None
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(tree.body, ast.List) or not tree.body.elts:
        return None
    calls: list[ToolCall] = []
    for node in tree.body.elts:
        call = _call(node)
        if call is None:
            return None
        calls.append(call)
    return calls
