"""The shared runner of the family case tables: a family module declares its cases as data
(:class:`Row`, :class:`Seed`, :class:`Split`) and hands them to the checks here, so the
logic that runs a case lives once and a family's cases live in its own module
(``tests/families/test_<family>.py``, the README's "Adding a family").

- a matrix :class:`Row`: the output split by hand, checked by ``parse()`` and
  ``TextSplitter`` fed one token at a time (:func:`check_row`);
- a :class:`Seed`: whether a prompt leaves the turn in reasoning (:func:`check_seed`), and
  the same from the model's own chat template (:func:`check_template_seed`);
- a fidelity :class:`Split`: ``parse()`` and ``TextSplitter`` under a random split drawn by
  hypothesis (:func:`check_split`, :func:`check_layout_newlines`);
- a raw split, special tokens kept, its labels checked against one-token ``stream()`` too
  (:func:`split_raw`, :func:`labelled`, :func:`scan`).

Every check builds the parser on the case's tokenizer (the family's fixture unless the
case names another), so a family module loads only the tokenizers its own cases name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from _pytest.mark import ParameterSet
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import InvalidOptionError, Label, LoadedTokenizer, ParseResult, ReasoningParser
from tests.support.cases import split_both_ways, split_with_parser
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.strategies import splits

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""The hypothesis budget of one fidelity case (random splits of one output)."""


def parser_for(
    family: str,
    kwargs: Mapping[str, Any] | None = None,
    tok_name: str | None = None,
    *,
    tok: LoadedTokenizer | None = None,
) -> ReasoningParser:
    """The family's parser on ``tok``, or the fixture ``tok_name`` (default: the family's
    fixture tokenizer)."""
    tok = tok or tokenizer(tok_name or FAMILY_TOKENIZERS[family])
    return reasonspan.create_parser_sync(family, tok, dict(kwargs or {}))


def split(
    family: str,
    output: str,
    *,
    prompt: str | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> ParseResult:
    """parse() the output on the family's fixture; check that 1-token streaming presents
    the same text (:func:`tests.support.cases.split_with_parser`); return it."""
    return split_with_parser(parser_for(family, kwargs), output, prompt=prompt)


def texts(res: ParseResult) -> tuple[str | None, str | None]:
    """A result's reasoning and content."""
    return res.reasoning, res.content


def in_reasoning(family: str, prompt: str, kwargs: Mapping[str, Any] | None = None) -> bool:
    """Whether ``prompt`` leaves the family's turn in reasoning, on its fixture."""
    parser = parser_for(family, kwargs)
    return parser.is_prompt_in_reasoning(parser.tokenizer.encode(prompt))


@dataclass(frozen=True)
class Row:
    """One row of the model matrix: an output and its split, written by hand."""

    name: str
    output: str
    reasoning: str | None
    content: str | None
    ended: bool = True
    prompt: str | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    tokenizer: str | None = None
    """A fixture tokenizer other than the family's (a second checkpoint of the family)."""


def check_row(family: str, row: Row) -> None:
    """``parse()`` and one-token streaming both give the row's reasoning, content and end."""
    tok_name = row.tokenizer or FAMILY_TOKENIZERS[family]
    res = split_both_ways(family, tok_name, row.output, prompt=row.prompt, kwargs=dict(row.kwargs))
    assert (res.reasoning, res.content, res.reasoning_ended) == (
        row.reasoning,
        row.content,
        row.ended,
    )


@dataclass(frozen=True)
class Seed:
    """A prompt and whether the turn it ends starts in reasoning."""

    name: str
    prompt: str
    expected: bool
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    tokenizer: str | None = None


def check_seed(family: str, seed: Seed) -> None:
    """A multi-turn prompt: an old end marker in the history never decides by itself."""
    parser = parser_for(family, seed.kwargs, seed.tokenizer)
    assert parser.is_prompt_in_reasoning(parser.tokenizer.encode(seed.prompt)) is seed.expected


def check_template_seed(family: str, tok_name: str, enable: bool, expected: bool) -> None:
    """Render the model's own chat template (history with reasoning) and seed from it."""
    from reasonspan.prompts import render_prompt

    tok = tokenizer(tok_name)
    assert tok.chat_template, f"{tok_name} ships no chat template"
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"},
        {"role": "user", "content": "And 3+3?"},
    ]
    prompt, how = render_prompt(tok, messages, enable_thinking=enable)
    assert how == "the model's chat template"
    parser = reasonspan.create_parser_sync(family, tok)
    assert parser.is_prompt_in_reasoning(prompt) is expected


@dataclass(frozen=True)
class Split:
    """A fidelity case: an output as the real model or template writes it, and its split."""

    name: str
    output: str
    reasoning: str | None
    content: str | None
    prompt: str | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    tokenizer: str | None = None


def params(cases: Sequence[Row | Seed | Split]) -> list[ParameterSet]:
    """The cases as pytest parameters, each named by its ``name``."""
    return [pytest.param(c, id=c.name) for c in cases]


def streamed(
    parser: ReasoningParser, deltas: list[list[int]], prompt: list[int] | None
) -> tuple[str, str]:
    """``TextSplitter`` fed ``deltas``: its reasoning and content, finish included."""
    split = reasonspan.TextSplitter(parser, prompt)
    r = c = ""
    for d in deltas:
        a, b = split.feed(d)
        r, c = r + a, c + b
    a, b = split.finish()
    return r + a, c + b


def check_split(data: st.DataObject, family: str, case: Split) -> ParseResult:
    """parse() gives the expected text, and so does TextSplitter for a random split."""
    parser = parser_for(family, case.kwargs, case.tokenizer)
    tok = parser.tokenizer
    ids = tok.encode(case.output)
    pids = tok.encode(case.prompt) if case.prompt is not None else None
    res = parser.parse(ids, prompt_token_ids=pids)
    assert (res.reasoning or None, res.content or None) == (case.reasoning, case.content)
    deltas = data.draw(splits(ids), label="deltas")
    assert streamed(parser, deltas, pids) == (case.reasoning or "", case.content or "")
    return res


def check_layout_newlines(data: st.DataObject, family: str, case: Split) -> None:
    """Newlines next to the markers are the template's layout, not text; their tokens
    still carry a label (reasoning, content or delimiter), every one counted."""
    res = check_split(data, family, case)
    tok = tokenizer(case.tokenizer or FAMILY_TOKENIZERS[family])
    n = len(tok.encode(case.output))
    assert res.reasoning_tokens + len(res.content_token_ids) + res.delimiter_tokens == n
    if "\n\n</think>" in case.output or case.output.endswith("\n\n"):
        assert any("\n" in tok.decode([t]) for t in res.reasoning_token_ids)


def check_no_leak(family: str, kwargs: Mapping[str, Any], output: str, leak: str) -> None:
    """A marker in the content is a defect unless the family documents it as content."""
    parser = parser_for(family, kwargs)
    res = parser.parse(parser.tokenizer.encode(output))
    assert res.content and leak not in res.content
    assert res.reasoning and leak not in res.reasoning


def split_raw(
    family: str,
    tok_name: str,
    output: str | list[int],
    prompt: str | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> ParseResult:
    """parse() the output; check that one-token streaming (``stream()`` and
    ``TextSplitter``) gives the same labels and text, and return parse().

    Special tokens are kept in the text: these cases assert the raw split."""
    tok = tokenizer(tok_name)
    parser = parser_for(family, kwargs, tok_name)
    ids = tok.encode(output) if isinstance(output, str) else output
    pids = tok.encode(prompt) if prompt is not None else None
    res = parser.parse(ids, prompt_token_ids=pids, skip_special_tokens=False)

    parser.reset()
    state = parser.is_prompt_in_reasoning(pids) if pids is not None else parser.default_reasoning
    assert state == res.started_in_reasoning
    labels = b""
    for t in ids:
        d = parser.stream([t], state)
        state = d.is_still_reasoning
        labels += d.labels
    tail = parser.finish(state)
    assert labels + tail.labels == res.labels
    assert tail.is_still_reasoning == (not res.reasoning_ended)

    split = reasonspan.TextSplitter(parser, pids, skip_special_tokens=False)
    r = c = ""
    for t in ids:
        a, b = split.feed([t])
        r, c = r + a, c + b
    a, b = split.finish()
    assert ((r + a) or None, (c + b) or None) == (res.reasoning, res.content)
    return res


def labelled(res: ParseResult, tok_name: str, label: Label) -> list[str]:
    """The text of each token of ``res`` that carries ``label``."""
    tok = tokenizer(tok_name)
    return [
        tok.decode([t]) for t, lab in zip(res.token_ids, res.labels, strict=True) if lab == label
    ]


def scan(family: str, tok_name: str, prompt: str, kwargs: Mapping[str, Any] | None = None) -> bool:
    """Whether ``prompt`` leaves the family's turn in reasoning, on ``tok_name``."""
    return parser_for(family, kwargs, tok_name).is_prompt_in_reasoning(
        tokenizer(tok_name).encode(prompt)
    )


R1_PROMPT = "<｜User｜>q<｜Assistant｜><think>\n"
BLANK_BEFORE_START = [
    # vLLM deepseek_r1: the output is partitioned on its first <think>.
    Split("newline then start", "\n<think>x</think>y", "x", "y", R1_PROMPT),
    Split("blank run then start", "\n \n\n<think>x</think>y", "x", "y", R1_PROMPT),
    Split("start", "<think>x</think>y", "x", "y", R1_PROMPT),
    # No start marker: the blank run is the reasoning's first text.
    Split("no start", "\nx</think>y", "\nx", "y", R1_PROMPT),
    Split("blank only", "\n\n", "\n\n", None, R1_PROMPT),
    Split("blank then end", "\n</think>y", "\n", "y", R1_PROMPT),
    # Text that is not blank was already reasoning: kept (bounded hold, module doc).
    Split("text then start", "ok\n<think>x</think>y", "ok\nx", "y", R1_PROMPT),
    Split("blank, text, start", "\nok<think>x</think>y", "\nokx", "y", R1_PROMPT),
]
"""Blank text before the model's own ``<think>`` is dropped: the lead rule of the families
whose turn starts in reasoning with DeepSeek-R1's markers (deepseek_r1, holo2)."""


def default_state(family: str, tok_name: str, kwargs: Mapping[str, Any] | None = None) -> bool:
    """Whether the family's turn starts in reasoning with no prompt, on ``tok_name``."""
    return parser_for(family, kwargs, tok_name).default_reasoning


def texts_or_none(res: ParseResult) -> tuple[str | None, str | None]:
    """A result's reasoning and content, an empty text as None."""
    return res.reasoning or None, res.content or None


def labelled_text(res: ParseResult, tok_name: str, label: Label) -> str:
    """The text of the tokens of ``res`` that carry ``label``, decoded together."""
    tok = tokenizer(tok_name)
    return tok.decode([t for t, lab in zip(res.token_ids, res.labels, strict=True) if lab == label])


def refused(family: str, kwargs: Mapping[str, Any]) -> InvalidOptionError:
    """The error building the family's parser with ``kwargs`` raises (it must raise)."""
    with pytest.raises(InvalidOptionError) as info:
        parser_for(family, kwargs)
    return info.value
