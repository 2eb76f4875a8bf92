"""Kind ``xml_nested``: MiniMax-M3's invokes, every tag led by its namespace token.

MiniMax-M3's chat_template.jinja writes a call block as
``]<]minimax[>[<tool_call>\\n`` then, per call, ``]<]minimax[>[<invoke name="NAME">``, one
element per argument ``]<]minimax[>[<KEY>VALUE]<]minimax[>[</KEY>`` and
``]<]minimax[>[</invoke>\\n``, and ``]<]minimax[>[</tool_call>``. A value is written
recursively (its ``to_xml`` macro): a mapping as one element per key, a list as
``<item>`` elements, a boolean as JSON, anything else as its text; ``None`` values are
left out. Every tag is led by the namespace token ``]<]minimax[>[`` (a special token of
its vocabulary), so a ``<`` in a value's text is text, and values need no escaping.

Reading rules:

- the body splits at the namespace token; each piece begins with one tag, the rest of
  the piece is text; tags must nest and close, else the body is not this kind;
- an element with child elements is a list when the schema says ``array`` (or, without
  a schema, when every child is ``<item>``), else an object; an element with only text is
  typed from its schema (:func:`.values.typed_value`), nested schemas followed through
  ``properties`` and ``items``; an empty element of an object / array schema is ``{}`` /
  ``[]``;
- text outside an argument's element (other than whitespace) is not this kind.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, dump_arguments
from reasonspan.runtime.toolcalls.sections import SPACE
from reasonspan.runtime.toolcalls.values import schema_types, typed_value

NS = "]<]minimax[>["
# What follows NS (a tag), shared with the streamed reader (partial_xml_nested).
TAG = re.compile(r'<(/?)([^<>\s/"]+)(?: name="([^"]*)")?>')


@dataclass
class Node:
    """One element of a call block, as :func:`parse_tree` reads it."""

    tag: str
    attr: str | None = None
    text: str = ""
    children: list[Node] = field(default_factory=list)


def parse_tree(body: str) -> Node | None:
    """The elements of ``body`` under an untagged root, or None when they do not nest; the
    streamed reader (partial_xml_nested) reads a closed value with it and :func:`node_value`."""
    pieces = body.split(NS)
    if pieces[0].strip(SPACE):
        return None
    root = Node("")
    stack = [root]
    for piece in pieces[1:]:
        m = TAG.match(piece)
        if m is None:
            return None
        closing, tag, attr = m.group(1), m.group(2), m.group(3)
        rest = piece[m.end() :]
        if closing:
            if len(stack) == 1 or stack[-1].tag != tag:
                return None
            stack.pop()
            if rest.strip(SPACE):
                return None  # text between elements
        else:
            node = Node(tag, attr, rest)
            stack[-1].children.append(node)
            stack.append(node)
    return root if len(stack) == 1 else None


def sub_schema(schema: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``schema[key]`` when it is a schema, else {} (shared with partial_xml_nested)."""
    got = schema.get(key)
    return got if isinstance(got, Mapping) else {}


class _Malformed(Exception):
    """Text mixed with elements: never written by the template."""


def node_value(node: Node, schema: Mapping[str, Any]) -> Any:
    """An element's value, typed by ``schema`` (module doc); raises :class:`_Malformed` on text
    mixed with elements. Shared with the streamed reader (partial_xml_nested)."""
    kinds = schema_types(schema)
    if not node.children:
        if not node.text.strip(SPACE) and "string" not in kinds:
            if "object" in kinds:
                return {}
            if "array" in kinds:
                return []
        return typed_value(node.text, schema)
    if node.text.strip(SPACE):
        raise _Malformed
    as_list = "array" in kinds if kinds else all(c.tag == "item" for c in node.children)
    if as_list:
        items = sub_schema(schema, "items")
        return [node_value(c, items) for c in node.children]
    props = sub_schema(schema, "properties")
    return {c.tag: node_value(c, sub_schema(props, c.tag)) for c in node.children}


@body_kind("xml_nested", markers=(NS,))
def parse_xml_nested(body: str, tools: Tools) -> list[ToolCall] | None:
    root = parse_tree(body)
    if root is None or not root.children:
        return None
    calls: list[ToolCall] = []
    for invoke in root.children:
        if invoke.tag != "invoke" or not invoke.attr or invoke.text.strip(SPACE):
            return None
        params = tools.parameters(invoke.attr)
        props = sub_schema(params, "properties")
        try:
            args = {c.tag: node_value(c, sub_schema(props, c.tag)) for c in invoke.children}
        except _Malformed:
            return None
        calls.append(ToolCall(name=invoke.attr, arguments=dump_arguments(args)))
    return calls
