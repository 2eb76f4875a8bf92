"""The reader of a ``response_template`` (transformers 5.13 on): named fields with literal
or regex delimiters and a content parser (see :mod:`.compile` for what is compiled). Its
own module: the newer of the two declaration formats shares nothing with the schema
reader but the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reasonspan.runtime.core.errors import DeclarationError
from reasonspan.runtime.core.spec import Trim
from reasonspan.runtime.declared.declaration import (
    REASONING_FIELDS,
    DeclaredFormat,
    check_delimiters,
    too_many_delimiters,
)
from reasonspan.runtime.declared.regex import (
    WHITESPACE,
    leading_literal,
    trailing_literal,
)

# transformers' content parsers (``CONTENT_PARSERS``); only ``json`` and ``xml-inline``
# bodies map onto a tool-call kind.
_CONTENT_PARSERS = frozenset({"text", "int", "float", "bool", "json", "xml-inline", "kv-lines"})


def _args(field: Mapping[str, Any]) -> Mapping[str, Any]:
    """A template field's ``content_args`` (a mapping, or none)."""
    args = field.get("content_args")
    return args if isinstance(args, Mapping) else {}


class TemplateReader:
    """A ``response_template`` (transformers 5.13+)."""

    def __init__(self, template: dict[str, Any], source: str) -> None:
        self.source = f"{source} response_template"
        fields = template.get("fields")
        self.fields: dict[str, Any] = fields if isinstance(fields, dict) else {}
        self.template = template

    def fail(self, prop: str, pattern: object, reason: str) -> DeclarationError:
        return DeclarationError(self.source, prop, pattern, reason)

    def delimiters(self, name: str, field: dict[str, Any], side: str) -> list[str]:
        """A field's ``open`` / ``close`` literals, or the literal its pattern is built on."""
        raw = field.get(side)
        if isinstance(raw, str):
            return [] if raw == "eos" else [raw]
        if isinstance(raw, list):
            too_many_delimiters(self.fail, f"{name}.{side}", raw)
        if isinstance(raw, list) and all(isinstance(r, str) for r in raw) and raw:
            return [r for r in raw if r != "eos"]
        if raw is not None:
            raise self.fail(f"{name}.{side}", raw, "expected a string or a list of strings")
        pattern = field.get(f"{side}_pattern")
        if pattern is None:
            return []
        prop = f"{name}.{side}_pattern"
        lit = (
            leading_literal(self.source, prop, pattern)
            if side == "open"
            else trailing_literal(self.source, prop, pattern)
        )
        if not lit:
            raise self.fail(prop, pattern, "no literal delimiter in the pattern")
        return [lit]

    def field(self, name: str) -> dict[str, Any]:
        node = self.fields.get(name)
        if node is None:
            return {}
        if not isinstance(node, dict):
            raise self.fail(name, node, "a field must be a JSON object")
        content = node.get("content", "text")
        if content not in _CONTENT_PARSERS:
            raise self.fail(
                f"{name}.content",
                content,
                f"content parser {content!r} is not one transformers defines "
                f"({', '.join(sorted(_CONTENT_PARSERS))})",
            )
        return node

    def read(self) -> DeclaredFormat:
        name = next((f for f in REASONING_FIELDS if f in self.fields), None)
        if name is None:
            raise self.fail(
                "fields", sorted(self.fields), f"no reasoning field ({REASONING_FIELDS})"
            )
        fields = {n: self.field(n) for n in self.fields}
        reasoning = fields[name]
        if reasoning.get("content", "text") != "text":
            raise self.fail(f"{name}.content", reasoning["content"], "reasoning must be text")
        start = self.delimiters(name, reasoning, "open")
        end = self.delimiters(name, reasoning, "close")
        if not start or not end:
            side = "open" if not start else "close"
            raise self.fail(name, reasoning, f"no literal {side} delimiter for {name}")
        tools = fields.get("tool_calls", {})
        tool = self.delimiters("tool_calls", tools, "open") if tools else []
        tool_close = self.delimiters("tool_calls", tools, "close") if tools else []
        content = fields.get("content", {})
        content_open = self.delimiters("content", content, "open") if content else []
        content_close = (
            self.delimiters("content", content, "close") if content and content_open else []
        )
        anchor = self.template.get("start_anchor")
        turn = [anchor] if isinstance(anchor, str) else anchor if isinstance(anchor, list) else []
        too_many_delimiters(self.fail, "start_anchor", turn)
        if turn == [] and (pat := self.template.get("start_anchor_pattern")) is not None:
            turn = [lit] if (lit := leading_literal(self.source, "start_anchor", pat)) else []
        turn = [t for t in turn if isinstance(t, str) and t]
        strip = _args(reasoning).get("strip", True)
        cstrip = _args(content).get("strip", True)
        check_delimiters(
            self.fail,
            "fields",
            [
                (f"{name}.open", start, True),
                (f"{name}.close", end, True),
                ("tool_calls.open", tool, True),
                ("tool_calls.close", tool_close, False),
                ("content.open", content_open, True),
                ("content.close", content_close, False),
                ("start_anchor", turn, True),
            ],
        )
        return DeclaredFormat(
            key="response_template",
            start=tuple(start),
            end=tuple(end),
            start_optional=False,
            reasoning_trim=Trim(lead=WHITESPACE, trail=WHITESPACE) if strip else Trim(),
            content_trim=Trim(lead=WHITESPACE) if cstrip else Trim(),
            tool=tuple(tool),
            tool_close=tuple(tool_close),
            tool_kinds=_template_kinds(tools),
            content_open=tuple(content_open),
            content_close=tuple(content_close),
            turn=tuple(turn),
        )


def _template_kinds(field: dict[str, Any]) -> tuple[str, ...]:
    if not field:
        return ()
    content = field.get("content", "text")
    transform = field.get("transform")
    if content == "json" and "open_pattern" not in field:
        wrapped = transform is None or (
            isinstance(transform, dict) and transform.get("function") == "{content}"
        )
        return ("json",) if wrapped else ()
    if content == "xml-inline":
        pattern = str(field.get("open_pattern", ""))
        tags = str(_args(field).get("tag_pattern", ""))
        if "<function=" in pattern and "<parameter=" in tags:
            return ("xml",)
    return ()
