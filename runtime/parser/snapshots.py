"""How a parser's cursor is copied for a snapshot, cheaply.

A snapshot is taken for every per-request parser of every batch step, so it must cost a few
hundred ns, not microseconds: each cursor class's slots are read by one ``attrgetter``,
and only the slots holding lists are copied.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from reasonspan.runtime.core.machine import Cursor

_Layout = tuple[tuple[str, ...], Callable[[Cursor], tuple[Any, ...]], tuple[int, ...]]
_LAYOUTS: dict[type[Cursor], _Layout] = {}


def cursor_layout(kind: type[Cursor]) -> _Layout:
    """Per cursor class, once: its slot names, one getter for all of them, and which of
    them hold lists (copied by a snapshot). A snapshot is taken for every per-request
    parser of every batch step, so it must cost a few hundred ns, not microseconds."""
    layout = _LAYOUTS.get(kind)
    if layout is not None:
        return layout
    names: list[str] = []
    for klass in kind.__mro__:
        slots = getattr(klass, "__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    fields = tuple(n for n in dict.fromkeys(names) if not n.startswith("__"))
    many = attrgetter(*fields)
    getter: Callable[[Cursor], tuple[Any, ...]] = (
        (lambda c: (many(c),)) if len(fields) == 1 else many
    )
    probe = kind()
    lists = tuple(i for i, f in enumerate(fields) if isinstance(getattr(probe, f), list))
    layout = _LAYOUTS[kind] = (fields, getter, lists)
    return layout
