"""Shared helper for table-driven family tests: parse whole and stream token by token."""

from __future__ import annotations

from typing import Any

from fixtures import tokenizer

import reasonspan
from reasonspan import ParseResult


def split_both_ways(
    family: str,
    tok_name: str,
    output: str,
    *,
    prompt: str | None = None,
    kwargs: dict[str, Any] | None = None,
) -> ParseResult:
    """parse() the output, check 1-token streaming gives the same text, return parse()."""
    tok = tokenizer(tok_name)
    parser = reasonspan.create_parser_sync(family, tok, kwargs)
    ids = tok.encode(output)
    pids = tok.encode(prompt) if prompt is not None else None
    res = parser.parse(ids, prompt_token_ids=pids)
    split = reasonspan.TextSplitter(parser, pids)
    r = c = ""
    for t in ids:
        a, b = split.feed([t])
        r += a
        c += b
    a, b = split.finish()
    r += a
    c += b
    assert (r or None, c or None) == (res.reasoning or None, res.content or None)
    assert split.is_reasoning == (not res.reasoning_ended)
    return res
