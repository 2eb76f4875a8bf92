"""Names to parser classes: the built-in families, their aliases, and plugins.

Third-party packages add families through the entry-point group
``reasonspan.architectures``; each entry point names a parser class (or a module that
registers its classes with :func:`register` on import).

The built-in families register themselves when ``reasonspan.architectures`` is imported,
which the ``reasonspan`` package does on import: this layer never reaches up to them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib.metadata import entry_points
from typing import Any, TypeVar

from reasonspan.runtime.core.errors import UnknownParserError
from reasonspan.runtime.parser.contract import ReasoningParser

ENTRY_POINT_GROUP = "reasonspan.architectures"

_P = TypeVar("_P", bound=type[ReasoningParser])
_classes: dict[str, type[ReasoningParser]] = {}
_canonical: dict[str, str] = {}
_loaded = False


def _norm(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def register(cls: _P) -> _P:
    """Class decorator: register a parser under its spec's name and aliases."""
    spec = getattr(cls, "spec", None)
    if spec is None:
        raise TypeError(f"{cls.__name__} has no `spec`; set spec = ReasoningSpec(...)")
    for n in (spec.name, *spec.aliases):
        key = _norm(n)
        other = _classes.get(key)
        if other is not None and other is not cls:
            raise ValueError(f"parser name {n!r} is already registered by {other.__name__}")
        _classes[key] = cls
        _canonical[key] = spec.name
    return cls


def _ensure_loaded() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        obj = ep.load()
        if isinstance(obj, type) and issubclass(obj, ReasoningParser):
            register(obj)


@contextmanager
def rescan_plugins_for_tests() -> Iterator[None]:
    """Test hook: read the entry points again, as on first use; restore the registry on exit.

    Entry points are read once per process, so a test that puts a fake distribution on
    ``sys.path`` needs the registry to look again. Names registered inside the block are
    forgotten on exit, so the rest of the test session sees the usual registry.
    """
    global _loaded
    _ensure_loaded()  # built-ins are registered at import time, which happens only once
    saved = dict(_classes), dict(_canonical)
    _loaded = False
    try:
        yield
    finally:
        _classes.clear()
        _classes.update(saved[0])
        _canonical.clear()
        _canonical.update(saved[1])
        _loaded = True


def list_parsers() -> list[str]:
    """Every registered name and alias, sorted."""
    _ensure_loaded()
    return sorted(_classes)


def families() -> list[type[ReasoningParser]]:
    """One class per family (aliases folded), in name order."""
    _ensure_loaded()
    seen: dict[str, type[ReasoningParser]] = {}
    for cls in _classes.values():
        seen.setdefault(cls.spec.name, cls)
    return [seen[k] for k in sorted(seen)]


def get_parser_class(name: str) -> type[ReasoningParser]:
    """The class registered under ``name`` (or an alias of it)."""
    _ensure_loaded()
    if not isinstance(name, str):
        raise TypeError(f"parser name must be a str, not {type(name).__name__}")
    cls = _classes.get(_norm(name))
    if cls is None:
        raise UnknownParserError(name, _classes)
    return cls


async def build_parser(
    name: str, tokenizer: Any, chat_template_kwargs: Mapping[str, Any] | None = None
) -> ReasoningParser:
    """The parser registered as ``name`` for this tokenizer, nothing more: the public
    ``reasonspan.create_parser`` adds ``"auto"``, model paths and a model folder's template."""
    return await get_parser_class(name).from_tokenizer(tokenizer, chat_template_kwargs)


def build_parser_sync(
    name: str, tokenizer: Any, chat_template_kwargs: Mapping[str, Any] | None = None
) -> ReasoningParser:
    """Blocking form of :func:`build_parser`, for code that is not async."""
    return get_parser_class(name).create(tokenizer, chat_template_kwargs)
