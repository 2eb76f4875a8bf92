"""Stop strings: find the first one in a text that arrives in pieces, and hold back what
may still become one, so the matched text and everything after it is never sent.

It knows text only (the runtime feeds it a request's content text, step by step); it does
not know tokens, labels or requests. "First" is the match that is complete first, as the
text grows one piece at a time: the one that ends earliest (of two ending at the same
place, the longer one). That is what a streaming server can act on, and it makes the
result independent of how the text was cut into pieces.
"""

from __future__ import annotations

from collections.abc import Sequence

from reasonspan.runtime.core.errors import InvalidOptionError

__all__ = ["StopMatcher", "stop_strings"]


def stop_strings(value: object) -> tuple[str, ...]:
    """The request's ``stop`` as a tuple (OpenAI's field: a string or a list of strings;
    None or an empty list: no stop strings). An empty string would match everywhere, so
    it is refused, as is anything that is not a string."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(s, str) and s for s in items):
        raise InvalidOptionError("stop", value, "a non-empty string or a list of non-empty strings")
    return tuple(dict.fromkeys(str(s) for s in items))


class StopMatcher:
    """Feed text pieces in order; each :meth:`feed` returns the text that can be sent now
    and whether a stop string matched (then nothing more is to be sent)."""

    __slots__ = ("_longest", "_pending", "_stops", "matched")

    def __init__(self, stops: Sequence[str]) -> None:
        if not stops or not all(stops):
            raise ValueError("StopMatcher needs at least one stop string, none of them empty")
        self._stops = tuple(stops)
        self._longest = max(len(s) for s in self._stops)
        self._pending = ""
        """The end of the text so far that begins some stop string: not sent yet."""
        self.matched: str | None = None
        """The stop string that matched (None: none yet)."""

    def feed(self, text: str) -> tuple[str, bool]:
        """``(text to send, matched)``. After a match, every later piece is dropped."""
        if self.matched is not None:
            return "", True
        if not text:
            return "", False
        buf = self._pending + text
        best_end = -1
        best_start = 0
        for s in self._stops:
            at = buf.find(s)
            if at >= 0:
                end = at + len(s)
                if best_end < 0 or end < best_end or (end == best_end and at < best_start):
                    best_end, best_start, self.matched = end, at, s
        if best_end >= 0:
            self._pending = ""
            return buf[:best_start], True
        keep = self._held(buf)
        self._pending = buf[len(buf) - keep :]
        return buf[: len(buf) - keep], False

    def flush(self) -> str:
        """The request ended without a match: the text held back is sent after all."""
        out, self._pending = self._pending, ""
        return out

    def _held(self, buf: str) -> int:
        """Length of the longest end of ``buf`` that is a proper beginning of a stop
        string (a match completed by a later piece would start there)."""
        for k in range(min(len(buf), self._longest - 1), 0, -1):
            tail = buf[-k:]
            if any(s.startswith(tail) for s in self._stops):
                return k
        return 0
