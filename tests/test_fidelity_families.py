"""Per-family behaviours checked against what the real models and templates produce
(issue 8, part B): each case whole (``parse()``) and streamed under random splits
(``TextSplitter``), on the family's fixture tokenizer (real, or named synthetic)."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures import FAMILY_TOKENIZERS, tokenizer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import splits

import reasonspan
from reasonspan import ParseResult, ReasoningParser

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def parser_for(family: str, kwargs: dict[str, Any] | None = None) -> ReasoningParser:
    return reasonspan.create_parser_sync(family, tokenizer(FAMILY_TOKENIZERS[family]), kwargs)


def streamed(
    parser: ReasoningParser, deltas: list[list[int]], prompt: list[int] | None
) -> tuple[str, str]:
    split = reasonspan.TextSplitter(parser, prompt)
    r = c = ""
    for d in deltas:
        a, b = split.feed(d)
        r, c = r + a, c + b
    a, b = split.finish()
    return r + a, c + b


def check_split(
    data: st.DataObject,
    family: str,
    output: str,
    reasoning: str | None,
    content: str | None,
    *,
    prompt: str | None = None,
    kwargs: dict[str, Any] | None = None,
) -> ParseResult:
    """parse() gives the expected text, and so does TextSplitter for a random split."""
    parser = parser_for(family, kwargs)
    tok = parser.tokenizer
    ids = tok.encode(output)
    pids = tok.encode(prompt) if prompt is not None else None
    res = parser.parse(ids, prompt_token_ids=pids)
    assert (res.reasoning or None, res.content or None) == (reasoning, content)
    deltas = data.draw(splits(ids), label="deltas")
    assert streamed(parser, deltas, pids) == (reasoning or "", content or "")
    return res


# ---------------------------------------------------------------- nemotron_v3


NEMO_Q = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


@pytest.mark.parametrize(
    ("kwargs", "prompt", "output", "reasoning", "content"),
    [
        (
            {"force_nonempty_content": True},
            NEMO_Q + "<think>\n",
            "only thoughts",
            None,
            "only thoughts",
        ),
        ({"force_nonempty_content": True}, NEMO_Q + "<think>\n", "a b</think>", None, "a b"),
        ({"force_nonempty_content": True}, NEMO_Q + "<think>\n", "plan</think>Hi", "plan", "Hi"),
        (
            {"enable_thinking": False},
            NEMO_Q + "<think></think>",
            "<think>Hello</think>",
            None,
            "Hello",
        ),
        ({"enable_thinking": False}, NEMO_Q + "<think></think>", "<think>g</think>Hi", "g", "Hi"),
    ],
)
@SETTINGS
@given(data=st.data())
def test_nemotron_splitter_holds_what_the_swap_may_move(
    data: st.DataObject,
    kwargs: dict[str, Any],
    prompt: str,
    output: str,
    reasoning: str | None,
    content: str | None,
) -> None:
    """TextSplitter, fed any split, returns parse()'s text: reasoning that becomes the
    content is never returned as reasoning first."""
    check_split(data, "nemotron_v3", output, reasoning, content, prompt=prompt, kwargs=kwargs)
