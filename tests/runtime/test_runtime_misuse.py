"""An engine loop that misuses the runtime gets a clear error naming
what was wrong, and no other request is hurt: an invalid finish reason, finish() of an id
that is not open, a token id outside one request's vocabulary."""

from __future__ import annotations

import pytest

import reasonspan
from reasonspan.runtime import InvalidOptionError
from reasonspan.runtime.stream.runtime import (
    ReasoningRuntime,
    RequestNotOpenError,
    RequestStream,
    RequestTokenError,
)
from reasonspan.runtime.wire.openai import FINISH_REASONS
from tests.support.fixtures import tokenizer

TOK = tokenizer("qwen-3")
PROMPT = TOK.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


def parser() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("qwen3", TOK)


def drain(stream: RequestStream) -> tuple[str, str, str | None]:
    """Everything delivered so far: (reasoning, content, finish_reason)."""
    r, c, finish = "", "", None
    for chunk in stream.ready():
        for ch in chunk.choices:
            r += ch.delta.reasoning or ""
            c += ch.delta.content or ""
            finish = ch.finish_reason or finish
    return r, c, finish


def test_an_invalid_finish_reason_raises_and_changes_nothing() -> None:
    runtime = ReasoningRuntime()
    stream = runtime.add("req-1", parser(), PROMPT)
    ids = TOK.encode("<think>a</think>b")
    runtime.step([stream.engine_id], ids, [0, len(ids)])
    with pytest.raises(InvalidOptionError, match=r"finish_reason.*'max_tokens'.*'length'"):
        runtime.finish("req-1", "max_tokens")  # type: ignore[arg-type]
    assert "req-1" in runtime  # still open: the engine can finish it properly
    runtime.finish("req-1", "length")
    assert drain(stream) == ("a", "b", "length")


@pytest.mark.parametrize("reason", FINISH_REASONS)
def test_every_documented_finish_reason_is_accepted(reason: str) -> None:
    runtime = ReasoningRuntime()
    stream = runtime.add(1, parser(), PROMPT)
    runtime.finish(1, reason)  # type: ignore[arg-type]
    assert drain(stream)[2] == reason


@pytest.mark.parametrize("key", ["never-added", 12345])
def test_finish_of_an_id_never_added_raises(key: str | int) -> None:
    runtime = ReasoningRuntime()
    runtime.add("other", parser(), PROMPT)
    with pytest.raises(RequestNotOpenError, match=repr(key)):
        runtime.finish(key)


def test_finish_twice_raises_but_finish_after_the_runtime_ended_it_does_not() -> None:
    runtime = ReasoningRuntime()
    done = runtime.add("done", parser(), PROMPT)
    aborted = runtime.add("aborted", parser(), PROMPT)
    runtime.finish("done")
    with pytest.raises(RequestNotOpenError, match="'done'"):
        runtime.finish("done")
    with pytest.raises(RequestNotOpenError):
        runtime.finish(done.engine_id)
    # The runtime ended this one; the engine has not heard yet: its finish is no error.
    runtime.abort("aborted")
    runtime.finish("aborted")
    runtime.finish(aborted.engine_id)
    assert runtime.take_aborted() == [aborted.engine_id]


def test_a_bad_token_fails_only_its_request_and_names_the_callers_id() -> None:
    runtime = ReasoningRuntime()
    good = runtime.add("chatcmpl-good", parser(), PROMPT)
    bad = runtime.add("chatcmpl-bad", parser(), PROMPT)
    other = runtime.add(7, parser(), PROMPT)
    vocab = TOK.vocab_size
    ids = TOK.encode("<think>a</think>b")
    too_big = vocab + 10
    for t in ids:
        # The bad request gets an id past the vocabulary on every step (the first one
        # fails it; the later ones are late tokens of a failed request, dropped quietly).
        runtime.step(
            [good.engine_id, bad.engine_id, other.engine_id],
            [t, too_big, t],
            [0, 1, 2, 3],
        )
    assert runtime.take_aborted() == [bad.engine_id]
    assert "chatcmpl-bad" not in runtime and bad.engine_id not in runtime.batch
    with pytest.raises(RequestTokenError) as info:
        drain(bad)
    message = str(info.value)
    assert "'chatcmpl-bad'" in message and str(too_big) in message
    assert str(bad.engine_id) not in message  # the caller's id, not the engine's
    assert info.value.request_id == "chatcmpl-bad"
    runtime.finish(bad.engine_id)  # the engine finishing it later is no error
    runtime.finish("chatcmpl-good")
    runtime.finish(7)
    assert drain(good) == ("a", "b", "stop") == drain(other)


def test_bad_tokens_of_two_requests_in_one_step_fail_both_and_only_them() -> None:
    runtime = ReasoningRuntime()
    streams = [runtime.add(i, parser(), PROMPT) for i in range(4)]
    ids = TOK.encode("<think>a</think>b")
    # k tokens per request: requests 1 and 3 each have one negative id among theirs.
    toks = [*ids, *ids[:2], -1, *ids, ids[0], -5]
    offs = [0, len(ids), len(ids) + 3, 2 * len(ids) + 3, 2 * len(ids) + 5]
    runtime.step([0, 1, 2, 3], toks, offs)
    assert sorted(runtime.take_aborted()) == [1, 3]
    for i in (1, 3):
        with pytest.raises(RequestTokenError, match=f"request {i}: "):
            drain(streams[i])
    for i in (0, 2):
        runtime.finish(i)
        assert drain(streams[i]) == ("a", "b", "stop")
