"""Shared helper for table-driven family tests: parse whole and stream token by token."""

from __future__ import annotations

from typing import Any

import reasonspan
from reasonspan import ParseResult, ReasoningParser
from tests.support.fixtures import tokenizer


def split_with_parser(
    parser: ReasoningParser,
    output: str,
    *,
    prompt: str | None = None,
    skip_special_tokens: bool = False,
) -> ParseResult:
    """parse() the output, check that 1-token streaming gives the same text (nemotron's
    reasoning-as-content included, with no help from the caller) and return parse().

    The family tables assert the raw split, markers kept as content included, so special
    tokens are kept unless asked (the servers' skip default has its own tests)."""
    tok = parser.tokenizer
    ids = tok.encode(output)
    pids = tok.encode(prompt) if prompt is not None else None
    res = parser.parse(ids, prompt_token_ids=pids, skip_special_tokens=skip_special_tokens)
    split = reasonspan.TextSplitter(parser, pids, skip_special_tokens=skip_special_tokens)
    r = c = ""
    for t in ids:
        a, b = split.feed([t])
        r += a
        c += b
    a, b = split.finish()
    r += a
    c += b
    # The splitter holds what may be swapped: its text is parse()'s text as it stands.
    assert split.reasoning_as_content == res.reasoning_as_content
    assert (r or None, c or None) == (res.reasoning or None, res.content or None)
    assert split.is_reasoning == (not res.reasoning_ended)
    return res


def split_both_ways(
    family: str,
    tok_name: str,
    output: str,
    *,
    prompt: str | None = None,
    kwargs: dict[str, Any] | None = None,
) -> ParseResult:
    """As :func:`split_with_parser`, for a family on a fixture tokenizer by name."""
    parser = reasonspan.create_parser_sync(family, tokenizer(tok_name), kwargs)
    return split_with_parser(parser, output, prompt=prompt)
