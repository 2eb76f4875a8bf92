"""JSON text read as it arrives: one event per token, strings in pieces.

A call's arguments are sent as they are written (``stream=True``), and the pieces must
concatenate to exactly the text the whole call is sent with: the compact JSON that
:func:`~reasonspan.runtime.core.tool_types.dump_arguments` writes for what Python's
``json`` reads. :class:`JsonTokens` is the lexer that makes that possible: it checks the
grammar as ``json`` does (strict strings, its number syntax, its escapes) and hands each
token over in a form whose canonical text is one msgspec call away, so a reader can
re-encode a value token by token:

- ``{`` ``}`` ``[`` ``]`` ``:`` ``,`` (inside a value; ``,`` and ``;`` between top-level
  values are separators, as ``read_json_values`` allows, and not reported);
- :data:`KEY` with the decoded key, once it is whole;
- :data:`STR` (a value string begins), :data:`PIECE` with its text as it arrives, in
  canonical JSON (escaped as msgspec escapes: what a reader writes is the piece itself;
  :func:`decoded` gives the text), :data:`END` (the string closed);
- :data:`SCALAR` with the canonical text of a number or literal (``1E2`` → ``100.0``),
  once the next character shows it is whole;
- :data:`STOP` at text that begins no value at the top level (prose after the calls, the
  first bytes of a close marker): the reader is done;
- :data:`FAIL` where ``json`` would refuse the text or the value cannot be sent (a raw
  control character in a string, a lone surrogate, ``NaN`` or ``1e999``, an integer past
  Python's digit limit): nothing after it is read.

A token cut by the end of the text so far (half an escape, a number that may go on,
``tr``) waits for more; only that tail is kept, so a long value costs each character once.
"""

from __future__ import annotations

import json
import math
import re

import msgspec

from reasonspan.runtime.toolcalls.sections import SPACE, SPACE_RUN

# Event kinds.
OPEN_OBJECT, CLOSE_OBJECT, OPEN_ARRAY, CLOSE_ARRAY, COLON, COMMA = "{", "}", "[", "]", ":", ","
KEY, STR, PIECE, END, SCALAR, STOP, FAIL = "k", '"', "s", "e", "n", "x", "!"

Event = tuple[str, str]

_CANONICAL = re.compile(r'[^"\\\x00-\x1f]*(?:\\["\\bfnrt][^"\\\x00-\x1f]*)*')
"""String text written as msgspec writes it: raw characters but the quote, the backslash
and control characters, which take their short escapes (``\\u`` escapes, ``\\/`` and
the other control characters do not match): such text is its own canonical piece, read
without decoding and encoding it again (the run of a long argument, a file's lines)."""
_NUMBER_PREFIX = re.compile(r"-?[0-9]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_LITERALS = {"t": "true", "f": "false", "n": "null"}

# What the grammar expects next.
_TOP, _VALUE, _VALUE_OR_CLOSE, _KEY, _KEY_OR_CLOSE, _COLON, _COMMA_OR_CLOSE = range(7)

_encode = msgspec.json.encode

MAX_NUMBER = 10_000
"""Characters a number may have (Python reads no integer past 4,300 digits): a longer one
fails rather than being read again with every piece of text that extends it."""


_loads = json.loads


def _closing_quote(text: str, i: int) -> int:
    """Where the string read from ``i`` closes (a quote after an even run of backslashes);
    -1: not in the text yet."""
    j = i
    while True:
        q = text.find('"', j)
        if q < 0:
            return -1
        k = q - 1
        while k >= i and text[k] == "\\":
            k -= 1
        if (q - 1 - k) % 2 == 0:
            return q
        j = q + 1


def _whole_escapes(seg: str) -> int:
    """How much of ``seg`` (string text the text so far cuts) ends on whole escapes: a
    trailing backslash, a ``\\u`` with fewer than four digits, or a high surrogate whose
    low half may follow, wait for more."""
    n = len(seg)
    k = n
    while k > 0 and seg[k - 1] == "\\":
        k -= 1
    if (n - k) % 2:
        return _whole_escapes(seg[: n - 1])
    at = seg.rfind("\\u", max(0, n - 12))
    while at >= 0:
        k = at
        while k > 0 and seg[k - 1] == "\\":
            k -= 1
        if (at - k) % 2 == 0:  # an escape, not an escaped backslash before a u
            digits = seg[at + 2 : at + 6]
            if len(digits) < 4:  # (what is before it may be a high surrogate)
                return _whole_escapes(seg[:at]) if _HEX4.match(digits + "0000") else n
            if 0xD800 <= int(digits, 16) <= 0xDBFF and at + 6 == n:
                return at  # a high surrogate: its low half may come next
            return n
        at = seg.rfind("\\u", max(0, n - 12), at)
    return n


def _end(pattern: re.Pattern[str], text: str, i: int) -> int:
    """Where a pattern that matches the empty string stops matching at ``i``."""
    m = pattern.match(text, i)
    assert m is not None
    return m.end()


def decoded(piece: str) -> str:
    """The text of a :data:`PIECE` (or of pieces joined): the inverse of :func:`encoded`."""
    text: str = _loads(f'"{piece}"')
    return text


def encoded(text: str) -> str:
    """``text`` as the inside of a JSON string, escaped as msgspec escapes it (per
    character, so pieces encode to the pieces of the whole)."""
    return _encode(text).decode("utf-8")[1:-1]


class JsonTokens:
    """One JSON text (a sequence of top-level values) read incrementally (module doc)."""

    __slots__ = ("_expect", "_key", "_one", "_stack", "_string", "_tail", "done")

    def __init__(self, one_value: bool = False) -> None:
        self._tail = ""
        """Text not read yet: the start of a token the text so far cuts."""
        self._stack: list[str] = []
        self._expect = _TOP
        self._string = 0
        """Inside a string: 1 a value, 2 a key (0: not in one)."""
        self._key: list[str] = []
        self.done = False
        """A :data:`STOP` or :data:`FAIL` was reported (or, ``one_value``, the value
        ended): nothing more is read."""
        self._one = one_value
        """Read one top-level value only: what follows it stays in :attr:`rest`."""

    @property
    def rest(self) -> str:
        """The text not read (after the value, with ``one_value``; the cut token else)."""
        return self._tail

    def plain_string_text(self, more: str) -> bool:
        """Is ``more`` nothing but canonical text inside the value string being read (no
        closing quote, nothing waiting, every escape one msgspec writes: :data:`_CANONICAL`)?
        Then it is read as one :data:`PIECE` that is itself, and the caller may take it as
        is (the run of a long string argument, token after token)."""
        return self._string == 1 and not self._tail and _CANONICAL.fullmatch(more) is not None

    def feed(self, more: str, out: list[Event]) -> None:
        """Read ``more`` text, appending its events to ``out``."""
        if self.done:
            return
        text = self._tail + more
        i = self._read(text, out)
        self._tail = text[i:]

    def _read(self, text: str, out: list[Event]) -> int:
        n = len(text)
        i = 0
        while i < n and not self.done:
            j = self._in_string(text, i, out) if self._string else self._token(text, i, out)
            if j < 0:
                return i  # a token the text cuts: wait for more
            i = j
        return i

    def _fail(self, out: list[Event], why: str) -> int:
        out.append((FAIL, why))
        self.done = True
        return 0

    # ------------------------------------------------------------------ strings

    def _in_string(self, text: str, i: int, out: list[Event]) -> int:
        """Read string text from ``i``: up to its closing quote, or as much of it as the
        text holds whole (an escape it cuts waits), decoded in one go by ``json`` (its
        strict rules, so what it refuses fails here too). -1: wait. A value string's run of
        canonical text (:data:`_CANONICAL`) is its own piece, taken as it is."""
        if self._string == 1:
            j = _end(_CANONICAL, text, i)
            if j > i:
                out.append((PIECE, text[i:j]))
                if j < len(text) and text[j] == '"':
                    self._close_string(out)
                    return j + 1
                return j
        end = _closing_quote(text, i)
        seg = text[i:] if end < 0 else text[i:end]
        if end < 0:
            seg = seg[: _whole_escapes(seg)]
        if seg:
            try:
                piece = _loads('"' + seg + '"')
                piece.encode("utf-8")  # a lone surrogate: no JSON text carries it
            except (ValueError, UnicodeEncodeError):
                return self._fail(out, "a control character, a bad escape or a lone surrogate")
            self._piece(piece, out)
        if end >= 0:
            self._close_string(out)
            return end + 1
        return i + len(seg) if seg else -1

    def _piece(self, piece: str, out: list[Event]) -> None:
        if self._string == 2:
            self._key.append(piece)
        else:
            out.append((PIECE, encoded(piece)))

    def _close_string(self, out: list[Event]) -> None:
        if self._string == 2:
            out.append((KEY, "".join(self._key)))
            self._key.clear()
            self._expect = _COLON
        else:
            out.append((END, ""))
            self._value_done()
        self._string = 0

    # ------------------------------------------------------------------ tokens

    def _value_done(self) -> None:
        self._expect = _COMMA_OR_CLOSE if self._stack else _TOP
        if self._one and not self._stack:
            self.done = True

    def _token(self, text: str, i: int, out: list[Event]) -> int:
        """Read one token outside strings at ``i``. -1: wait."""
        c = text[i]
        if c in SPACE:
            i = _end(SPACE_RUN, text, i)
            if i >= len(text):
                return i
            c = text[i]
        expect = self._expect
        value = expect in (_TOP, _VALUE, _VALUE_OR_CLOSE)
        if expect == _TOP and c in ",;":
            return i + 1
        if c == '"' and (value or expect in (_KEY, _KEY_OR_CLOSE)):
            self._string = 1 if value else 2
            if value:
                out.append((STR, ""))
            return i + 1
        if value and c in "{[":
            self._stack.append(c)
            self._expect = _KEY_OR_CLOSE if c == "{" else _VALUE_OR_CLOSE
            out.append((c, ""))
            return i + 1
        if c in "}]" and self._stack and self._stack[-1] == ("{" if c == "}" else "["):
            if expect in (_COMMA_OR_CLOSE, _KEY_OR_CLOSE if c == "}" else _VALUE_OR_CLOSE):
                self._stack.pop()
                self._value_done()
                out.append((c, ""))
                return i + 1
        elif c == ":" and expect == _COLON:
            self._expect = _VALUE
            out.append((c, ""))
            return i + 1
        elif c == "," and expect == _COMMA_OR_CLOSE:
            self._expect = _KEY if self._stack[-1] == "{" else _VALUE
            out.append((c, ""))
            return i + 1
        elif value and (c == "-" or c.isdigit() or c in _LITERALS):
            return self._scalar(text, i, out)
        if expect == _TOP:
            out.append((STOP, ""))
            self.done = True
            return i
        return self._fail(out, f"unexpected {c!r}")

    def _scalar(self, text: str, i: int, out: list[Event]) -> int:
        """A number or literal at ``i``, once the text shows where it ends. -1: wait."""
        literal = _LITERALS.get(text[i])
        if literal is not None:
            got = text[i : i + len(literal)]
            if got != literal:
                return -1 if literal.startswith(got) else self._fail(out, "an unknown literal")
            out.append((SCALAR, literal))
            self._value_done()
            return i + len(literal)
        end = _end(_NUMBER_PREFIX, text, i)
        if end >= len(text):
            if end - i > MAX_NUMBER:
                return self._fail(out, "a number longer than any a call can carry")
            return -1  # the number may go on
        token = text[i:end]
        if not _NUMBER.fullmatch(token):
            return self._fail(out, f"a malformed number {token!r}")
        try:
            number = json.loads(token)
            canonical = _encode(number).decode("ascii")
        except ValueError:
            return self._fail(out, "an integer past Python's digit limit")
        if isinstance(number, float) and not math.isfinite(number):
            return self._fail(out, "a number JSON cannot hold")
        out.append((SCALAR, canonical))
        self._value_done()
        return end
