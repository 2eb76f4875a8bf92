"""Kind ``steptml`` (Step-3's section of StepTML invocations) read while its region is open
(``partial.py``).

The reading rules are :mod:`.steptml_calls`' (its tag patterns and markers; a value runs
to the first ``</steptml:parameter>`` that the next parameter or the invocation's close
follows, is stripped, and is typed from the tool's schema), applied as the text arrives: a
value is decided once what follows its closer is known, and its JSON text is then sent (a
call commits with its first; one with no parameter when its call-end marker comes). After
the first, a value whose schema allows only ``string`` (the whole read then keeps the text
itself) is streamed as it is written, JSON-escaped, less its leading whitespace and what
may still be trailing whitespace or a closer that ends it.

The whole read drops a call that does not read and keeps its siblings: a first value JSON
cannot hold never commits its call, and the reader stops there (the whole read sends the
siblings at the close). After commit, a value JSON cannot hold or an invocation not
followed by its call-end marker make the call broken; a repeated parameter (the whole read
keeps its last value) or a tag the reader cannot place stop it without judging the call:
the whole read decides at the close (``region_calls``).
"""

from __future__ import annotations

import re

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls import steptml_calls
from reasonspan.runtime.toolcalls.partial import PartialCall, opens_with, partial_kind
from reasonspan.runtime.toolcalls.partial_members import (
    LOOK,
    MemberReader,
    closer_followed,
    string_only,
)
from reasonspan.runtime.toolcalls.sections import skip_space
from reasonspan.runtime.toolcalls.values import typed_value

_GAP, _HEAD, _INVOKE, _PARAM, _END, _VALUE = range(6)
_INVOKE_OPEN = '<steptml:invoke name="'
_PARAM_OPEN = '<steptml:parameter name="'
_NAME = re.compile(r'[^"\n]*')


def _begins(rest: str, opener: str) -> bool:
    """Does ``rest`` begin ``opener`` (or the opener begin it)?"""
    return rest[: len(opener)] == opener[: len(rest)]


def _param_may_follow(rest: str) -> bool | None:
    """``rest`` against a parameter tag (``steptml_calls.PARAM``): True: it is one; None:
    it may still be; False: it is not."""
    if len(rest) <= len(_PARAM_OPEN):
        return None if _PARAM_OPEN.startswith(rest) else False
    if not rest.startswith(_PARAM_OPEN):
        return False
    name = _NAME.match(rest, len(_PARAM_OPEN))
    assert name is not None
    at = name.end()
    if at == len(rest):
        return None
    if rest[at] != '"' or at == len(_PARAM_OPEN):
        return False
    return None if at + 1 == len(rest) else rest[at + 1] == ">"


def _follows(text: str, at: int) -> bool | None:
    """Does the next parameter or the invocation's close follow a closer that ends at
    ``at`` (``steptml_calls._value_end``)? None: the text so far cannot tell."""
    rest = text[skip_space(text, at) :]
    if rest.startswith(steptml_calls.INVOKE_END):
        return True
    if steptml_calls.INVOKE_END.startswith(rest):
        return None
    return _param_may_follow(rest)


class StepTmlCallsReader(MemberReader):
    """The partial reader of kind ``steptml`` (module doc): its calls one after another."""

    __slots__ = ("_begun",)
    _value_state = _VALUE

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, _GAP)
        self._begun = False
        """A streamed value: its first non-whitespace character was sent."""

    def _wait(self, *openers: str) -> bool:
        """The text at :attr:`_i` read no further: wait while it may still begin one of
        ``openers`` within :data:`.partial_members.LOOK` characters, else give up."""
        text = self._text
        rest = text[skip_space(text, self._i) :]
        if len(text) - self._i < LOOK and any(_begins(rest, o) for o in openers):
            return False
        return self._give_up()

    def _step(self) -> bool:
        text = self._text
        if self._state == _VALUE:
            return self._value()
        if self._state == _HEAD:
            return self._head()
        j = skip_space(text, self._i)
        if self._state == _GAP:
            if not text.startswith(steptml_calls.CALL_BEGIN, j):
                return self._wait(steptml_calls.CALL_BEGIN)
            self._i, self._state = j + len(steptml_calls.CALL_BEGIN), _HEAD
            return True
        if self._state == _INVOKE:
            m = steptml_calls.INVOKE.match(text, j)
            if m is None:
                return self._wait(_INVOKE_OPEN)
            name = m[1].strip()
            if not name:
                return self._give_up()  # the whole read drops the call
            self._call, self._keys = PartialCall(name=name), set()
            self._i, self._state = m.end(), _PARAM
            return True
        if self._state == _END:
            if text.startswith(steptml_calls.CALL_END, j):
                self._i = j + len(steptml_calls.CALL_END)
                return self._call_closed(_GAP)
            if steptml_calls.CALL_END.startswith(text[j:]):
                return False
            return self._stop()  # the whole read drops the call
        if text.startswith(steptml_calls.INVOKE_END, j):
            self._i, self._state = j + len(steptml_calls.INVOKE_END), _END
            return True
        m = steptml_calls.PARAM.match(text, j)
        if m is None:
            return self._wait(steptml_calls.INVOKE_END, _PARAM_OPEN)
        self._i = m.end()
        return self._parameter(m[1].strip())

    def _head(self) -> bool:
        """``function<｜tool_sep｜>`` after the call-begin marker."""
        sep = self._text.find(steptml_calls.SEP, self._i)
        if sep < 0:  # any head, within the look
            return False if len(self._text) - self._i < LOOK else self._give_up()
        if self._text[self._i : sep].strip() != "function":
            return self._give_up()  # the whole read drops the call
        self._i, self._state = sep + len(steptml_calls.SEP), _INVOKE
        return True

    def _parameter(self, key: str) -> bool:
        call = self._call
        assert call is not None
        if key in self._keys:
            return self._give_up()  # the whole read keeps the last value
        self._begun = False
        self._open_value(key, string_only(self._tools.property_schema(call.name, key)), _VALUE)
        return True

    def _value(self) -> bool:
        closer = steptml_calls.PARAM_END
        undecided, decided = closer_followed(self._text, self._i, closer, _follows)
        if decided:
            return self._decided(undecided, undecided + len(closer))
        self._i = max(self._start, undecided)
        if self._streamed:
            self._stream(undecided)
        return False

    def _stream(self, undecided: int) -> None:
        """Send the value's text up to ``undecided``, less leading whitespace and what may
        be trailing whitespace (the whole read strips the value)."""
        part = self._text[self._emit : undecided]
        if not self._begun:
            lead = len(part) - len(part.lstrip())
            self._emit += lead
            part = part[lead:]
            self._begun = bool(part)
        part = part.rstrip()
        if part:
            assert self._call is not None
            self._call.add_string(part)
            self._emit += len(part)

    def _decided(self, stop: int, resume: int) -> bool:
        """The value ends at ``stop``; reading goes on at ``resume``."""
        call = self._call
        assert call is not None
        if self._streamed:  # (less what the whole read strips)
            rest = self._text[self._emit : stop]
            self._i = resume
            call.close_string(rest.rstrip() if self._begun else rest.strip())
        else:
            schema = self._tools.property_schema(call.name, self._key)
            # Any exception (a lone surrogate, JSON nested past the recursion limit) is a
            # value not read: the whole read raises too, and reads nothing (_guarded).
            if not self._value_ends(
                stop, resume, lambda raw: typed_value(raw.strip(), schema), Exception
            ):
                return self._stop() if call.committed else self._give_up()
        self._state = _PARAM
        return True


@partial_kind("steptml", opens_with(steptml_calls.CALL_BEGIN))
def _reader(tools: Tools) -> StepTmlCallsReader:
    return StepTmlCallsReader(tools)
