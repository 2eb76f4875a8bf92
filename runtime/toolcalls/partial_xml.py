"""Kinds ``xml`` and ``xml_invoke`` read while their region is open (``partial.py``).

The reading rules are :mod:`.xml_calls`' (where a value ends, the template's layout
newlines, values typed from the tool's schema), applied as the text arrives:

- a parameter's value is decided when the text shows where it ends (the first
  ``</parameter>`` followed by the next parameter or the function close, or a line that
  begins one); its JSON text (``"key":value``) is then known, and the call commits after
  its first parameter;
- after that, a parameter whose schema says it is a string (and nothing else) is streamed
  as it is written: every character the text has shown is not the value's end, less one
  trailing newline (the template's layout, if the value ends right after it); other values
  are sent once decided (``"42"`` is a number only once it is whole);
- a ``</parameter>`` followed by other markup (``</tool_call>``, which ends the region when
  the output ends there) is not decided until the region is: the value waits.

The whole read refuses a body with stray text or an empty key anywhere; a committed call
is then broken, and nothing after it is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls.partial import PartialCall, partial_kind
from reasonspan.runtime.toolcalls.partial_members import (
    WINDOW,
    held_back,
    member_text,
    string_only,
)
from reasonspan.runtime.toolcalls.sections import skip_space
from reasonspan.runtime.toolcalls.values import typed_value

_WAIT, _NO = "\0wait", "\0no"


@dataclass(frozen=True)
class _Spelling:
    """How a kind spells its tags (the same shapes as ``xml_calls.XmlShape``'s regexes:
    ``<function=NAME>`` is ``lead`` + a name without ``end`` or a newline + ``end``)."""

    function: tuple[str, str]
    parameter: tuple[str, str]
    function_close: str
    parameter_close: str


_QWEN = _Spelling(("<function=", ">"), ("<parameter=", ">"), "</function>", "</parameter>")
_MINIMAX = _Spelling(
    ('<invoke name="', '">'), ('<parameter name="', '">'), "</invoke>", "</parameter>"
)


def _tag(text: str, i: int, tag: tuple[str, str]) -> tuple[str, int] | str:
    """The name of the tag at ``i`` and where it ends; :data:`_WAIT` when the text so far
    may still begin one; :data:`_NO` when it cannot."""
    lead, end = tag
    rest = text[i : i + len(lead)]
    if len(rest) < len(lead):
        return _WAIT if lead.startswith(rest) else _NO
    if rest != lead:
        return _NO
    start = i + len(lead)
    at = text.find(end[0], start, start + _NAME_MAX)
    line = text.find("\n", start, start + _NAME_MAX)
    if line >= 0 and (at < 0 or line < at):
        return _NO
    if at < 0:
        return _WAIT if len(text) - start < _NAME_MAX else _NO
    if at == start:
        return _NO
    tail = text[at : at + len(end)]
    if tail != end:
        return _WAIT if end.startswith(tail) else _NO
    return text[start:at].strip(), at + len(end)


def _starts(text: str, i: int, literal: str) -> str | bool:
    """Does ``literal`` begin at ``i``: True, False, or :data:`_WAIT`."""
    rest = text[i : i + len(literal)]
    if len(rest) < len(literal):
        return _WAIT if literal.startswith(rest) else False
    return rest == literal


_NAME_MAX = 256
"""Characters a function or parameter name may have here: a longer one is not followed
(the whole read decides), rather than searched again with every piece of text."""


@dataclass
class _Value:
    """The parameter being read (positions in the reader's text)."""

    key: str
    start: int
    scan: int
    streamed: bool
    emit: int = -1
    """Streamed: where the text not sent yet begins (-1: nothing sent, the value's first
    character not known yet)."""
    parts: list[str] = field(default_factory=list)
    """Not streamed: the value's text already dropped from the reader's text."""


class XmlCallsReader:
    """The partial reader of kinds ``xml`` and ``xml_invoke`` (module doc)."""

    __slots__ = ("_call", "_i", "_keys", "_spell", "_text", "_tools", "_value", "calls", "done")

    def __init__(self, tools: Tools, spelling: _Spelling) -> None:
        self.calls: list[PartialCall] = []
        self._tools = tools
        self._spell = spelling
        self._text = ""
        self._i = 0
        """Where reading goes on."""
        self._call: PartialCall | None = None
        self._keys: set[str] = set()
        self._value: _Value | None = None
        self.done = False

    def feed(self, text: str) -> None:
        if self.done:
            return
        self._text += text
        while not self.done:
            if self._value is not None:
                progressed = self._in_value(self._value)
            elif self._call is not None:
                progressed = self._in_function(self._call)
            else:
                progressed = self._between()
            if not progressed:
                break
        self._compact()

    def _compact(self) -> None:
        """Drop the text read past (a long value's: kept aside when it is not streamed), so
        a call of any length costs each character a bounded number of times."""
        v = self._value
        if v is None:
            keep = self._i
        elif v.streamed:
            keep = min(v.scan, v.emit if v.emit >= 0 else v.start)
        else:
            keep = v.scan
        if keep < WINDOW:
            return
        if v is not None:
            if not v.streamed:
                v.parts.append(self._text[v.start : keep])
                v.start = keep
            v.start -= keep
            v.scan -= keep
            if v.emit >= 0:
                v.emit -= keep
        self._text = self._text[keep:]
        self._i -= keep

    def _stop(self) -> bool:
        """Text the whole read refuses: a committed call is broken; nothing more."""
        if self._call is not None and self._call.committed:
            self._call.broken = True
        self.done = True
        return False

    # ------------------------------------------------------------------ tags

    def _skip(self) -> int:
        return skip_space(self._text, self._i)

    def _between(self) -> bool:
        i = self._skip()
        if i >= len(self._text):
            return False
        got = _tag(self._text, i, self._spell.function)
        if got is _WAIT:
            return False
        if isinstance(got, str) or not got[0]:
            self.done = True  # not a function: the whole read decides what it is
            return False
        self._call = PartialCall(name=got[0])
        self._keys = set()
        self._i = got[1]
        return True

    def _in_function(self, call: PartialCall) -> bool:
        i = self._skip()
        text = self._text
        if i >= len(text):
            return False
        closed = _starts(text, i, self._spell.function_close)
        if closed is True:
            call.close(self.calls)
            self._call = None
            self._i = i + len(self._spell.function_close)
            return True
        got = _tag(text, i, self._spell.parameter)
        if got is _WAIT or (closed is _WAIT and got is _NO):
            return False
        if isinstance(got, str) or not got[0] or got[0] in self._keys:
            return self._stop()  # stray text, an empty key; a repeated one
        key = got[0]
        self._keys.add(key)
        streamed = call.committed and string_only(self._tools.property_schema(call.name, key))
        self._value = _Value(key, got[1], got[1], streamed)
        if streamed:
            call.open_string(key)
        self._i = got[1]
        return True

    # ------------------------------------------------------------------ values

    def _in_value(self, value: _Value) -> bool:
        end = self._value_end(value)
        if end is None:
            if value.streamed:
                self._stream(value)
            return False
        stop, resume = end
        call = self._call
        assert call is not None
        text = self._text
        if value.streamed:
            lead = value.emit if value.emit >= 0 else _lead(text, value.start, stop)
            tail = stop - 1 if stop - 1 >= lead and text[stop - 1] == "\n" else stop
            call.close_string(text[lead:tail])
        else:
            raw = "".join(value.parts) + text[value.start : stop]
            if raw.startswith("\n"):
                raw = raw[1:]
            if raw.endswith("\n"):
                raw = raw[:-1]
            typed = typed_value(raw, self._tools.property_schema(call.name, value.key))
            got = member_text(value.key, typed)
            if got is None:
                return self._stop()
            call.add_member(got)
            call.commit(self.calls)
        self._value = None
        self._i = resume
        return True

    def _stream(self, value: _Value) -> None:
        """Send the value's characters the text has shown are not its end."""
        call = self._call
        assert call is not None
        text = self._text
        if value.emit < 0:
            if len(text) <= value.start:
                return
            value.emit = _lead(text, value.start, len(text))
        end = value.scan
        if end - 1 >= value.emit and text[end - 1] == "\n":
            end -= 1  # the layout newline, if the value ends right after it
        if end > value.emit:
            call.add_string(text[value.emit : end])
            value.emit = end

    def _value_end(self, value: _Value) -> tuple[int, int] | None:
        """``(end of the value, where reading goes on)`` once the text decides it; else
        None, with ``value.scan`` moved to the first place not decided yet."""
        text = self._text
        close = self._spell.parameter_close
        while True:
            line = text.find("\n", value.scan)
            at = text.find(close, value.scan)
            if at < 0:
                at = held_back(text, value.scan, close)  # (a close the text cuts waits there)
                if at == len(text):
                    at = -1
                else:
                    value.scan = min(at, line) if line >= 0 else at
                    if line < 0 or at < line:
                        return None
            if line >= 0 and (at < 0 or line < at):
                verdict = self._after(line + 1)
                if verdict is True:
                    return line + 1, line + 1
                if verdict is _WAIT:
                    value.scan = line
                    return None
                value.scan = line + 1
                continue
            if at < 0:
                value.scan = len(text)
                return None
            verdict = self._after(at + len(close), strict=True)
            if verdict is True:
                return at, at + len(close)
            if verdict is _WAIT:
                value.scan = at
                return None
            value.scan = at + 1

    def _after(self, i: int, strict: bool = False) -> bool | str:
        """Does the next parameter or the function close begin at ``i`` (after space,
        when ``strict``: right after a ``</parameter>``)? :data:`_WAIT`: not known yet.
        After a ``</parameter>``, the end of the text so far and any other markup wait
        (the end of the body, or a region close marker, would end the value there)."""
        text = self._text
        if strict:
            i = skip_space(text, i)
            if i >= len(text) or text[i] == "<":
                pass
            else:
                return False
        if i >= len(text):
            return _WAIT
        closed = _starts(text, i, self._spell.function_close)
        if closed is True:
            return True
        got = _tag(text, i, self._spell.parameter)
        if isinstance(got, tuple):
            return True
        if got is _WAIT or closed is _WAIT or strict:
            return _WAIT
        return False


def _lead(text: str, start: int, stop: int) -> int:
    """Where a value beginning at ``start`` begins after the template's layout newline."""
    return start + 1 if start < stop and text[start] == "\n" else start


def _accepts_qwen(body: str) -> bool | None:
    return _accepts(body, _QWEN)


def _accepts_minimax(body: str) -> bool | None:
    return _accepts(body, _MINIMAX)


def _accepts(body: str, spelling: _Spelling) -> bool | None:
    got = _tag(body, 0, spelling.function)
    return None if got is _WAIT else not isinstance(got, str)


@partial_kind("xml", _accepts_qwen)
def _qwen_reader(tools: Tools) -> XmlCallsReader:
    return XmlCallsReader(tools, _QWEN)


@partial_kind("xml_invoke", _accepts_minimax)
def _minimax_reader(tools: Tools) -> XmlCallsReader:
    return XmlCallsReader(tools, _MINIMAX)
