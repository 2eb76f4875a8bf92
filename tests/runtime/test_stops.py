"""Stop strings in the runtime: matched on the content text, across
tokens and steps; the matched text and everything after it never sent; the request
finished with "stop" and its engine id handed to the engine to stop.

The expected text is built by the test: parse() of the whole output gives the content,
and a brute-force scan (every end position in order, the longest stop string first) finds
the first match, independently of the runtime's incremental matcher."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime import InvalidOptionError
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RequestStream
from reasonspan.runtime.stream.stops import StopMatcher
from reasonspan.runtime.wire.openai import ChatCompletionChunk
from tests.support.fixtures import tokenizer
from tests.support.strategies import splits

TOK = tokenizer("qwen-3")
PROMPT = TOK.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")

# Text pieces whose tokens cut stop strings in many places (a multi-byte character spans
# tokens; "Observation:" is several tokens and may merge with its neighbours).
PIECES = [
    "hello",
    " world",
    "\n",
    "\n\n",
    "END",
    "EN",
    "D",
    " the end",
    "Observation:",
    "Observ",
    "ation",
    "🙂",
    " 思考",
    "x",
    "###",
    "#",
]
STOPS = ["END", "\n\n", "Observation:", "🙂", "考", "the end", "x#", "##", "d\nh", "o w"]


def first_match(text: str, stops: list[str]) -> tuple[str, bool]:
    """The text before the first stop string to be complete (the longer one at a tie)."""
    by_length = sorted(stops, key=len, reverse=True)
    for end in range(1, len(text) + 1):
        for s in by_length:
            if end >= len(s) and text[end - len(s) : end] == s:
                return text[: end - len(s)], True
    return text, False


def chunks_of(
    runtime: ReasoningRuntime,
    stream: RequestStream,
    deltas: list[list[int]],
    *,
    finish: str = "stop",
) -> list[ChatCompletionChunk]:
    out: list[ChatCompletionChunk] = []
    for delta in deltas:
        # After a stop the engine may still send what was in flight: dropped quietly.
        runtime.step([stream.engine_id], np.array(delta, np.int64), [0, len(delta)])
        out += stream.ready()
    runtime.finish(stream.request_id, finish)  # type: ignore[arg-type]
    return out + stream.ready()


def summary(chunks: list[ChatCompletionChunk]) -> tuple[str, str, str | None]:
    r, c, finish = "", "", None
    for chunk in chunks:
        for ch in chunk.choices:
            r += ch.delta.reasoning or ""
            c += ch.delta.content or ""
            finish = ch.finish_reason or finish
    return r, c, finish


PARSERS = {
    "qwen3": reasonspan.create_parser_sync("qwen3", TOK),
    # reasoning held for the swap; a reasoning-only output becomes the content at finish
    "nemotron_v3-no-thinking": reasonspan.create_parser_sync(
        "nemotron_v3", TOK, {"enable_thinking": False}
    ),
}


@pytest.mark.parametrize("name", list(PARSERS))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    reasoning=st.lists(st.sampled_from(PIECES), max_size=6),
    closed=st.booleans(),
    content=st.lists(st.sampled_from(PIECES), max_size=12),
    stops=st.lists(st.sampled_from(STOPS), min_size=1, max_size=3),
    data=st.data(),
)
def test_any_split_into_steps_gives_the_text_up_to_the_first_match(
    name: str,
    reasoning: list[str],
    closed: bool,
    content: list[str],
    stops: list[str],
    data: st.DataObject,
) -> None:
    out = "<think>" + "".join(reasoning) + ("</think>" + "".join(content) if closed else "")
    ids = TOK.encode(out)
    parser = PARSERS[name]
    whole = parser.parse(ids)
    want_content, matched = first_match(whole.content or "", stops)
    deltas = data.draw(splits(ids), label="deltas")
    runtime = ReasoningRuntime()
    stream = runtime.add("r", parser, None, stop=stops)
    r, c, finish = summary(chunks_of(runtime, stream, deltas, finish="length"))
    # Reasoning is never cut, whatever stop strings it holds.
    assert r == (whole.reasoning or "")
    assert c == want_content
    assert finish == ("stop" if matched else "length")
    assert runtime.take_aborted() in ([], [stream.engine_id])
    assert len(runtime) == 0 and len(runtime.batch) == 0


def test_a_stop_string_split_across_tokens_and_steps() -> None:
    runtime = ReasoningRuntime()
    stream = runtime.add("chatcmpl-1", PARSERS["qwen3"], PROMPT, stop=["Observation:"])
    other = runtime.add("chatcmpl-2", PARSERS["qwen3"], PROMPT)
    answer = "Let me look.\nAction: search"
    rest = " the weather\nFinal."
    ids = TOK.encode("<think>plan Observation: here</think>" + answer + "\nObservation:" + rest)
    stop_ids = TOK.encode("\nObservation:")
    assert len(stop_ids) > 1  # the stop string spans tokens
    # One token per step for both requests until the first stops.
    aborted: list[int] = []
    for t in ids:
        rows = [stream.engine_id, other.engine_id]
        runtime.step(rows, [t, t], [0, 1, 2])
        aborted += runtime.take_aborted()
    assert aborted == [stream.engine_id]  # told once, as soon as the match completed
    assert "chatcmpl-1" not in runtime  # finished by the runtime; later tokens dropped
    runtime.finish("chatcmpl-1")  # the engine's own finish, late: no error
    runtime.finish("chatcmpl-2")
    r, c, finish = summary(stream.ready())
    assert (r, c, finish) == ("plan Observation: here", answer + "\n", "stop")
    assert stream.usage is not None  # usage counts what the engine sent until the match
    assert stream.usage.completion_tokens <= len(ids)
    assert summary(other.ready()) == (
        "plan Observation: here",
        answer + "\nObservation:" + rest,
        "stop",
    )


def test_several_tokens_in_one_step_are_cut_at_the_match() -> None:
    runtime = ReasoningRuntime()
    stream = runtime.add(1, PARSERS["qwen3"], PROMPT, stop="END")
    ids = TOK.encode("<think>a</think>one two END three four")
    runtime.step([1], ids, [0, len(ids)])
    assert runtime.take_aborted() == [1]
    assert summary(stream.ready()) == ("a", "one two ", "stop")


def test_the_match_may_complete_only_when_the_engine_finishes() -> None:
    # nemotron_v3 with thinking off holds reasoning-only output: it is the content at the
    # end, and the stop string in it applies then.
    runtime = ReasoningRuntime()
    stream = runtime.add(1, PARSERS["nemotron_v3-no-thinking"], None, stop=["STOP"])
    ids = TOK.encode("<think>Answer: yes STOP and more")
    for t in ids:
        runtime.step([1], [t], [0, 1])
    assert runtime.take_aborted() == []  # reasoning so far: not matched
    runtime.finish(1, "length")
    assert summary(stream.ready()) == ("", "Answer: yes ", "stop")


@pytest.mark.parametrize("bad", ["", [""], ["ok", 3], 7, {"a": 1}])
def test_invalid_stop_is_refused_and_nothing_is_kept(bad: Any) -> None:
    runtime = ReasoningRuntime()
    with pytest.raises(InvalidOptionError, match="'stop'"):
        runtime.add(1, PARSERS["qwen3"], PROMPT, stop=bad)
    assert len(runtime) == 0 and len(runtime.batch) == 0


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="ab\n🙂", max_size=30),
    stops=st.lists(st.text(alphabet="ab\n🙂", min_size=1, max_size=4), min_size=1, max_size=3),
    data=st.data(),
)
def test_the_matcher_over_any_cut_of_the_text(
    text: str, stops: list[str], data: st.DataObject
) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    matcher = StopMatcher(stops)
    sent = ""
    hit = False
    prev = 0
    for cut in [*cuts, len(text)]:
        piece, hit = matcher.feed(text[prev:cut])
        sent += piece
        prev = cut
        if hit:
            break
    if not hit:
        sent += matcher.flush()
    assert (sent, hit) == first_match(text, stops)
