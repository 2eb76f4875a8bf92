"""The reader of a ``response_schema`` (transformers 5.0–5.12): a JSON schema whose
``x-regex`` annotations capture the reply's parts (see :mod:`.compile` for what is
compiled). Its own module: the older of the two declaration formats, read by regular
expressions (:mod:`.regex`), shares nothing with the template reader but the result.
"""

from __future__ import annotations

import json
import re
from typing import Any

from reasonspan.runtime.core.errors import DeclarationError
from reasonspan.runtime.core.spec import Trim
from reasonspan.runtime.declared.declaration import (
    REASONING_FIELDS,
    DeclaredFormat,
    check_delimiters,
)
from reasonspan.runtime.declared.regex import (
    Captured,
    captured_part,
    leading_literal,
    parse_pattern,
    trailing_literal,
)

# transformers' x-parser names (``recursive_parse``); only a ``json`` body maps onto a
# tool-call kind.
_SCHEMA_PARSERS = frozenset({"json"})


class SchemaReader:
    """A ``response_schema`` (transformers 5.0–5.12)."""

    def __init__(self, schema: dict[str, Any], source: str) -> None:
        self.schema = schema
        self.source = f"{source} response_schema"
        props = schema.get("properties")
        self.props: dict[str, Any] = props if isinstance(props, dict) else {}
        top = schema.get("x-regex")
        self.top = top if isinstance(top, str) else None

    def fail(self, prop: str, pattern: object, reason: str) -> DeclarationError:
        return DeclarationError(self.source, prop, pattern, reason)

    def part(self, name: str) -> tuple[Captured | None, str | None, bool]:
        """A property's delimiters: from its own x-regex (or x-regex-iterator), else from
        the top-level x-regex's ``(?P<name>…)`` group. Also the pattern read, and whether it
        was the property's own (searched anywhere in the reply)."""
        node = self.props.get(name)
        node = node if isinstance(node, dict) else {}
        own = node.get("x-regex", node.get("x-regex-iterator"))
        top_group = (
            self.top is not None
            and name in parse_pattern(self.source, "x-regex", self.top).state.groupdict
        )
        if own is not None and not (top_group and not self._opens(name, own)):
            if not isinstance(own, str):
                raise self.fail(name, own, "a pattern must be a string")
            got = captured_part(self.source, name, own, None)
            if got is None:  # no group: the whole match is the part
                got = Captured(
                    [lit] if (lit := leading_literal(self.source, name, own)) else [],
                    False,
                    [lit] if (lit := trailing_literal(self.source, name, own)) else [],
                    Trim(),
                    Trim(),
                )
            return got, own, True
        if self.top is not None:
            return captured_part(self.source, name, self.top, name), self.top, False
        return None, None, False

    def _opens(self, name: str, pattern: str) -> bool:
        """The property's own pattern names an opener (else it only reshapes a part the
        top-level x-regex already cut out, as ``^(.*)$`` does)."""
        got = captured_part(self.source, name, pattern, None)
        return (
            bool(got.before)
            if got is not None
            else bool(leading_literal(self.source, name, pattern))
        )

    def check_parsers(self, name: str, node: object) -> None:
        """Every x-parser under a property must be one transformers defines and reasonspan
        can honour."""
        if isinstance(node, dict):
            parser = node.get("x-parser")
            if parser is not None and parser not in _SCHEMA_PARSERS:
                raise self.fail(
                    name,
                    parser,
                    f"x-parser {parser!r} is not one reasonspan can honour "
                    f"(known: {', '.join(sorted(_SCHEMA_PARSERS))})",
                )
            for child in node.values():
                self.check_parsers(name, child)
        elif isinstance(node, list):
            for child in node:
                self.check_parsers(name, child)

    def read(self) -> DeclaredFormat:
        field = next((f for f in REASONING_FIELDS if f in self.props), None)
        if field is None:
            raise self.fail(
                "properties", sorted(self.props), f"no reasoning property ({REASONING_FIELDS})"
            )
        for name, node in self.props.items():
            self.check_parsers(name, node)
        got, pattern, anywhere = self.part(field)
        if got is None or pattern is None:
            raise self.fail(
                field,
                self.top,
                f"neither an x-regex of its own nor a (?P<{field}>…) group in the top-level "
                "x-regex captures it",
            )
        if not got.before or not got.after:
            side = "before" if not got.before else "after"
            raise self.fail(
                field, pattern, f"no literal delimiter {side} the captured {field} part"
            )
        tool, tool_close, kinds = self.tool_part()
        content = self.props.get("content")
        content_open: list[str] = []
        content_close: list[str] = []
        content_trim = Trim()
        if isinstance(content, dict) and content.get("const") is None:
            part, _, own = self.part("content")
            if part is not None and own:
                content_open, content_close = part.before, part.after
            elif part is not None:
                content_trim = Trim(lead=part.lead.lead, lead_max=part.lead.lead_max)
        check_delimiters(
            self.fail,
            "properties",
            [
                (field, [*got.before, *got.after], True),
                ("tool_calls", tool, True),
                ("tool_calls", tool_close, False),
                ("content", content_open, True),
                ("content", content_close, False),
            ],
        )
        return DeclaredFormat(
            key="response_schema",
            start=tuple(got.before),
            end=tuple(got.after),
            start_optional=got.before_optional,
            reasoning_trim=Trim(
                lead=got.lead.lead,
                lead_max=got.lead.lead_max,
                trail=got.trail.trail,
                trail_max=got.trail.trail_max,
            ),
            content_trim=content_trim,
            tool=tool,
            tool_close=tool_close,
            tool_kinds=kinds,
            content_open=tuple(content_open),
            content_close=tuple(content_close),
            anywhere=anywhere,
        )

    def tool_part(self) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        node = self.props.get("tool_calls")
        if not isinstance(node, dict):
            return (), (), ()
        got, _, _ = self.part("tool_calls")
        if got is None or not got.before:
            return (), (), ()
        return tuple(got.before), tuple(got.after), _schema_kinds(node)


def _schema_kinds(node: dict[str, Any]) -> tuple[str, ...]:
    """The tool-call kind a schema's tool_calls node reads, if an existing one does."""
    items = node.get("items")
    items = items if isinstance(items, dict) else {}
    for holder in (node, items):
        if holder.get("x-parser") == "json":
            args = holder.get("x-parser-args")
            transform = args.get("transform") if isinstance(args, dict) else None
            # The json kind reads {"name", "arguments"}: a transform may only wrap it.
            if transform is None or re.search(r"function\s*:\s*@", str(transform)):
                return ("json",)
            # Cohere's actions, {"tool_name", "parameters"} (the cohere kind reads them).
            if re.search(r"name\s*:\s*tool_name\b", str(transform)) and re.search(
                r"arguments\s*:\s*parameters\b", str(transform)
            ):
                return ("cohere",)
            return ()
    blob = json.dumps(items)
    if "<function=" in blob and "<parameter=" in blob:
        return ("xml",)
    return ()
