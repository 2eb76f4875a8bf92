"""The right-to-left prompt scan on long prompts, where it leaves the Python tail and reads
numpy chunks (and skips chunks whose ids are all below the lowest marker id)."""

from __future__ import annotations

import numpy as np
import pytest

import reasonspan
from tests.support.fixtures import tokenizer


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


@pytest.mark.parametrize("as_array", [False, True])
@pytest.mark.parametrize("bad", [-1, -(2**40), "vocab", "vocab+2**40"])
def test_out_of_vocabulary_id_far_from_the_end_is_refused_before_a_marker_decides(
    bad: int | str, as_array: bool
) -> None:
    """The scan reads only the ids at or above the lowest marker id; a negative id (huge as
    an unsigned number) and an id past the vocabulary must still be found, even when a
    marker later in the same chunk would decide the scan."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    value = {"vocab": tok.vocab_size, "vocab+2**40": tok.vocab_size + 2**40}.get(str(bad), bad)
    assert isinstance(value, int)
    filler = tok.encode("The quick brown fox. ") * 5_000
    (end,) = tok.encode("</think>")
    at = len(filler)  # ~600 ids before the end: past the Python tail, in the first chunk
    prompt = [*filler, value, *filler[:100], end, *filler[:500]]
    ids = np.asarray(prompt, dtype=np.int64) if as_array else prompt
    with pytest.raises(reasonspan.InvalidTokenError, match=rf"prompt_token_ids\[{at}\]"):
        parser.is_prompt_in_reasoning(ids)
    # The same prompt without the bad id: the end marker decides.
    del prompt[at]
    assert parser.is_prompt_in_reasoning(np.asarray(prompt) if as_array else prompt) is False
