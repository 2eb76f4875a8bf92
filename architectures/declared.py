"""``declared``: the output format a checkpoint declares about itself, compiled at load time.

A checkpoint whose tokenizer_config.json carries transformers' ``response_template`` (or the
older ``response_schema``) says which delimiters hold its reasoning, its answer and its tool
calls. :mod:`reasonspan.runtime.declared.compile` compiles that into a :class:`ReasoningSpec` (where
each fact comes from is said there); this family is the registered name for it. Building a
parser reads the tokenizer's declaration and returns a parser whose class carries the
compiled spec, so everything that reads ``parser.spec`` (workloads, budgets, the template
profile) sees the declared markers; the markers are then resolved on token ids, or on the
bytes of a run of tokens, like any family's.

Thinking is switched with ``enable_thinking``, the chat_template_kwargs key ``transformers
serve --reasoning on|off`` sets (its serving docs); a declaration says nothing about
switches. A folder without a declaration, or with one that cannot be honoured, raises
:class:`~reasonspan.runtime.core.errors.DeclarationError` naming the property and pattern.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self, cast

from reasonspan.runtime.core.errors import DeclarationError
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.declared.compile import find_declaration, read_declaration
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.tokenizer.loader import LoadedTokenizer, as_loaded

DECLARED = "declared"

_BASE = ReasoningSpec(
    name=DECLARED,
    aliases=("response_template", "response_schema"),
    thinking_switches=("enable_thinking",),
    start_source=(
        "documented: a response_schema whose top-level x-regex reads the block at the "
        "start of the reply, or whose start may be missing, starts in reasoning; otherwise, "
        "and for a response_template, the turn starts in content (the prompt decides)"
    ),
    notes="markers, trims and tool calls compiled from the checkpoint's response_template "
    "or response_schema (tokenizer_config.json); it wins over detection when it compiles",
)


def declaration_source(tok: LoadedTokenizer) -> str:
    """Where a tokenizer's declaration is read from (for messages)."""
    return str(Path(tok.source).parent / "tokenizer_config.json")


def declared_spec(tok: LoadedTokenizer) -> ReasoningSpec:
    """The spec this tokenizer's folder declares (cached on the tokenizer)."""
    key = ("declared_spec",)
    cached = tok.cache.get(key)
    if isinstance(cached, ReasoningSpec):
        return cached
    if isinstance(cached, DeclarationError):
        raise cached
    source = declaration_source(tok)
    try:
        found = find_declaration(tok.config)
        if found is None:
            raise DeclarationError(
                source,
                "response_template",
                None,
                "the folder declares no output format (tokenizer_config.json has neither "
                "response_template nor response_schema)",
            )
        spec = read_declaration(found[0], found[1], source).spec(_BASE)
    except DeclarationError as exc:
        tok.cache[key] = exc
        raise
    tok.cache[key] = spec
    return spec


_COMPILED: dict[ReasoningSpec, type[DeclaredParser]] = {}


def _compiled(spec: ReasoningSpec) -> type[DeclaredParser]:
    """One parser class per declared spec (not registered: the name stays ``declared``)."""
    cls = _COMPILED.get(spec)
    if cls is None:
        attrs = {"spec": spec, "__slots__": (), "__module__": __name__}
        cls = _COMPILED[spec] = cast(
            "type[DeclaredParser]", type("DeclaredParser", (DeclaredParser,), attrs)
        )
    return cls


@register
class DeclaredParser(ReasoningParser):
    spec = _BASE

    @classmethod
    def resolve_spec(cls, tokenizer: LoadedTokenizer) -> ReasoningSpec:
        if cls.spec is not _BASE:  # a compiled class: its spec is the declaration's
            return cls.spec
        return declared_spec(tokenizer)

    @classmethod
    def create(
        cls,
        tokenizer: LoadedTokenizer | Any,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        *,
        default_reasoning: bool | None = None,
    ) -> Self:
        if cls.spec is not _BASE:
            return super().create(
                tokenizer, chat_template_kwargs, default_reasoning=default_reasoning
            )
        tok = as_loaded(tokenizer)
        made = _compiled(declared_spec(tok)).create(
            tok, chat_template_kwargs, default_reasoning=default_reasoning
        )
        return cast(Self, made)
