"""Kind ``olmo3``: Olmo 3's calls, one Python call per line, ``get_weather(city="Paris")``.

Olmo 3 (Instruct and Think) writes its calls between ``<function_calls>`` and
``</function_calls>`` (special tokens of its Instruct tokenizer, allenai's
olmo-3-tokenizer-instruct-dev README; its chat template writes an assistant's
``function_calls`` there). vLLM's ``olmo3`` tool parser reads the body as Python calls with
keyword arguments, one per line (not a list: ``[f(a=1)]`` is not a call there), whose values
are Python literals or JSON's ``true`` / ``false`` / ``null``. So does this kind: the body
is parsed with :mod:`ast` (never evaluated), each statement must be a call (or calls
separated by commas on one line, which vLLM's reader also takes), JSON's three names are
read as ``True`` / ``False`` / ``None`` wherever they are values, and each call is read as
the ``pythonic`` kind reads one (its ``_call``: keyword arguments
only, literal values, JSON-safe). A call that does not read (``b'z'``, ``1e999``, a
positional argument) is dropped and its siblings are kept, as vLLM's parser does; a body
that is not calls at all, or none of whose calls reads, goes back to the content.
"""

from __future__ import annotations

import ast

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools
from reasonspan.runtime.toolcalls.pythonic_calls import (
    parse_quietly,
    read_call,
    with_json_literals,
)


def _calls_of(statement: ast.stmt) -> list[ast.Call] | None:
    if not isinstance(statement, ast.Expr):
        return None
    value = statement.value
    items = value.elts if isinstance(value, ast.Tuple) else [value]
    if not items or not all(isinstance(item, ast.Call) for item in items):
        return None
    return [item for item in items if isinstance(item, ast.Call)]


@body_kind("olmo3")
def parse_olmo3(body: str, tools: Tools) -> list[ToolCall] | None:
    try:
        tree = parse_quietly(body.strip(), "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(tree, ast.Module):
        return None
    nodes: list[ast.Call] = []
    for statement in tree.body:
        got = _calls_of(statement)
        if got is None:
            return None
        nodes += got
    calls = []
    for node in nodes:
        for kw in node.keywords:
            kw.value = with_json_literals(kw.value)
        call = read_call(node)
        if call is not None:
            calls.append(call)
    return calls or None
