"""Typing untyped argument values from the offered tool's JSON Schema.

Formats that write each argument as bare text (XML ``<parameter=…>``, GLM
``<arg_value>``, DSML parameters with ``string="false"``) leave the type to the reader.
The rules, in order, for a value ``text`` and the property's schema:

- a schema whose ``type`` is (or, for a list / ``anyOf`` / ``oneOf``, includes)
  ``string`` and nothing the text reads as → the text itself;
- ``integer`` / ``number``: the text as a JSON number (``1e-5``, ``-3``); an integer
  schema takes ``3.0`` as ``3``;
- ``boolean``: ``true`` / ``false`` (any case); ``null``: ``null`` / ``None``;
- ``object`` / ``array``: the text as JSON (Python literals as a fallback: ``{'a': 1}``,
  ``True``);
- no schema (an argument the tool does not declare, or no tools offered): JSON if the text
  is a JSON object, array, number, boolean or null, else the text;
- anything that does not read as its declared type stays the text, so no value is lost.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

_MISSING = object()


def _types(schema: Mapping[str, Any]) -> list[str]:
    t = schema.get("type")
    if isinstance(t, str):
        out = [t]
    elif isinstance(t, list):
        out = [x for x in t if isinstance(x, str)]
    else:
        out = []
    for key in ("anyOf", "oneOf"):
        alts = schema.get(key)
        if isinstance(alts, list):
            for alt in alts:
                if isinstance(alt, Mapping):
                    out += _types(alt)
    if not out and "enum" in schema and isinstance(schema["enum"], list):
        out = sorted({type(v).__name__ for v in schema["enum"]})
        out = [
            {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}.get(x, x)
            for x in out
        ]
    if not out and "properties" in schema:
        out = ["object"]
    return out


def schema_types(schema: Mapping[str, Any] | None) -> list[str]:
    """The JSON types a property ``schema`` allows, in its order (``type`` as a string or
    list, then ``anyOf`` / ``oneOf`` alternatives; an ``enum``'s value types; ``object``
    for a schema with ``properties``); [] when it says nothing. Readers of nested values
    (MiniMax-M3) use it to tell a list from an object."""
    return _types(schema) if schema else []


def _as(kind: str, text: str) -> Any:
    s = text.strip()
    if kind in ("integer", "number"):
        try:
            value = json.loads(s)
        except ValueError:
            return _MISSING
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return _MISSING
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            return int(value)
        return value
    if kind == "boolean":
        low = s.lower()
        return True if low == "true" else False if low == "false" else _MISSING
    if kind == "null":
        return None if s in ("null", "None") else _MISSING
    if kind in ("object", "array"):
        for load in (json.loads, ast.literal_eval):
            try:
                value = load(s)
            except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                continue
            if isinstance(value, dict if kind == "object" else list):
                return value
        return _MISSING
    return _MISSING


def typed_value(text: str, schema: Mapping[str, Any] | None) -> Any:
    """The argument value ``text`` typed by its property ``schema`` (module doc)."""
    kinds = _types(schema) if schema else []
    if not kinds:
        s = text.strip()
        if s[:1] in ("{", "[") or s in ("true", "false", "null") or _is_number(s):
            try:
                return json.loads(s)
            except ValueError:
                return text
        return text
    for kind in kinds:
        if kind == "string":
            continue
        got = _as(kind, text)
        if got is not _MISSING:
            return got
    return text


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return s[:1].isdigit() or (s[:1] == "-" and s[1:2].isdigit())
