"""A declaration as read: :class:`DeclaredFormat`, and the bounds both readers check.

The two readers (:mod:`.schema` for ``response_schema``, :mod:`.template` for
``response_template``) read different JSON into this one shape, and refuse the same
oversized delimiters (:func:`check_delimiters`); :mod:`.compile` documents what is compiled
and chooses the reader. Its own module so that the readers and the entry point share it
without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Sized
from typing import Literal

import msgspec

from reasonspan.runtime.core.errors import DeclarationError
from reasonspan.runtime.core.spec import ReasoningSpec, Trim
from reasonspan.runtime.core.tool_format import ToolFormat

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


def too_many_delimiters(
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


def check_delimiters(
    fail: Callable[[str, object, str], DeclarationError],
    total_prop: str,
    parts: Sequence[tuple[str, Sequence[str], bool]],
) -> None:
    """Every delimiter the declaration compiles to, as ``(property, delimiters, opens)``:
    within :data:`MAX_DELIMITERS`, :data:`MIN_DELIMITER_CHARS` and
    :data:`MAX_DELIMITER_CHARS`, and not blank where it opens or ends a part (a closer that
    is only stripped may be); checked before any of them meets a tokenizer."""
    for prop, markers, _ in parts:
        too_many_delimiters(fail, prop, markers)
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
