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

from collections.abc import Mapping
from typing import Any

from reasonspan.runtime.core.errors import DeclarationError
from reasonspan.runtime.declared.declaration import (
    DECLARATION_KEYS,
    MAX_DECLARATION_NESTING,
    MAX_DELIMITER_CHARS,
    MAX_DELIMITERS,
    MIN_DELIMITER_CHARS,
    DeclaredFormat,
)
from reasonspan.runtime.declared.schema import SchemaReader
from reasonspan.runtime.declared.template import TemplateReader
from reasonspan.tokenizer.files import json_nesting

__all__ = [
    "MAX_DECLARATION_NESTING",
    "MAX_DELIMITERS",
    "MAX_DELIMITER_CHARS",
    "MIN_DELIMITER_CHARS",
    "DeclaredFormat",
    "find_declaration",
    "read_declaration",
]


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
        got = TemplateReader(value, source).read()
    elif key == "response_schema":
        got = SchemaReader(value, source).read()
    else:
        raise DeclarationError(
            source, key, value, f"unknown declaration; expected {DECLARATION_KEYS}"
        )
    return got
