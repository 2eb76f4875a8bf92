"""The 1-token fast path of ``stream()``: a lone ordinary token's delta comes from a table
shared by every parser on the machine. A warm table must never change what a call returns
or refuses: the same labels as ``parse()``, per start state, and the same errors for ids
that merely hash like a cached one (``True == 1``, ``1.0 == 1``)."""

from __future__ import annotations

import numpy as np
import pytest

import reasonspan
from reasonspan import InvalidOptionError, InvalidTokenError
from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING
from tests.support.fixtures import tokenizer


def _parser() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("qwen3", tokenizer("qwen-3"))


def test_a_warm_table_keeps_the_label_of_each_start_state() -> None:
    tok = tokenizer("qwen-3")
    parser = _parser()
    (t,) = tok.encode("Hello")
    for _ in range(2):  # the second round reads the tables the first one filled
        inside = parser.stream([t], True)
        outside = parser.stream([t], False)
        assert (inside.labels, inside.reasoning_token_ids, inside.content_token_ids) == (
            bytes((REASONING,)),
            [t],
            [],
        )
        assert (outside.labels, outside.reasoning_token_ids, outside.content_token_ids) == (
            bytes((CONTENT,)),
            [],
            [t],
        )
        assert inside.is_still_reasoning is True
        assert outside.is_still_reasoning is False


def test_the_tracked_state_follows_a_cached_delta() -> None:
    tok = tokenizer("qwen-3")
    parser = _parser()
    (t,) = tok.encode("Hello")
    (end,) = tok.encode("</think>")
    parser.stream([t], False)  # warm
    parser.reset()
    assert parser.stream([t], True).is_still_reasoning is True
    assert parser.stream([end], None).labels == bytes((DELIMITER,))
    # The tracked state is now "content": None reads it, so the cached content delta.
    assert parser.stream([t], None).labels == bytes((CONTENT,))
    assert parser.finish().is_still_reasoning is False


@pytest.mark.parametrize("bad", [True, False, 1.0, "1", -1, 10**9])
def test_ids_equal_to_a_cached_one_are_still_refused(bad: object) -> None:
    parser = _parser()
    for t in (0, 1):
        parser.stream([t], True)
        parser.stream([t], False)
    with pytest.raises(InvalidTokenError):
        parser.stream([bad], True)  # type: ignore[list-item]


def test_a_state_that_is_not_a_bool_is_still_refused_on_a_warm_table() -> None:
    parser = _parser()
    parser.stream([1], True)
    for state in (1, 0, "yes"):
        with pytest.raises(InvalidOptionError):
            parser.stream([1], state)  # type: ignore[arg-type]


def test_numpy_ids_give_the_labels_of_python_ints() -> None:
    tok = tokenizer("qwen-3")
    parser = _parser()
    ids = tok.encode("<think>\nSome thought.\n</think>\n\nThe answer.")
    want = parser.parse(ids).labels
    for round_ in range(2):
        parser.reset()
        state = parser.default_reasoning
        got = b""
        for i, t in enumerate(ids):
            one = [np.int64(t)] if (i + round_) % 2 else [t]
            d = parser.stream(one, state)  # type: ignore[arg-type]
            state = d.is_still_reasoning
            got += d.labels
            assert all(type(x) is int for x in d.token_ids)
        got += parser.finish(state).labels
        assert got == want


def test_a_warm_table_never_answers_while_tokens_are_held() -> None:
    """kimi_k3's markers are text (``<|open|>think<|sep|>``), matched over several tokens:
    after a held ``<`` the ordinary tokens ``|``, ``open``, ``think`` belong to the run the
    matcher decides, even though each of them alone is in the table by then."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("kimi_k3", tok)
    text = "<|open|>think<|sep|>A thought.<|close|>think<|sep|>The answer."
    ids = tok.encode(text)
    want = parser.parse(ids)
    assert want.reasoning == "A thought." and want.content == "The answer."
    for t in ids:  # every ordinary one alone, in both states: the tables are warm
        for state in (True, False):
            parser.reset()
            parser.stream([t], state)
    parser.reset()
    state = parser.default_reasoning
    got_ids: list[int] = []
    got_labels = b""
    for t in ids:
        d = parser.stream([t], state)
        state = d.is_still_reasoning
        got_ids += d.token_ids
        got_labels += d.labels
    d = parser.finish(state)
    assert (got_ids + d.token_ids, got_labels + d.labels) == (want.token_ids, want.labels)
