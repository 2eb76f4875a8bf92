"""The right-to-left prompt scan on long prompts, where it leaves the Python tail and reads
numpy chunks (and skips chunks whose ids are all below the lowest marker id)."""

from __future__ import annotations

import numpy as np
import pytest
from fixtures import tokenizer

import reasonspan


@pytest.mark.parametrize("as_array", [False, True])
@pytest.mark.parametrize(
    ("head", "expected"),
    [("<think>", True), ("</think>", False), ("<|im_start|>assistant\n", True), ("", True)],
)
def test_marker_far_from_the_end_decides(head: str, expected: bool, as_array: bool) -> None:
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    filler = tok.encode("The quick brown fox jumps over the lazy dog. ") * 3_000  # ~30k ids
    noisy = tok.encode("Tool output.<tool_response>") * 500  # a special id, not a marker
    for body in (filler, noisy + filler, filler + noisy):
        prompt = tok.encode(head) + body
        ids = np.asarray(prompt) if as_array else prompt
        # qwen3 starts a turn in reasoning (thinking on), so with no marker at all: True.
        assert parser.is_prompt_in_reasoning(ids) is expected


def test_invalid_id_far_from_the_end_is_reported_where_it_is() -> None:
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    prompt = tok.encode("The quick brown fox. ") * 5_000
    prompt[100] = tok.vocab_size + 5
    with pytest.raises(reasonspan.InvalidTokenError, match=r"prompt_token_ids\[100\]"):
        parser.is_prompt_in_reasoning(np.asarray(prompt))
