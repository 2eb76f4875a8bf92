"""Kind ``xml_nested`` (MiniMax-M3's invokes, every tag led by the namespace token) read
while its region is open (``partial.py``).

The reading rules are :mod:`.xml_nested`' (its tag pattern, tree and value typing: a
tag follows each namespace token, the text up to the next token belongs to the element
just opened, an argument's element is typed from its schema, nested ones as objects or
lists), applied as the text arrives: an argument is decided when its element closes, and
its JSON text is then sent (read with the whole reader's tree and typing; a call commits
with its first; one with no argument when its invoke closes). After the first, an
argument whose schema allows only ``string`` (the whole read then keeps its text as it
is, whitespace included) is streamed as it is written, JSON-escaped, less a trailing
piece of the namespace token, once its text holds more than whitespace (only whitespace
may still turn out to lead child elements, an object).

After commit, what the whole read refuses (text between elements, tags that do not nest,
child elements after a streamed text, a value JSON cannot hold) makes the call broken; a
repeated argument (the whole read keeps its last value) or a tag the reader cannot place
stop it without judging the call: the whole read decides at the close
(``region_calls``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls import xml_nested
from reasonspan.runtime.toolcalls.partial import PartialCall, opens_with, partial_kind
from reasonspan.runtime.toolcalls.partial_members import (
    LOOK,
    MemberReader,
    held_back,
    member_text,
    string_only,
)
from reasonspan.runtime.toolcalls.sections import SPACE
from reasonspan.runtime.toolcalls.xml_nested import NS

_ROOT, _CALL, _LEAF, _TREE = range(4)
_WAIT = "wait"


class XmlNestedCallsReader(MemberReader):
    """The partial reader of kind ``xml_nested`` (module doc): its calls one after another."""

    __slots__ = ("_head", "_props", "_schema", "_stack", "_value_at")

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, _ROOT)
        self._head = False
        """A streamed argument: its key was sent (its text holds more than whitespace)."""
        self._value_at = 0
        """A streamed argument: its text's offset from :attr:`_start`."""
        self._stack: list[str] = []
        """An argument kept aside: the tags open in it."""
        self._props: Mapping[str, Any] = {}
        self._schema: Mapping[str, Any] = {}

    def _in_value(self) -> bool | None:
        return None if self._state in (_ROOT, _CALL) else self._streamed

    def _tag_at(self, j: int) -> re.Match[str] | str | None:
        """The tag after a namespace token that ends at ``j``; :data:`_WAIT` while the text
        may still be one; None: it is not."""
        text = self._text
        m = xml_nested.TAG.match(text, j)
        if m is not None:
            return None if NS in text[j : m.end()] else m
        if NS in text[j:] or len(text) - j >= LOOK:
            return None
        return _WAIT

    def _tag_after(self, p: int) -> re.Match[str] | None:
        """The tag after the namespace token at ``p``; None: reading waits at ``p`` (the
        tag may still come, else the reader gave up)."""
        m = self._tag_at(p + len(NS))
        if isinstance(m, re.Match):
            return m
        self._i = p
        if m != _WAIT:
            self._give_up()
        return None

    def _step(self) -> bool:
        if self._state == _LEAF:
            return self._leaf()
        if self._state == _TREE:
            return self._tree()
        text, i = self._text, self._i
        p = text.find(NS, i)
        gap = text[i:] if p < 0 else text[i:p]
        rest = gap.lstrip(SPACE)
        if rest and (p >= 0 or not NS.startswith(rest)):
            return self._stop()  # text between elements: the whole read refuses
        if p < 0:
            self._i = len(text) - len(rest)
            return False
        m = self._tag_after(p)
        if m is None:
            return False
        self._i = m.end()
        if self._state == _ROOT:
            if m[1] or m[2] != "invoke" or not m[3]:
                return self._give_up()  # the whole read refuses the block
            self._call, self._keys = PartialCall(name=m[3]), set()
            self._props = xml_nested.sub_schema(self._tools.parameters(m[3]), "properties")
            self._state = _CALL
            return True
        if m[1]:
            return self._call_closed(_ROOT) if m[2] == "invoke" else self._stop()
        return self._argument(m[2], p, m.end() - p)

    def _argument(self, key: str, start: int, tag: int) -> bool:
        """An argument's element opened at ``start`` (its tag ``tag`` characters long)."""
        call = self._call
        assert call is not None
        if key in self._keys:
            return self._give_up()  # the whole read keeps the last value
        self._schema = xml_nested.sub_schema(self._props, key)
        streamed = call.committed and string_only(self._schema)
        # Opened as kept aside: a streamed argument's key is sent once its text holds more
        # than whitespace (_stream).
        self._open_value(key, False, _LEAF if streamed else _TREE, start)
        self._streamed = streamed
        self._value_at, self._head = tag, False
        self._stack = [key]
        return True

    def _leaf(self) -> bool:
        """A streamed argument's text, up to the next namespace token."""
        text = self._text
        p = text.find(NS, self._i)
        if p < 0:
            self._i = held_back(text, self._i, NS)
            self._stream(self._i)
            return False
        m = self._tag_after(p)
        if m is None:
            self._stream(p)
            return False
        if m[1] and m[2] == self._key:
            self._stream(p, True)
            self._i, self._state = m.end(), _CALL
            return True
        if m[1] or self._head:
            return self._stop()  # a tag that does not nest, or elements after text
        self._streamed = False  # only whitespace so far: an object, kept aside
        self._stack.append(m[2])
        self._i, self._state = m.end(), _TREE
        return True

    def _stream(self, stop: int, last: bool = False) -> None:
        """Send the argument's text up to ``stop`` (the key first, once the text holds more
        than whitespace; ``last``: the text ends there)."""
        call = self._call
        assert call is not None
        if not self._head:
            begin = self._start + self._value_at
            if not last and not self._text[begin:stop].strip(SPACE):
                return
            call.open_string(self._key)
            self._emit, self._head = begin, True
        piece = self._text[self._emit : stop]
        if last:
            call.close_string(piece)
        else:
            call.add_string(piece)
        self._emit = stop

    def _tree(self) -> bool:
        """An argument kept aside: its tags followed until its element closes."""
        text = self._text
        p = text.find(NS, self._i)
        if p < 0:
            self._i = max(self._i, len(text) - len(NS) + 1)
            return False
        m = self._tag_after(p)
        if m is None:
            return False
        self._i = m.end()
        if not m[1]:
            self._stack.append(m[2])
            return True
        if self._stack.pop() != m[2]:
            return self._stop()  # tags that do not nest
        return True if self._stack else self._decided()

    def _decided(self) -> bool:
        """The argument's element closed at :attr:`_i`: its value, read as the whole read
        reads it, is sent."""
        call = self._call
        assert call is not None
        raw = "".join(self._parts) + self._text[self._start : self._i]
        root = xml_nested.parse_tree(raw)
        member = None
        if root is not None and len(root.children) == 1:
            try:
                value = xml_nested.node_value(root.children[0], self._schema)
                member = member_text(self._key, value)
            except Exception:  # _Malformed, a lone surrogate, nesting past the recursion
                member = None  # limit: the whole read refuses the block too (_guarded)
        if member is None:
            return self._stop()
        self._send(member)
        self._state = _CALL
        return True


@partial_kind("xml_nested", opens_with(NS))
def _reader(tools: Tools) -> XmlNestedCallsReader:
    return XmlNestedCallsReader(tools)
