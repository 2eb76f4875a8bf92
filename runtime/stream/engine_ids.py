"""The runtime's book of engine ids: which int64 id the step arrays use for a request, and
which ids the runtime ended before the engine did.

A server keys requests by its own ids (``"chatcmpl-…"``, UUIDs, ints). An int id is also
the engine's id; a string id gets a fresh *engine id* from :data:`STRING_IDS_FROM` up, so a
string id can be reused at once after an abort. A request the runtime ends itself (aborted,
cancelled, failed, stopped on a stop string) is *gone*: the engine may still send tokens
for it, or call ``finish()``, before it hears of the end from ``take_aborted()``; those
are dropped quietly, not errors. Both memories are bounded (:data:`GONE_MEMORY`), so an
engine that never asks does not make the runtime grow without bound.

This is bookkeeping the step reads only when something ended early, kept apart from the
runtime's step and its request table.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Container

from reasonspan.runtime.core.ids import is_id
from reasonspan.runtime.stream.errors import DuplicateRequestIdError, RequestKey

STRING_IDS_FROM = 1 << 62
"""Engine ids of string-keyed requests are drawn from here up (an int key that lands in
this range is skipped over, never shared)."""

GONE_MEMORY = 65_536
"""How many ended-early engine ids are remembered so their late tokens are dropped quietly
(a bounded memory: an engine that sends tokens for an id this long after its abort has a
bug worth an error)."""


class EngineIds:
    """Engine ids handed out, ended early, and waiting to be told to the engine."""

    __slots__ = ("_next", "aborted", "gone", "gone_keys")

    def __init__(self) -> None:
        self.aborted: dict[int, None] = {}
        """Engine ids for ``take_aborted()``, in order (a dict: a reused int id is taken
        out of it at once; bounded like :attr:`gone` for an engine that never asks)."""
        self.gone: OrderedDict[int, None] = OrderedDict()
        """Engine ids the runtime ended while the engine may still send tokens for them."""
        self.gone_keys: OrderedDict[str, None] = OrderedDict()
        """The string ids of those requests (bounded alike), for ``finish(key)``."""
        self._next = STRING_IDS_FROM

    def new(self, key: RequestKey, taken: Container[int]) -> int:
        """The engine id of a new request keyed ``key`` (``taken``: the engine ids of the
        open requests). An int key is its own id; it is a duplicate when a string-keyed
        request holds it."""
        if isinstance(key, int):
            if key in taken:
                raise DuplicateRequestIdError(key)
            return key
        eid = self._next
        while eid in taken or eid in self.gone:
            eid += 1
        self._next = eid + 1
        return eid

    def claim(self, key: RequestKey, engine_id: int) -> None:
        """The id now belongs to a new request: no more dropping its tokens, and no abort
        of the old one still pending (a server reuses an int id only after its engine
        stopped the old request; a string id is only no longer gone)."""
        if isinstance(key, int):
            self.gone.pop(engine_id, None)
            self.aborted.pop(engine_id, None)
        else:
            self.gone_keys.pop(key, None)

    def notice(self, engine_id: int) -> None:
        """Tell the engine (``take_aborted()``) to stop generating for ``engine_id``."""
        aborted = self.aborted
        aborted[engine_id] = None
        if len(aborted) > GONE_MEMORY:  # never asked for: the oldest notices go
            del aborted[next(iter(aborted))]

    def take(self) -> list[int]:
        """The notices since the last call, in order."""
        out = list(self.aborted)
        self.aborted.clear()
        return out

    def forget(self, engine_id: int, key: RequestKey) -> None:
        """The runtime ended the request before the engine did: remember its ids."""
        self.gone[engine_id] = None
        if len(self.gone) > GONE_MEMORY:
            self.gone.popitem(last=False)
        if isinstance(key, str):
            self.gone_keys[key] = None
            if len(self.gone_keys) > GONE_MEMORY:
                self.gone_keys.popitem(last=False)

    def is_gone(self, request_id: object) -> bool:
        """Whether ``request_id`` (a key or an engine id) was ended by the runtime."""
        if isinstance(request_id, str):
            return request_id in self.gone_keys
        return is_id(request_id) and int(request_id) in self.gone  # type: ignore[call-overload]
