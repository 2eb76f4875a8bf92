"""Which chat_template_kwargs keys a family reads, and the check for misspelled ones.

Servers hand a parser the request's whole ``chat_template_kwargs``, most of which are for
the chat template (``tools``, ``add_generation_prompt``, custom variables), so an unknown
key cannot be an error. A key that is a near miss of one the family reads
(``enable_thinkng`` for ``enable_thinking``) almost surely is a typo that would silently
leave thinking at its default: that raises :class:`InvalidOptionError` naming the key it
resembles. The keys a family reads are validated strictly by its ``resolve_switches``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

from reasonspan.runtime.core.errors import InvalidOptionError

NEAR_MISS_CUTOFF = 0.85
"""difflib ratio from which an unknown key counts as a misspelling of a key the family
reads (``enable_thinkng`` → 0.97; ``thinking`` vs ``enable_thinking`` → 0.70 passes)."""


class RecordingKwargs(Mapping[str, Any]):
    """An empty mapping that remembers which keys were asked for.

    Passing it to ``resolve_switches`` reveals every kwarg a family's hook reads, including
    ones it reads in code rather than through ``spec.thinking_switches``.
    """

    def __init__(self) -> None:
        self.asked: list[str] = []

    def _note(self, key: object) -> None:
        if isinstance(key, str) and key not in self.asked:
            self.asked.append(key)

    def __getitem__(self, key: str) -> Any:
        self._note(key)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        self._note(key)
        return False

    def get(self, key: str, default: Any = None) -> Any:
        self._note(key)
        return default

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def keys_read(
    resolve: Callable[[Mapping[str, Any]], object], declared: Iterable[str]
) -> frozenset[str]:
    """The keys ``resolve`` looks at with no kwargs, plus the ``declared`` ones."""
    rec = RecordingKwargs()
    resolve(rec)
    return frozenset([*declared, *rec.asked])


@lru_cache(maxsize=4096)
def near_miss(key: str, known: frozenset[str]) -> str | None:
    """The key of ``known`` that ``key`` is a misspelling of, or None."""
    hits = difflib.get_close_matches(key, sorted(known), n=1, cutoff=NEAR_MISS_CUTOFF)
    return hits[0] if hits else None


def check_near_misses(kwargs: Mapping[str, Any], known: frozenset[str], parser: str) -> None:
    """Raise for an unknown key that is a near miss of a key this family reads."""
    for key in kwargs:
        if not isinstance(key, str) or key in known:
            continue
        hit = near_miss(key, known)
        if hit is not None:
            raise InvalidOptionError(
                key,
                kwargs[key],
                f"a chat_template_kwargs key parser {parser!r} reads; did you mean {hit!r}?",
            )
