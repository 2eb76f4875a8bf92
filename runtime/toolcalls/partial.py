"""Calls read while their region is still open, so their arguments can be sent as written.

A format's kinds read a region whole, once it closed (``ToolFormat.parse``). A *partial
reader* reads the same body as it grows, for a server that streams arguments
(``stream=True``, as OpenAI sends them): it reports each call once its name is known and
its **first argument** has been read and is valid (the call is then *committed*: its
header is sent), and from then on the canonical text of its arguments as it is written.

Rules every reader keeps, so the pieces a stream sends concatenate to exactly the
``arguments`` the whole call is read with:

- the text reported is a prefix of what :func:`~.tool_types.dump_arguments` writes for
  the call's arguments, whatever the split of the output (readers re-encode token by token
  and hold back what the next text may still change);
- a call commits only after every earlier call of its region did, so stream order is the
  order of the calls the region reads as;
- a call the reader cannot follow (arguments written before the name, arguments as a JSON
  string, a wrapper object) never commits: it is sent whole when its region closes;
- a call that goes wrong after it committed (a syntax error, a repeated key, a number JSON
  cannot hold, ``max_tokens`` cutting it) is *broken*: nothing more is reported for it.
  This is the one case where streamed and whole differ: the stream sent its name and first
  argument(s), the whole read sends no such call. Holding every call until its region
  closes is the only way to avoid it, and it would send a 2,000-token argument in one
  piece.

Each body kind that can be read this way registers a reader factory with
:func:`partial_kind`; a format's reader is the first of its kinds' readers that accepts
the body's first text (:func:`choose_kind`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls.json_stream import encoded


@dataclass
class PartialCall:
    """One call of an open region, as far as it has been read."""

    name: str
    arguments: list[str] = field(default_factory=list)
    """Canonical argument text read so far, in pieces (a prefix of the final text)."""
    committed: bool = False
    """Its first argument was read and is valid: the call may be sent."""
    broken: bool = False
    """It went wrong after it committed: nothing more is reported for it."""
    complete: bool = False
    """Its arguments were read to their end: ``arguments`` is the whole text."""

    def add_member(self, member: str) -> None:
        """A member read whole, its JSON text ``"key":value``, after the object's ``{`` or
        a comma."""
        self.arguments.append(("," if self.arguments else "{") + member)

    def open_string(self, key: str) -> None:
        """A string member streamed as it is written: its key and opening quote, after
        the object's ``{`` or a comma (its text follows: :meth:`add_string`,
        :meth:`close_string`)."""
        self.arguments.append(("," if self.arguments else "{") + f'"{encoded(key)}":"')

    def add_string(self, text: str) -> None:
        """More of the streamed string's text, JSON-escaped (``encoded`` escapes per
        character, so the pieces are the pieces of the whole string's text)."""
        self.arguments.append(encoded(text))

    def close_string(self, text: str = "") -> None:
        """The streamed string's last text, JSON-escaped, and its closing quote."""
        self.arguments.append(encoded(text) + '"')

    def commit(self, calls: list[PartialCall]) -> None:
        """Its first member was read and is valid: it may be sent, appended to its
        reader's ``calls`` (once)."""
        if not self.committed:
            self.committed = True
            calls.append(self)

    def close(self, calls: list[PartialCall]) -> None:
        """Its arguments were read to their end: close their object, or, for a call that
        had none (never committed), send ``{}`` and commit it now, appended to its
        reader's ``calls``."""
        self.arguments.append("}" if self.committed else "{}")
        self.commit(calls)
        self.complete = True


class PartialReader(Protocol):
    """A body kind's reader of one open region (module doc)."""

    calls: list[PartialCall]
    """The calls found so far that may be streamed, in order."""

    def feed(self, text: str) -> None:
        """Read ``text``, the next text of the region's body."""
        ...


ReaderFactory = Callable[[Tools], PartialReader]
Accepts = Callable[[str], "bool | None"]
"""``(the body's text so far, leading space removed) -> this kind?``; None: not known
yet (too little text)."""

_READERS: dict[str, tuple[Accepts, ReaderFactory]] = {}


def partial_kind(name: str, accepts: Accepts) -> Callable[[ReaderFactory], ReaderFactory]:
    """Register a partial reader for the body kind ``name``."""

    def deco(factory: ReaderFactory) -> ReaderFactory:
        _READERS[name] = (accepts, factory)
        return factory

    return deco


def streams_arguments(kinds: tuple[str, ...]) -> bool:
    """Does some kind of a format have a partial reader?"""
    return any(kind in _READERS for kind in kinds)


def new_reader(kind: str, tools: Tools) -> PartialReader:
    """A fresh reader of the kind :func:`choose_kind` chose."""
    return _READERS[kind][1](tools)


def opens_with(opener: str) -> Accepts:
    """The :data:`Accepts` of a kind whose body begins with ``opener`` (None while the
    text so far is shorter and may still begin it)."""

    def accepts(body: str) -> bool | None:
        if len(body) < len(opener):
            return None if opener.startswith(body) else False
        return body.startswith(opener)

    return accepts


def choose_kind(kinds: tuple[str, ...], body: str) -> str | None:
    """The kind whose reader reads a body that begins with ``body`` (leading space
    removed): the first of the format's kinds whose reader accepts it; ``""`` while the
    text so far cannot tell; None when no reader will (the calls are sent whole)."""
    for kind in kinds:
        entry = _READERS.get(kind)
        if entry is None:
            # A kind without a reader, tried first, may read this body: only a body no
            # reader-less kind comes before is streamed.
            return None
        verdict = entry[0](body)
        if verdict is None:
            return ""
        if verdict:
            return kind
    return None
