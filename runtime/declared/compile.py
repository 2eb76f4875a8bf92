"""Compile the output format a checkpoint declares about itself into a :class:`ReasoningSpec`.

Hugging Face transformers lets a checkpoint publish how its replies read, as metadata in
tokenizer_config.json, in two generations (the facts below, with where each comes from; the
paths are in the huggingface/transformers repository, or in its 5.23.0 wheel where so
marked):

- ``response_schema`` (the older one: TRL's ``trl/chat_template_utils.py`` sets it on
  transformers before 5.13 and says the newer format needs 5.13; Gemma 4's conversion script
  ``models/gemma4/convert_gemma4_weights.py`` writes one into the checkpoint). A
  JSON schema whose ``x-regex`` / ``x-regex-iterator`` annotations capture the parts of the
  reply, read by ``recursive_parse`` in ``utils/chat_parsing_utils.py`` (``re.search`` with
  ``re.DOTALL``; a regex with named groups feeds the properties of the same names, one with a
  single unnamed group feeds its own property; ``x-parser`` ``json`` reads a captured body,
  with an optional jmespath ``transform``). Examples: ``tests/utils/test_chat_parsing_utils.py``
  (``cohere_schema``, ``ernie_schema``, ``gpt_oss_schema``, ``smollm_schema``,
  ``qwen3_schema``).
- ``response_template`` (transformers 5.13 on; the 5.23.0 wheel's
  ``tokenization_utils_base.py`` saves and reads only this key and silently drops a legacy
  ``response_schema``). Named ``fields`` with literal
  ``open`` / ``close`` delimiters (or ``open_pattern`` / ``close_pattern`` regexes), a
  ``content`` parser (``text``, ``json``, ``xml-inline`` …) and one implicit field without an
  opener that collects the rest; ``start_anchor`` marks where the assistant turn begins in
  the prompt (``utils/chat_parsing/response_templates.py``, ``docs/source/en/
  chat_response_parsing.md``). ``transformers serve`` is the serving engine with a generic
  parser driven by it: ``get_response_template`` takes the tokenizer's, else a per-model
  fallback (``_RESPONSE_TEMPLATE_FALLBACKS`` in the 5.23.0 wheel's ``cli/serving/utils.py``:
  Qwen2/3, Qwen3.5, Gemma 4; earlier releases kept ``response_schema`` fallbacks there,
  ``_TOOL_CALL_FALLBACKS``, PR #45690 "[serve] Support for reasoning"); the reasoning
  field may be named ``reasoning_content``, ``thinking`` or ``reasoning``
  (``_REASONING_FIELDS`` in ``utils/chat_template_utils.py``).

When a folder carries both, ``response_template`` is read, as transformers 5.13+ does.

What is compiled, and how (token ids and byte runs are matched by the runtime as for any
family; nothing here scans model output):

- the reasoning field's delimiters become the start and end markers: the literal right
  before and right after its capture group (schema) or its ``open`` / ``close`` (template).
  An end written as ``(?:LITERAL|$)`` is the literal (``$``: the output may stop inside).
- optional whitespace next to a captured part (``\\n?``, ``\\s*``) is layout: a
  :class:`Trim` of that channel's text, never a marker; the template's ``text`` parser strips
  the whitespace around each field the same way.
- where a turn starts: a schema whose top-level x-regex reads the reasoning block at the
  start of the reply (SmolLM3, Qwen3) starts a turn in reasoning, and a start the model
  writes there is consumed (whether the template prefills it or not, as the qwen3 family
  reads it); a later start is content. A part searched anywhere (its own x-regex, Cohere)
  or a template region may open after content; the turn starts in reasoning only when the
  regex lets the start go missing (``(?:^|<think>)``: the template may prefill it). A
  template says nothing about prefill (the prompt does, through ``start_anchor`` and the
  prefix), so its turn starts in content and the prompt scan decides.
- the tool-call part's opener ends reasoning and stays in content (an implicit end); its
  closer with it gives a :class:`ToolFormat` when the body is one the existing kinds read:
  ``json`` (a ``{"name", "arguments"}`` object: no transform, or one that wraps the body
  whole) and ``xml`` (``<function=NAME>`` with ``<parameter=KEY>`` tags). Other bodies keep
  the opener as an implicit end, without calls.
- a content part with its own opener (Cohere's ``<|START_RESPONSE|>``, ERNIE's
  ``<response>``) ends reasoning; its closer is stripped. Delimiters are never part of a
  captured field, so an end marker after content is dropped.
- ``start_anchor`` becomes the turn marker that bounds the prompt scan.

A declaration this cannot honour raises :class:`DeclarationError`, naming the property and
the pattern: no reasoning field, a reasoning part without literal delimiters, an ``x-parser``
or content parser that transformers does not define or that has no counterpart here, a
regex Python cannot read.

A declaration is a file in a model folder, so every dimension of it is bounded, and a
declaration past a bound is a :class:`DeclarationError` naming the dimension, the value and
the limit, raised before any marker is resolved or any table built (each delimiter that is
not one token becomes a byte pattern whose prefixes the machine keeps, and each is looked
for in every token's bytes): objects and arrays nested :data:`MAX_DECLARATION_NESTING` deep,
:data:`MAX_DELIMITERS` delimiters, each of :data:`MIN_DELIMITER_CHARS` to
:data:`MAX_DELIMITER_CHARS` characters, patterns of ``declared_regex.MAX_PATTERN_CHARS``
characters nesting ``declared_regex.MAX_PATTERN_NESTING`` groups deep. Every published
declaration (tests/declarations.py) is far inside them: 9 delimiters at most, 5 to 18
characters each, nesting 9 deep, patterns of 196 characters and 3 levels of groups.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence, Sized
from typing import Any, Literal

import msgspec

from reasonspan.runtime.core.errors import DeclarationError
from reasonspan.runtime.core.spec import ReasoningSpec, Trim
from reasonspan.runtime.core.tool_format import ToolFormat
from reasonspan.runtime.declared.regex import (
    WHITESPACE,
    _Captured,
    _captured,
    _leading_literal,
    _parse,
    _trailing_literal,
)
from reasonspan.tokenizer.loader import json_nesting

DECLARATION_KEYS = ("response_template", "response_schema")
"""tokenizer_config.json keys, in the order they are read (the newer format first)."""

REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
"""transformers' ``_REASONING_FIELDS``: the names a reasoning part may have."""


MAX_DELIMITERS = 64
"""Delimiters in one declaration, all its fields together (and so in any one list of them):
a published one has at most 9 (Gemma 4's template). Each is a marker to resolve, and one
that is not a single token is a byte pattern looked for in every token's bytes."""

MAX_DELIMITER_CHARS = 256
"""The longest delimiter (characters): the longest published one is 18 characters and the
longest marker of any family 52 (gpt-oss's ``<|end|><|start|>assistant…``). A byte pattern
keeps every prefix of itself, so its table grows with the square of its length (a 1 MB
delimiter ran out of memory at 5.7 GB)."""

MIN_DELIMITER_CHARS = 3
"""The shortest delimiter (characters): a shorter one is matched inside ordinary words (a
reasoning end ``e`` would end reasoning at every ``e``). The shortest marker of any family
is 4 characters (MiniMax's ``]~b]``), of a published declaration 5 (``<eos>``)."""

MAX_DECLARATION_NESTING = 64
"""How deep a declaration's objects and arrays may nest: a published response_schema nests
9 deep (tool_calls → items → properties → function → … → additionalProperties), and the
reader walks it recursively (x-parser names, the tool-call body)."""


# transformers' x-parser names (``recursive_parse``) and content parsers
# (``CONTENT_PARSERS``); only ``json`` and ``xml-inline`` bodies map onto a tool-call kind.
_SCHEMA_PARSERS = frozenset({"json"})
_CONTENT_PARSERS = frozenset({"text", "int", "float", "bool", "json", "xml-inline", "kv-lines"})


class DeclaredFormat(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a declaration says about the reply, before it meets a tokenizer."""

    key: Literal["response_template", "response_schema"]
    start: tuple[str, ...]
    end: tuple[str, ...]
    start_optional: bool
    """The declaration lets the start go missing: a template may prefill it."""
    reasoning_trim: Trim = Trim()
    content_trim: Trim = Trim()
    tool: tuple[str, ...] = ()
    tool_close: tuple[str, ...] = ()
    tool_kinds: tuple[str, ...] = ()
    content_open: tuple[str, ...] = ()
    content_close: tuple[str, ...] = ()
    turn: tuple[str, ...] = ()
    anywhere: bool = True
    """The reasoning part may open after content (searched anywhere, or a template region)."""

    def spec(self, base: ReasoningSpec) -> ReasoningSpec:
        """``base`` (the family's name, switches and notes) with the declared markers."""
        end = tuple(dict.fromkeys((*self.end, *self.content_open)))
        taken = {*self.start, *end, *self.tool}
        strip = tuple(m for m in dict.fromkeys(self.content_close) if m not in taken)
        turn = tuple(m for m in self.turn if m not in taken and m not in strip)
        tool_calls = None
        if self.tool_kinds and self.tool and self.tool_close:
            tool_calls = ToolFormat(
                kinds=self.tool_kinds,
                open=self.tool,
                close=self.tool_close,
                json_strings="json" in self.tool_kinds,
                source=f"declared by the checkpoint's {self.key}",
            )
        return msgspec.structs.replace(
            base,
            start=self.start,
            end=end,
            tool=self.tool,
            strip=strip,
            turn=turn,
            text_markers=(*self.start, *end, *self.tool, *strip, *turn),
            prompt_start=self.start_optional or not self.anywhere,
            start_in_content="enter" if self.anywhere else "keep",
            end_in_content="drop",
            reasoning_trim=self.reasoning_trim,
            content_trim=self.content_trim,
            tool_calls=tool_calls,
        )


def find_declaration(config: Mapping[str, Any]) -> tuple[str, Any] | None:
    """The declaration in a tokenizer_config.json, as ``(key, value)``, or None."""
    for key in DECLARATION_KEYS:
        value = config.get(key)
        if value is not None:
            return key, value
    return None


def read_declaration(key: str, value: Any, source: str) -> DeclaredFormat:
    """Read one declaration; :class:`DeclarationError` when it cannot be honoured."""
    depth = json_nesting(value)
    if depth > MAX_DECLARATION_NESTING:
        # The value is not passed on: showing it in the message would recurse as deep.
        raise DeclarationError(
            source,
            key,
            f"objects and arrays {depth:,} deep",
            f"declaration nesting: {depth:,} levels, over the limit of {MAX_DECLARATION_NESTING}",
        )
    if not isinstance(value, dict):
        raise DeclarationError(source, key, value, "expected a JSON object")
    if key == "response_template":
        got = _Template(value, source).read()
    elif key == "response_schema":
        got = _Schema(value, source).read()
    else:
        raise DeclarationError(
            source, key, value, f"unknown declaration; expected {DECLARATION_KEYS}"
        )
    return got


def _too_many(
    fail: Callable[[str, object, str], DeclarationError], prop: str, values: Sized
) -> None:
    """Refuse a list of delimiters longer than the whole declaration may hold, before its
    items are looked at."""
    if len(values) > MAX_DELIMITERS:
        raise fail(
            prop,
            f"a list of {len(values):,}",
            f"number of delimiters: {len(values):,}, over the limit of {MAX_DELIMITERS}",
        )


def _check_delimiters(
    fail: Callable[[str, object, str], DeclarationError],
    total_prop: str,
    parts: Sequence[tuple[str, Sequence[str], bool]],
) -> None:
    """Every delimiter the declaration compiles to, as ``(property, delimiters, opens)``:
    within :data:`MAX_DELIMITERS`, :data:`MIN_DELIMITER_CHARS` and
    :data:`MAX_DELIMITER_CHARS`, and not blank where it opens or ends a part (a closer that
    is only stripped may be); checked before any of them meets a tokenizer."""
    for prop, markers, _ in parts:
        _too_many(fail, prop, markers)
    total = sum(len(markers) for _, markers, _ in parts)
    if total > MAX_DELIMITERS:
        raise fail(
            total_prop,
            f"{total:,} delimiters",
            f"number of delimiters: {total:,} in all, over the limit of {MAX_DELIMITERS}",
        )
    for prop, markers, opens in parts:
        for marker in markers:
            n = len(marker)
            if n > MAX_DELIMITER_CHARS:
                raise fail(
                    prop,
                    marker,
                    f"delimiter length: {n:,} characters, over the limit of {MAX_DELIMITER_CHARS}",
                )
            if opens and not marker.strip():
                raise fail(prop, marker, "a delimiter must not be blank")
            if n < MIN_DELIMITER_CHARS:
                raise fail(
                    prop,
                    marker,
                    f"delimiter length: {marker!r} is {n} character{'s' if n != 1 else ''}, "
                    f"under the minimum of {MIN_DELIMITER_CHARS} (one that short is matched "
                    "inside ordinary text)",
                )


def _args(field: Mapping[str, Any]) -> Mapping[str, Any]:
    """A template field's ``content_args`` (a mapping, or none)."""
    args = field.get("content_args")
    return args if isinstance(args, Mapping) else {}


class _Schema:
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

    def part(self, name: str) -> tuple[_Captured | None, str | None, bool]:
        """A property's delimiters: from its own x-regex (or x-regex-iterator), else from
        the top-level x-regex's ``(?P<name>…)`` group. Also the pattern read, and whether it
        was the property's own (searched anywhere in the reply)."""
        node = self.props.get(name)
        node = node if isinstance(node, dict) else {}
        own = node.get("x-regex", node.get("x-regex-iterator"))
        top_group = (
            self.top is not None
            and name in _parse(self.source, "x-regex", self.top).state.groupdict
        )
        if own is not None and not (top_group and not self._opens(name, own)):
            if not isinstance(own, str):
                raise self.fail(name, own, "a pattern must be a string")
            got = _captured(self.source, name, own, None)
            if got is None:  # no group: the whole match is the part
                got = _Captured(
                    [lit] if (lit := _leading_literal(self.source, name, own)) else [],
                    False,
                    [lit] if (lit := _trailing_literal(self.source, name, own)) else [],
                    Trim(),
                    Trim(),
                )
            return got, own, True
        if self.top is not None:
            return _captured(self.source, name, self.top, name), self.top, False
        return None, None, False

    def _opens(self, name: str, pattern: str) -> bool:
        """The property's own pattern names an opener (else it only reshapes a part the
        top-level x-regex already cut out, as ``^(.*)$`` does)."""
        got = _captured(self.source, name, pattern, None)
        return (
            bool(got.before)
            if got is not None
            else bool(_leading_literal(self.source, name, pattern))
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
        _check_delimiters(
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
            return ()
    blob = json.dumps(items)
    if "<function=" in blob and "<parameter=" in blob:
        return ("xml",)
    return ()


class _Template:
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
            _too_many(self.fail, f"{name}.{side}", raw)
        if isinstance(raw, list) and all(isinstance(r, str) for r in raw) and raw:
            return [r for r in raw if r != "eos"]
        if raw is not None:
            raise self.fail(f"{name}.{side}", raw, "expected a string or a list of strings")
        pattern = field.get(f"{side}_pattern")
        if pattern is None:
            return []
        prop = f"{name}.{side}_pattern"
        lit = (
            _leading_literal(self.source, prop, pattern)
            if side == "open"
            else _trailing_literal(self.source, prop, pattern)
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
        _too_many(self.fail, "start_anchor", turn)
        if turn == [] and (pat := self.template.get("start_anchor_pattern")) is not None:
            turn = [lit] if (lit := _leading_literal(self.source, "start_anchor", pat)) else []
        turn = [t for t in turn if isinstance(t, str) and t]
        strip = _args(reasoning).get("strip", True)
        cstrip = _args(content).get("strip", True)
        _check_delimiters(
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
