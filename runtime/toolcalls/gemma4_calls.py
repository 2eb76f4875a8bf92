"""Kind ``gemma4``: ``call:NAME{key:value,…}``, Gemma 4's object notation.

Gemma 4's chat template (google/gemma-4-31B-it ``chat_template.jinja``, rendered into the
CanIToolCall fixtures) writes a call as ``<|tool_call>call:NAME{…}<tool_call|>``; this kind
reads the body between the markers:

- an object is ``{key:value,key:value}``: keys are bare text up to the ``:`` (they may hold
  spaces: ``Basic LLM Chain``), or quoted like strings;
- a string is delimited by the ``<|"|>`` token on both sides and holds any text verbatim
  (``,``, ``}``, quotes, newlines, even ``<tool_call|>``: no escapes);
- objects and arrays (``[v,v]``) nest; spaces after ``,`` and ``:`` are layout;
- any other value is bare text up to the next ``,`` / ``}`` / ``]`` (``42``, ``1e-05``,
  ``true``, ``null``), typed from the offered tool's JSON Schema (the property's schema,
  followed into ``properties`` and ``items`` for nested values) by
  :func:`~reasonspan.runtime.toolcalls.values.typed_value`; untyped, JSON numbers, booleans
  and ``null`` read as such and anything else stays text.

A body that does not read this way (no ``{…}`` after the name, text after the object, an
unterminated string) is not this kind: the region goes back to the content verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, dump_arguments
from reasonspan.runtime.toolcalls.sections import SPACE, skip_space
from reasonspan.runtime.toolcalls.values import typed_value

QUOTE = '<|"|>'
PREFIX = "call:"

_NAME = re.compile(r"[^\s{}\[\]:,]+")
_EMPTY: Mapping[str, Any] = {}


class NotThisKind(Exception):
    """The body is not Gemma 4 object notation."""


class ValueReader:
    """Reads Gemma 4 object notation from ``text[i]`` on (``partial_gemma4`` reads a
    member's value with it too)."""

    __slots__ = ("i", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def skip(self) -> None:
        self.i = skip_space(self.text, self.i)

    def peek(self) -> str:
        self.skip()
        return self.text[self.i : self.i + 1]

    def expect(self, ch: str) -> None:
        if self.peek() != ch:
            raise NotThisKind(ch)
        self.i += 1

    def string(self) -> str:
        start = self.i + len(QUOTE)
        end = self.text.find(QUOTE, start)
        if end < 0:
            raise NotThisKind("unterminated string")
        self.i = end + len(QUOTE)
        return self.text[start:end]

    def value(self, schema: Mapping[str, Any]) -> Any:
        self.skip()
        text = self.text
        if text.startswith(QUOTE, self.i):
            return self.string()
        ch = text[self.i : self.i + 1]
        if ch == "{":
            return self.obj(schema)
        if ch == "[":
            return self.array(schema)
        start = self.i
        while self.i < len(text) and text[self.i] not in ",}]":
            if text.startswith(QUOTE, self.i):
                raise NotThisKind("quote inside a bare value")
            self.i += 1
        bare = text[start : self.i].strip(SPACE)
        if not bare:
            raise NotThisKind("empty value")
        return typed_value(bare, schema or None)

    def obj(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        self.expect("{")
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else _EMPTY
        out: dict[str, Any] = {}
        if self.peek() == "}":
            self.i += 1
            return out
        while True:
            self.skip()
            if self.text.startswith(QUOTE, self.i):
                key = self.string()
                self.expect(":")
            else:
                colon = self.text.find(":", self.i)
                if colon < 0:
                    raise NotThisKind("key without ':'")
                key = self.text[self.i : colon].strip(SPACE)
                if not key or any(c in key for c in "{}[],") or QUOTE in key:
                    raise NotThisKind("bad key")
                self.i = colon + 1
            sub = props.get(key)
            out[key] = self.value(sub if isinstance(sub, Mapping) else _EMPTY)
            ch = self.peek()
            self.i += 1
            if ch == "}":
                return out
            if ch != ",":
                raise NotThisKind("expected ',' or '}'")

    def array(self, schema: Mapping[str, Any]) -> list[Any]:
        self.expect("[")
        items = schema.get("items")
        item_schema = items if isinstance(items, Mapping) else _EMPTY
        out: list[Any] = []
        if self.peek() == "]":
            self.i += 1
            return out
        while True:
            out.append(self.value(item_schema))
            ch = self.peek()
            self.i += 1
            if ch == "]":
                return out
            if ch != ",":
                raise NotThisKind("expected ',' or ']'")


def name_ok(name: str) -> bool:
    """A function name as Gemma 4 writes it after ``call:``."""
    return bool(_NAME.fullmatch(name))


@body_kind("gemma4", markers=(QUOTE, PREFIX))
def parse_gemma4(body: str, tools: Tools) -> list[ToolCall] | None:
    text = body.strip(SPACE)
    if not text.startswith(PREFIX):
        return None
    brace = text.find("{")
    if brace < 0:
        return None
    name = text[len(PREFIX) : brace].strip(SPACE)
    if not name_ok(name):
        return None
    reader = ValueReader(text)
    reader.i = brace
    try:
        args = reader.obj(tools.parameters(name))
    except NotThisKind:
        return None
    if reader.peek():
        return None  # text after the call's object
    return [ToolCall(name=name, arguments=dump_arguments(args))]
