"""Python calls (kinds ``pythonic``, ``lfm2``, ``olmo3``) read while their region is open
(``partial.py``).

The three kinds read one body language, Python calls with keyword arguments whose values
are literals: Llama 4's list ``[get_weather(city='LA'), f(x=1)]`` (``pythonic``), LFM2's
list with its repairs (``lfm2``), Olmo 3's calls one per line (``olmo3``). This reader
follows the text as the model writes it, call by call, keyword by keyword:

- a call commits once its first argument is whole and reads as the whole read reads it
  (a call with no argument once the separator after its ``)`` comes); its argument text
  is then what :func:`~.tool_types.dump_arguments` writes, in pieces;
- a later argument whose value is a plain string (no prefix, or ``u``) is streamed as it
  is written: its escapes decoded as Python decodes them and the result JSON-escaped,
  less what the next text may still change (an escape not yet whole, a quote that may be
  the start of a closing ``'''``); the JSON string closes once what follows the closing
  quote shows that no other string is glued to it (``'a' 'b'`` is ``"ab"``);
- every other value (numbers, ``True`` / ``None``, JSON's ``true`` / ``null``, lists,
  tuples, dicts, a prefixed string) is read whole when the ``,`` or ``)`` after it comes,
  with the kind's own reading (:mod:`ast`, never evaluated; :mod:`.lfm2_calls`' repairs
  for ``lfm2``), and sent then.

Anything else stops the reader without judging the call (a positional argument, a
repeated keyword, a comment, a raw string streamed, a value that does not read, a
carriage return or NUL): the whole read decides when the region closes; a call already
committed then gets the rest of its arguments if they continue what was sent, else it is
broken (``region_calls``). The reader never commits a call whose first argument the whole
read would not give, and never sends text the whole read would write differently.

LFM2's repairs are applied where they cannot change what was sent: a raw newline in a
single-quoted string is a newline, a keyword named after a Python keyword keeps its
name, sets are lists; a string value's closing quote must be followed by what the repair
takes as its end (the next ``name=`` or the call's ``)``), and triple-quoted or raw
strings stop it (the repairs read those differently depending on the rest of the list).
"""

from __future__ import annotations

import keyword
import re

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls.partial import PartialCall, partial_kind
from reasonspan.runtime.toolcalls.partial_members import WINDOW, member_text
from reasonspan.runtime.toolcalls.partial_pyliterals import (
    IN_STRING,
    LOOK,
    escape_end,
    quote_at,
    read_value,
    unescaped,
)
from reasonspan.runtime.toolcalls.pythonic_calls import BAD_VALUE

_WS = " \t\n"
_NAME = re.compile(r"([A-Za-z_]\w*(?:[ \t]*\.[ \t]*[A-Za-z_]\w*)*)[ \t]*\(", re.ASCII)
_NAME_SO_FAR = re.compile(r"[\w. \t]*\Z", re.ASCII)
_KEY = re.compile(r"([A-Za-z_]\w*)[ \t\n]*=(?!=)", re.ASCII)
_KEY_SO_FAR = re.compile(r"[A-Za-z_]\w*[ \t\n]*=?\Z", re.ASCII)
_PREFIX = re.compile(r"[A-Za-z]{0,3}", re.ASCII)
_STOPPERS = re.compile(r"[\r\x00]")

# States: where the reader is.
_OPEN, _CALL, _ARG, _VALUE, _STRING, _AFTER_STRING, _GENERIC, _CALL_END = range(8)
_NEXT_LINE, _SAME_LINE = 8, 9
"""(olmo3) after a call and the newline, or the comma, that ended it."""
_SKIPPED = {_NEXT_LINE: "\n", _SAME_LINE: " \t"}
"""What is skipped before the next call there: blank lines (then no indentation), or
spaces (a comma's tuple stays on its line)."""


class PythonicCallsReader:
    """The partial reader of the Python-call kinds (module doc)."""

    __slots__ = ("_call", "_closing", "_dialect", "_i", "_key", "_keys", "_mark", "_quote",
                 "_stack", "_state", "_string_comma", "_text", "calls",
                 "done")  # fmt: skip

    def __init__(self, dialect: str) -> None:
        self.calls: list[PartialCall] = []
        self.done = False
        self._dialect = dialect
        """"pythonic", "lfm2" or "olmo3"."""
        self._text = ""
        self._i = 0
        self._state = _CALL if dialect == "olmo3" else _OPEN
        self._call: PartialCall | None = None
        self._keys: set[str] = set()
        self._key = ""
        self._quote = ""
        """The quote of the string being read ("" : none)."""
        self._mark = 0
        """A value read whole: where it begins."""
        self._stack: list[str] = []
        """A value read whole: the brackets open in it."""
        self._string_comma = False
        """The last value was a string and a comma followed it."""
        self._closing = False
        """(lfm2) a string value's closing quote waits for what follows it to be the
        next ``name=`` or the list's ``,`` / ``]`` after the call's ``)``."""

    # ------------------------------------------------------------------ driving

    def feed(self, text: str) -> None:
        if self.done:
            return
        stopper = _STOPPERS.search(text)
        if stopper is not None:
            text = text[: stopper.start()]
        self._text += text
        while not self.done and self._step():
            pass
        if stopper is not None:
            self.done = True  # a carriage return or a NUL: the whole read decides
        keep = self._mark if self._state == _GENERIC else self._i
        if keep >= WINDOW:
            self._text = self._text[keep:]
            self._i -= keep
            self._mark -= keep

    def _step(self) -> bool:
        """Read on; False: wait for more text (or done)."""
        state = self._state
        if state == _STRING:
            return self._string()
        if state == _GENERIC:
            return self._generic()
        olmo3_end = state == _CALL_END and self._dialect == "olmo3"
        i = self._skip(_SKIPPED.get(state, " \t" if olmo3_end else _WS))
        if i is None:
            return False
        if state in _SKIPPED:
            return self._to(i, _CALL) if self._text[i] not in " \t\n" else self._stop()
        if state == _OPEN:
            return self._to(i + 1, _CALL) if self._text[i] == "[" else self._stop()
        if state == _CALL:
            return self._name(i)
        if state == _ARG:
            return self._argument(i)
        if state == _VALUE:
            return self._value(i)
        if state == _AFTER_STRING:
            return self._after_string(i)
        return self._call_end(i)

    def _skip(self, ws: str) -> int | None:
        text, i = self._text, self._i
        while i < len(text) and text[i] in ws:
            i += 1
        self._i = i
        return i if i < len(text) else None

    def _to(self, i: int, state: int) -> bool:
        self._i, self._state = i, state
        return True

    def _stop(self) -> bool:
        """What follows is not followed: the whole read decides (module doc)."""
        self.done = True
        return False

    def _current(self) -> PartialCall:
        """The call being read (its arguments are written as they are read: the call is
        seen only once it commits, after its first argument)."""
        call = self._call
        assert call is not None
        return call

    # ------------------------------------------------------------------ calls

    def _name(self, i: int) -> bool:
        text = self._text
        if text[i] == "]" and self._dialect != "olmo3" and self.calls:
            self.done = True  # the list's end after a trailing comma
            return False
        m = _NAME.match(text, i)
        if m is None:
            so_far = _NAME_SO_FAR.match(text, i) is not None
            return False if so_far and len(text) - i < LOOK else self._stop()
        name = re.sub(r"[ \t]", "", m[1])
        if any(keyword.iskeyword(part) for part in name.split(".")):
            return self._stop()
        self._call = PartialCall(name=name)
        self._keys = set()
        return self._to(m.end(), _ARG)

    def _argument(self, i: int) -> bool:
        text = self._text
        if text[i] == ")":
            if self._string_comma and self._closing:
                return self._stop()  # the repair reads a quote before ",)" as text
            return self._to(i + 1, _CALL_END)
        m = _KEY.match(text, i)
        if m is None or m.end() == len(text):  # (the next character may make it "==")
            so_far = _KEY_SO_FAR.match(text, i) is not None
            return False if so_far and len(text) - i < LOOK else self._stop()
        key = m[1]
        if key in self._keys or (keyword.iskeyword(key) and self._dialect != "lfm2"):
            return self._stop()  # a repeated keyword: the whole read keeps the last value
        self._keys.add(key)
        self._key = key
        if self._closing:
            self._close_string()
        return self._to(m.end(), _VALUE)

    def _call_end(self, i: int) -> bool:
        """After a call's ``)``: the separator before the next call ends it."""
        c = self._text[i]
        if self._dialect == "olmo3":
            if c not in ",\n":
                return self._stop()
            self._finish()
            return self._to(i + 1, _NEXT_LINE if c == "\n" else _SAME_LINE)
        if c not in ",]":
            return self._stop()
        if self._closing:
            self._close_string()
        self._finish()
        if c == "]":
            self.done = True
            return False
        return self._to(i + 1, _CALL)

    def _finish(self) -> None:
        self._current().close(self.calls)

    # ------------------------------------------------------------------ values

    def _value(self, i: int) -> bool:
        text = self._text
        m = _PREFIX.match(text, i)
        assert m is not None
        j = m.end()
        if j == len(text):
            return False  # a prefix, or a name such as True, not whole yet
        if text[j] not in "'\"" or len(m[0]) > 2:
            return self._whole(i)
        quote = quote_at(text, j)
        if not quote:
            return False
        prefix = m[0].lower()
        if self._dialect == "lfm2" and (prefix or len(quote) == 3):
            return self._stop()  # the repairs read these by the rest of the list (module doc)
        if prefix not in ("", "u"):
            return self._whole(i)
        self._current().open_string(self._key)
        self._quote = quote
        return self._to(j + len(quote), _STRING)

    def _string(self) -> bool:
        """A plain string's text, decoded and JSON-escaped, up to what may still change."""
        text, quote, j = self._text, self._quote, self._i
        special = IN_STRING[quote[0]]
        out: list[str] = []
        closed = stop = False
        while (m := special.search(text, j)) is not None:
            out.append(text[j : m.start()])
            j, c = m.start(), m[0]
            if c == "\n":
                if len(quote) == 1 and self._dialect != "lfm2":
                    stop = True
                    break
                out.append(c)
                j += 1
            elif c != "\\":
                if len(quote) == 1 or text.startswith(quote, j):
                    j += len(quote)
                    closed = True
                    break
                if quote_at(text, j) == "":
                    break  # "''" at the end: may close the string
                out.append(c)
                j += 1
            else:
                end = escape_end(text, j)
                if end is None:
                    break
                value = None if end < 0 else unescaped(text[j:end])
                if value is None:
                    stop = True
                    break
                out.append(value)
                j = end
        else:
            out.append(text[j:])
            j = len(text)
        piece = "".join(out)
        if piece:
            self._current().add_string(piece)
        self._i = j
        if stop:
            return self._stop()
        return self._to(j, _AFTER_STRING) if closed else False

    def _after_string(self, i: int) -> bool:
        """After a string's closing quote: another string glued to it, or the value's end."""
        text, c = self._text, self._text[i]
        if c in ",)":
            self._string_comma = c == ","
            if self._dialect == "lfm2":
                self._closing = True  # once what follows is the repair's end (module doc)
            else:
                self._close_string()
            return self._to(i + 1 if c == "," else i, _ARG)
        m = _PREFIX.match(text, i)
        assert m is not None
        j = m.end()
        if j == len(text):
            return False
        if text[j] not in "'\"" or m[0].lower() not in ("", "u") or self._dialect == "lfm2":
            return self._stop()
        quote = quote_at(text, j)
        if not quote:
            return False
        self._quote = quote
        return self._to(j + len(quote), _STRING)

    def _close_string(self) -> None:
        self._closing = False
        call = self._current()
        call.close_string()
        call.commit(self.calls)

    def _whole(self, i: int) -> bool:
        self._mark = i
        self._stack = []
        self._quote = ""
        return self._to(i, _GENERIC)

    def _generic(self) -> bool:
        """Find the end of a value read whole (its ``,`` or ``)``), then read it."""
        text, j, stack = self._text, self._i, self._stack
        while j < len(text):
            if self._quote:
                j = self._skip_string(j)
                if j < 0:
                    return self._stop()
                if self._quote:
                    break
                continue
            c = text[j]
            if c in "'\"":
                quote = quote_at(text, j)
                if not quote:
                    break
                raw = "r" in text[max(self._mark, j - 2) : j].lower()
                if self._dialect == "lfm2" and (raw or len(quote) == 3):
                    return self._stop()
                self._quote = quote
                j += len(quote)
            elif c in "([{":
                stack.append(")]}"["([{".index(c)])
                j += 1
            elif stack and c == stack[-1]:
                stack.pop()
                j += 1
            elif not stack and c in ",)":
                return self._value_read(j)
            elif c in ")]}#\\":
                return self._stop()
            else:
                j += 1
        self._i = j
        return False

    def _skip_string(self, j: int) -> int:
        """Past the string text from ``j`` (within a value read whole): where it resumes;
        :attr:`_quote` cleared once the string closed; -1: not followed."""
        text, quote = self._text, self._quote
        special = IN_STRING[quote[0]]
        while (m := special.search(text, j)) is not None:
            j, c = m.start(), m[0]
            if c == "\\":
                if j + 1 == len(text):
                    return j
                j += 2
            elif c == "\n":
                if len(quote) == 1 and self._dialect != "lfm2":
                    return -1
                j += 1
            elif len(quote) == 1 or text.startswith(quote, j):
                self._quote = ""
                return j + len(quote)
            elif quote_at(text, j) == "":
                return j
            else:
                j += 1
        return len(text)

    def _value_read(self, j: int) -> bool:
        """The value ``text[_mark:j]`` is whole: its JSON text joins the call's arguments."""
        value = read_value(self._text[self._mark : j], self._dialect)
        try:
            member = None if value is BAD_VALUE else member_text(self._key, value)
        except UnicodeEncodeError:  # a lone surrogate: no UTF-8 text holds it
            member = None
        if member is None:
            return self._stop()
        call = self._current()
        call.add_member(member)
        call.commit(self.calls)
        if self._text[j] == ",":
            return self._to(j + 1, _ARG)
        return self._to(j, _ARG)


def _accepts_list(body: str) -> bool | None:
    """A list whose first item begins with a name (LFM2's format also takes a JSON list:
    ``[{`` is the json kind's)."""
    if not body:
        return None
    if body[0] != "[":
        return False
    rest = body[1:].lstrip(_WS)
    return None if not rest else rest[0].isalpha() or rest[0] == "_"


def _accepts_pythonic(body: str) -> bool | None:
    return None if not body else body[0] == "["


def _accepts_lines(body: str) -> bool | None:
    return None if not body else body[0].isalpha() or body[0] == "_"


@partial_kind("pythonic", _accepts_pythonic)
def _pythonic(tools: Tools) -> PythonicCallsReader:
    return PythonicCallsReader("pythonic")


@partial_kind("lfm2", _accepts_list)
def _lfm2(tools: Tools) -> PythonicCallsReader:
    return PythonicCallsReader("lfm2")


@partial_kind("olmo3", _accepts_lines)
def _olmo3(tools: Tools) -> PythonicCallsReader:
    return PythonicCallsReader("olmo3")
