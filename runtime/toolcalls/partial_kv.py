"""Kind ``kv`` (GLM's ``NAME<arg_key>K</arg_key><arg_value>V</arg_value>…``) read while its
region is open (``partial.py``).

The reading rules are :mod:`.kv_calls`' (the name before the first key; a value ends at the
first ``</arg_value>`` followed by the next key or the end of the body; values typed from
the tool's schema), applied as the text arrives: a value is decided when a
``</arg_value>`` is followed by the next ``<arg_key>``; the last one only when the region
closes (the end of the body decides it), so the call commits after its first pair when it
has several, and a one-pair call is sent whole. After the first pair, a string-typed value
is streamed as it is written, less what may still be its end: a trailing ``</arg_value>``
and the space after it, a trailing tag (``</tool_call>`` taken for argument text, which
ends the body if the output ends right after it), one trailing newline (the layout a
missing ``</arg_value>`` leaves).
"""

from __future__ import annotations

import re

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls.partial import PartialCall, partial_kind
from reasonspan.runtime.toolcalls.partial_members import MemberReader, string_only
from reasonspan.runtime.toolcalls.sections import SPACE, skip_space
from reasonspan.runtime.toolcalls.values import typed_value

_KEY, _KEY_END = "<arg_key>", "</arg_key>"
_VALUE, _VALUE_END = "<arg_value>", "</arg_value>"
_TRAILING_TAG = re.compile(r"</?[A-Za-z_:|]*>?\Z")
_NAME, _PAIR, _IN_VALUE = range(3)
_NAME_MAX = 256
"""Characters the function name and the space around it may have here: more is not
followed (the whole read decides), rather than searched again with every piece of text."""
_TAG_MAX = 64
"""How far back from the end of the text a trailing tag is looked for."""


class KvCallReader(MemberReader):
    """The partial reader of kind ``kv`` (module doc): one call per region."""

    __slots__ = ()
    _value_state = _IN_VALUE

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, _NAME)

    def _step(self) -> bool:
        text = self._text
        if self._state == _NAME:
            at = text.find(_KEY, 0, _NAME_MAX)
            if at < 0:
                if len(text) >= _NAME_MAX:
                    self.done = True  # no name this short: the whole read decides
                return False  # a call with no pair is sent whole, at the close
            head = text[:at].strip(SPACE)
            if not head or "<" in head or any(c in head for c in SPACE):
                self.done = True  # not this kind's call: the whole read decides
                return False
            self._call = PartialCall(name=head)
            self._i, self._state = at, _PAIR
            return True
        if self._state == _PAIR:
            return self._pair(text)
        return self._value(text)

    def _pair(self, text: str) -> bool:
        i = skip_space(text, self._i)
        rest = text[i : i + len(_KEY)]
        if len(rest) < len(_KEY):
            return False if _KEY.startswith(rest) else self._stop()
        if rest != _KEY:
            return self._stop()
        k_end = text.find(_KEY_END, i)
        if k_end < 0:
            return False
        key = text[i + len(_KEY) : k_end].strip(SPACE)
        j = skip_space(text, k_end + len(_KEY_END))
        head = text[j : j + len(_VALUE)]
        if len(head) < len(_VALUE):
            return False if _VALUE.startswith(head) else self._stop()
        call = self._call
        assert call is not None
        if head != _VALUE or not key or key in self._keys:
            return self._stop()  # malformed; or a repeated key (the whole read keeps the last)
        self._i = j + len(_VALUE)
        self._open_value(key, string_only(self._tools.property_schema(call.name, key)), _IN_VALUE)
        return True

    def _value(self, text: str) -> bool:
        call = self._call
        assert call is not None
        at = text.find(_VALUE_END, self._i)
        while at >= 0:
            j = skip_space(text, at + len(_VALUE_END))
            rest = text[j:]
            if rest.startswith(_KEY):
                return self._decided(at, j)
            if _KEY.startswith(rest) or _TRAILING_TAG.fullmatch(rest):
                # The end of the text so far, the next key beginning, or a tag that ends
                # the body if the output ends right after it: wait.
                break
            at = text.find(_VALUE_END, at + 1)
        undecided = len(text) if at < 0 else at
        if at < 0:
            cut = text.rfind("<", max(self._start, len(text) - _TAG_MAX))
            if cut >= 0 and _TRAILING_TAG.match(text, cut):
                undecided = cut
        self._i = max(self._start, undecided - len(_VALUE_END))
        if self._streamed:
            end = undecided
            if end - 1 >= self._emit and text[end - 1] == "\n":
                end -= 1  # the layout a missing </arg_value> leaves, if the body ends here
            if end > self._emit:
                call.add_string(text[self._emit : end])
                self._emit = end
        return False

    def _decided(self, stop: int, resume: int) -> bool:
        """The value ends at ``stop``; reading goes on at ``resume`` (the next key)."""
        call = self._call
        assert call is not None
        schema = self._tools.property_schema(call.name, self._key)
        if not self._value_ends(stop, resume, lambda raw: typed_value(raw, schema), ()):
            return self._stop()
        self._state = _PAIR
        return True


def _accepts(body: str) -> bool | None:
    """GLM's body begins with the function name: any text that is not JSON or markup."""
    if not body:
        return None
    return body[0] not in "{[<"


@partial_kind("kv", _accepts)
def _reader(tools: Tools) -> KvCallReader:
    return KvCallReader(tools)
