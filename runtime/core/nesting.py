"""How deeply a decoded JSON value nests, measured without recursion.

JSON from a client can nest thousands of levels; code that recurses over it (msgspec,
``json.dumps``, jinja2 filters) then raises ``RecursionError`` far from the input. Checking
the depth first, with an explicit stack, turns that into a clear error at the edge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

MAX_NESTING = 100
"""Containers (objects and arrays) one inside the other that a request value may have:
about 50 levels of a JSON Schema (each level is an object and its ``properties``)."""


def nested_deeper_than(value: object, limit: int = MAX_NESTING) -> bool:
    """True when ``value`` has more than ``limit`` containers one inside the other
    (mappings and non-string sequences count; a scalar is depth 0)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: object = item.values()
        elif isinstance(item, Sequence) and not isinstance(item, (str, bytes, bytearray)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)  # type: ignore[attr-defined]
    return False
