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
- :data:`STR` (a value string begins), :data:`PIECE` with decoded text as it arrives,
  :data:`END` (the string closed);
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

# Event kinds.
OPEN_OBJECT, CLOSE_OBJECT, OPEN_ARRAY, CLOSE_ARRAY, COLON, COMMA = "{", "}", "[", "]", ":", ","
KEY, STR, PIECE, END, SCALAR, STOP, FAIL = "k", '"', "s", "e", "n", "x", "!"

Event = tuple[str, str]

_SPACE = re.compile(r"[ \t\r\n]*")
_RUN = re.compile(r'[^"\\\x00-\x1f]*')
_NUMBER_PREFIX = re.compile(r"-?[0-9]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS = {"t": "true", "f": "false", "n": "null"}

# What the grammar expects next.
_TOP, _VALUE, _VALUE_OR_CLOSE, _KEY, _KEY_OR_CLOSE, _COLON, _COMMA_OR_CLOSE = range(7)

_encode = msgspec.json.encode

MAX_NUMBER = 10_000
"""Characters a number may have (Python reads no integer past 4,300 digits): a longer one
fails rather than being read again with every piece of text that extends it."""


def _end(pattern: re.Pattern[str], text: str, i: int) -> int:
    """Where a pattern that matches the empty string stops matching at ``i``."""
    m = pattern.match(text, i)
    assert m is not None
    return m.end()


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
        """Is ``more`` nothing but text inside the value string being read (no quote,
        escape or control character, nothing waiting)? Then it is read as one
        :data:`PIECE` whose JSON text is itself, and the caller may take it as is:
        (the run of a long string argument, token after token)."""
        return self._string == 1 and not self._tail and _RUN.fullmatch(more) is not None

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
        """Read string text from ``i``: a run, then one quote or escape. -1: wait."""
        j = _end(_RUN, text, i)
        if j > i:
            self._piece(text[i:j], out)
        if j >= len(text):
            return j
        c = text[j]
        if c == '"':
            self._close_string(out)
            return j + 1
        if c != "\\":
            return self._fail(out, "a control character inside a string")
        got = self._escape(text, j)
        if got is None:
            return -1 if j == i else j  # (the run before it is read; the escape waits)
        if not got[0]:
            return self._fail(out, "an invalid escape or a lone surrogate in a string")
        self._piece(got[0], out)
        return got[1]

    def _escape(self, text: str, j: int) -> tuple[str, int] | None:
        """The escape at ``j``: ``(its text, where reading goes on)``, ``("", j)`` when
        ``json`` refuses it or the text cannot be sent (a lone surrogate), None: wait."""
        n = len(text)
        if j + 1 >= n:
            return None
        c = text[j + 1]
        if c != "u":
            got = _ESCAPES.get(c)
            return (got, j + 2) if got is not None else ("", j)
        if j + 6 > n:
            return None if _HEX4.match(text[j + 2 :] + "0000") else ("", j)
        if not _HEX4.fullmatch(text, j + 2, j + 6):
            return "", j
        cp = int(text[j + 2 : j + 6], 16)
        if 0xDC00 <= cp <= 0xDFFF:
            return "", j
        if not 0xD800 <= cp <= 0xDBFF:
            return chr(cp), j + 6
        # A high surrogate: whole only with the low half that follows it.
        low = text[j + 6 : j + 12]
        if len(low) < 6 and "\\u".startswith(low[:2]) and _HEX4.match(low[2:] + "0000"):
            return None
        if not (low[:2] == "\\u" and _HEX4.fullmatch(low, 2)):
            return "", j
        lo = int(low[2:], 16)
        if not 0xDC00 <= lo <= 0xDFFF:
            return "", j
        return chr(0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)), j + 12

    def _piece(self, piece: str, out: list[Event]) -> None:
        if self._string == 2:
            self._key.append(piece)
        else:
            out.append((PIECE, piece))

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
        if c in " \t\r\n":
            i = _end(_SPACE, text, i)
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
