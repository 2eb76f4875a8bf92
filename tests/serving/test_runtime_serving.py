"""ReasoningRuntime as a server embeds it: string ids, the engine's finish reason, abort,
late tokens, threads, failure of the engine loop, special tokens, collect()."""

from __future__ import annotations

import threading

import anyio
import numpy as np
import pytest

import reasonspan
from reasonspan.runtime.stream.runtime import (
    STEP_HISTORY,
    DuplicateRequestIdError,
    ReasoningRuntime,
    RequestCancelledError,
    RequestStream,
    RuntimeClosedError,
)
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

PROMPT = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def qwen() -> tuple[reasonspan.LoadedTokenizer, reasonspan.ReasoningParser]:
    tok = tokenizer("qwen-3")
    return tok, reasonspan.create_parser_sync("qwen3", tok)


def feed(runtime: ReasoningRuntime, engine_ids: list[int], ids: list[int]) -> None:
    """One token per request per step, all requests in lockstep."""
    for t in ids:
        n = len(engine_ids)
        runtime.step(np.array(engine_ids), np.full(n, t), np.arange(n + 1))


async def texts(stream: RequestStream) -> tuple[str, str, str | None]:
    r, c, finish = "", "", None
    async for chunk in stream:
        for ch in chunk.choices:
            r += ch.delta.reasoning or ""
            c += ch.delta.content or ""
            finish = ch.finish_reason or finish
    return r, c, finish


async def test_stop_inside_reasoning_keeps_the_engines_finish_reason() -> None:
    tok, parser = qwen()
    runtime = ReasoningRuntime()
    stream = runtime.add(1, parser, tok.encode(PROMPT))
    feed(runtime, [1], tok.encode("<think>still thinking when the model emits EOS"))
    runtime.finish(1, "stop")
    r, c, finish = await texts(stream)
    assert finish == "stop"  # the model stopped on its own: not "length"
    assert stream.usage is not None and stream.usage.reasoning_ended is False
    assert (r, c) == ("still thinking when the model emits EOS", "")


async def test_length_and_a_normal_stop_report_reasoning_ended() -> None:
    tok, parser = qwen()
    runtime = ReasoningRuntime()
    a = runtime.add(1, parser, tok.encode(PROMPT))
    b = runtime.add(2, parser, tok.encode(PROMPT))
    feed(runtime, [1, 2], tok.encode("<think>x</think>y"))
    runtime.finish(1, "length")
    runtime.finish(2, "stop")
    assert (await texts(a))[2] == "length" and (await texts(b))[2] == "stop"
    assert a.usage is not None and a.usage.reasoning_ended is True
    assert b.usage is not None and b.usage.reasoning_ended is True


@pytest.mark.parametrize("timed", [False, True])
def test_step_history_is_bounded(timed: bool) -> None:
    """Steps are counted; with ``time_steps`` the most recent ones are timed too (one
    request alone and two requests take different paths: both are)."""
    tok, parser = qwen()
    runtime = ReasoningRuntime(time_steps=timed)
    runtime.add(1, parser, tok.encode(PROMPT))
    word = tok.encode(" word")[0]
    for _ in range(STEP_HISTORY + 50):
        runtime.step(np.array([1]), np.array([word]), np.array([0, 1]))
    runtime.add(2, parser, tok.encode(PROMPT))
    runtime.step(np.array([1, 2]), np.array([word, word]), np.array([0, 1, 2]))
    assert len(runtime.step_ns) == (STEP_HISTORY if timed else 0)
    assert all(ns > 0 for ns in runtime.step_ns)
    assert runtime.steps == STEP_HISTORY + 51


async def test_string_ids_chunk_id_and_model_come_from_the_request() -> None:
    tok, parser = qwen()
    runtime = ReasoningRuntime(model="default-model")
    a = runtime.add("chatcmpl-abc", parser, tok.encode(PROMPT), model="m-a")
    b = runtime.add("9f1c2d3e-uuid", parser, tok.encode(PROMPT), completion_id="chatcmpl-b")
    assert isinstance(a.engine_id, int) and a.engine_id != b.engine_id
    assert runtime.stream_of("chatcmpl-abc") is not None
    feed(runtime, [a.engine_id, b.engine_id], tok.encode("<think>r</think>c"))
    runtime.finish("chatcmpl-abc")
    runtime.finish(b.engine_id)  # the engine may name a request by its engine id
    chunks_a = [ch async for ch in a]
    chunks_b = [ch async for ch in b]
    assert {(ch.id, ch.model) for ch in chunks_a} == {("chatcmpl-abc", "m-a")}
    assert {(ch.id, ch.model) for ch in chunks_b} == {("chatcmpl-b", "default-model")}
    assert len(runtime) == 0 and len(runtime.batch) == 0


async def test_abort_frees_the_slot_at_once_and_the_id_can_be_reused() -> None:
    tok, parser = qwen()
    runtime = ReasoningRuntime()
    stream = runtime.add("req", parser, tok.encode(PROMPT))
    old_engine_id = stream.engine_id
    assert runtime.abort("req") is True
    assert len(runtime.batch) == 0 and "req" not in runtime  # no step needed
    assert runtime.take_aborted() == [old_engine_id]
    with pytest.raises(RequestCancelledError, match="aborted"):
        async for _ in stream:
            pass
    again = runtime.add("req", parser, tok.encode(PROMPT))
    assert again.engine_id != old_engine_id
    assert runtime.abort("never-added") is False


async def test_a_cancelled_consumer_frees_its_slot_without_a_step() -> None:
    tok, parser = qwen()
    runtime = ReasoningRuntime()
    stream = runtime.add(1, parser, tok.encode(PROMPT))
    with anyio.move_on_after(0.05):
        async for _chunk in stream:
            pass  # waits for chunks that never come; the scope cancels it
    assert 1 not in runtime.batch and len(runtime) == 0
    assert runtime.take_aborted() == [1]


def test_abort_notices_an_engine_never_takes_are_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An engine that never calls take_aborted() does not make the runtime grow without
    bound: the oldest notices go past the runtime's memory of ended requests; an int id
    added again is taken out of the notices at once (its engine stopped the old request)."""
    from reasonspan.runtime.stream import engine_ids

    monkeypatch.setattr(engine_ids, "GONE_MEMORY", 4)
    tok, parser = qwen()
    runtime = ReasoningRuntime()
    for rid in range(10):
        runtime.add(rid, parser, tok.encode(PROMPT))
        assert runtime.abort(rid)
    runtime.add(8, parser, tok.encode(PROMPT))  # reused: its old notice is not sent
    assert runtime.take_aborted() == [6, 7, 9]
    assert runtime.take_aborted() == []


@pytest.mark.parametrize("rid", ["chatcmpl-1", 77])
async def test_reusing_the_id_of_a_cancelled_request_delivers_every_token(rid: str | int) -> None:
    tok, parser = qwen()
    runtime = ReasoningRuntime()
    first = runtime.add(rid, parser, tok.encode(PROMPT))
    async with first:
        async for _chunk in first:
            break  # the client hangs up
    assert runtime.take_aborted() == [first.engine_id]
    second = runtime.add(rid, parser, tok.encode(PROMPT))
    out = tok.encode("<think>plan</think>The answer.")
    feed(runtime, [second.engine_id], out)
    runtime.finish(rid)
    r, c, _ = await texts(second)
    assert (r, c) == ("plan", "The answer.")
    assert second.usage is not None and second.usage.completion_tokens == len(out)


def test_add_with_a_bad_parser_leaves_nothing_behind() -> None:
    tok, parser = qwen()
    runtime = ReasoningRuntime()
    with pytest.raises(TypeError, match="ReasoningParser, not NoneType"):
        runtime.add(5, None, tok.encode(PROMPT))  # type: ignore[arg-type]
    with pytest.raises(reasonspan.InvalidOptionError, match="thinking_token_budget"):
        runtime.add(5, parser, tok.encode(PROMPT), thinking_token_budget=-1)
    with pytest.raises(reasonspan.InvalidTokenError, match="prompt"):
        runtime.add("s", parser, ["<think>"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        runtime.add("t", parser, 42)  # type: ignore[arg-type]
    assert len(runtime) == 0 and len(runtime.batch) == 0
    # No prompt at all is allowed: the family's default start state, 0 prompt tokens.
    none = runtime.add(6, parser, None)
    feed(runtime, [6], tok.encode("<think>a</think>b"))
    runtime.finish(6)
    assert none.usage is not None and none.usage.prompt_tokens == 0
    runtime.add(5, parser, tok.encode(PROMPT))
    with pytest.raises(DuplicateRequestIdError, match="still open"):
        runtime.add(5, parser, tok.encode(PROMPT))
    assert len(runtime) == 1


async def test_late_tokens_of_an_aborted_request_are_dropped_quietly() -> None:
    tok, parser = qwen()
    runtime = ReasoningRuntime()
    keep = runtime.add(1, parser, tok.encode(PROMPT))
    runtime.add(2, parser, tok.encode(PROMPT))
    runtime.abort(2)
    out = tok.encode("<think>a</think>b c d")
    # Step 1: the engine leaves the aborted id out; step 2 onward: a late token arrives.
    runtime.step(np.array([1]), np.array(out[:1]), np.array([0, 1]))
    for t in out[1:]:
        runtime.step(np.array([2, 1]), np.array([t, t]), np.array([0, 1, 2]))
    runtime.finish(1)
    assert (await texts(keep))[:2] == ("a", "b c d")
    with pytest.raises(reasonspan.ReasonspanError, match="not in the batch"):
        runtime.step(np.array([3]), np.array(out[:1]), np.array([0, 1]))  # never added


async def test_fail_ends_every_open_stream() -> None:
    tok, parser = qwen()
    runtime = ReasoningRuntime()
    streams = [runtime.add(i, parser, tok.encode(PROMPT)) for i in range(3)]
    feed(runtime, [0, 1, 2], tok.encode("<think>half"))
    runtime.finish(0)
    cause = RuntimeError("GPU fell off the bus")
    runtime.fail(cause)
    assert len(runtime) == 0 and len(runtime.batch) == 0
    assert (await texts(streams[0]))[2] == "stop"  # finished before: unaffected
    for s in streams[1:]:
        with pytest.raises(RuntimeClosedError, match="engine failed") as info:
            await texts(s)
        assert info.value.__cause__ is cause
    with pytest.raises(RuntimeClosedError):
        runtime.add(9, parser, tok.encode(PROMPT))


async def test_close_wakes_a_waiting_consumer() -> None:
    tok, parser = qwen()
    runtime = ReasoningRuntime()
    stream = runtime.add(1, parser, tok.encode(PROMPT))
    got: list[BaseException] = []

    async def consume() -> None:
        try:
            await texts(stream)
        except RuntimeClosedError as exc:
            got.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.sleep(0.01)
            runtime.close()
    assert len(got) == 1


async def test_an_engine_thread_feeds_the_runtime_through_the_portal() -> None:
    """The engine loop runs on its own thread and nothing else wakes the event loop: each
    chunk still reaches the consumer promptly."""
    tok, parser = qwen()
    runtime = ReasoningRuntime()
    out = tok.encode("<think>thinking on a thread</think>answered")
    streams = [runtime.add(f"r{i}", parser, tok.encode(PROMPT)) for i in range(4)]
    eids = [s.engine_id for s in streams]
    received: list[float] = []

    def engine(link: reasonspan.runtime.stream.runtime.RuntimeFromThread) -> None:
        for t in out:
            link.step(np.array(eids), np.full(len(eids), t), np.arange(len(eids) + 1))
        for eid in eids:
            link.finish(eid, "stop")

    results: dict[int, tuple[str, str, str | None]] = {}

    async def consume(i: int) -> None:
        results[i] = await texts(streams[i])
        received.append(1.0)

    with anyio.fail_after(10):
        async with runtime.from_thread() as link, anyio.create_task_group() as tg:
            for i in range(4):
                tg.start_soon(consume, i)
            thread = threading.Thread(target=engine, args=(link,))
            thread.start()
            await anyio.to_thread.run_sync(thread.join)
    assert all(v == ("thinking on a thread", "answered", "stop") for v in results.values())
    assert len(runtime) == 0


async def test_special_tokens_are_skipped_except_the_markers_the_family_keeps() -> None:
    tok, parser = qwen()
    runtime = ReasoningRuntime()
    out = tok.encode("<think>r</think>answer<|im_end|>")
    a = runtime.add(1, parser, tok.encode(PROMPT))
    b = runtime.add(2, parser, tok.encode(PROMPT), skip_special_tokens=False)
    feed(runtime, [1, 2], out)
    runtime.finish(1)
    runtime.finish(2)
    assert (await texts(a))[1] == "answer"
    assert (await texts(b))[1] == "answer<|im_end|>"
    # Kimi K3's tool marker is made of special tokens: it stays in the content.
    k3 = tokenizer(FAMILY_TOKENIZERS["kimi_k3"])
    p3 = reasonspan.create_parser_sync("kimi_k3", k3)
    s3 = runtime.add(3, p3, [])
    ids = k3.encode('<|open|>think<|sep|>hm<|close|>think<|sep|>ok<|open|>tools<|sep|>{"a": 1}')
    feed(runtime, [3], ids)
    runtime.finish(3)
    r, c, _ = await texts(s3)
    assert (r, c) == ("hm", 'ok<|open|>tools<|sep|>{"a": 1}')


async def test_collect_returns_the_chat_completion() -> None:
    tok, parser = qwen()
    runtime = ReasoningRuntime(reasoning_content_alias=True)
    stream = runtime.add("c1", parser, tok.encode(PROMPT), model="qwen")
    out = tok.encode("<think>why</think>because")
    feed(runtime, [stream.engine_id], out)
    runtime.finish("c1", "stop")
    done = await stream.collect()
    msg = done.choices[0].message
    assert (msg.reasoning, msg.reasoning_content, msg.content) == ("why", "why", "because")
    assert (done.id, done.model, done.choices[0].finish_reason) == ("c1", "qwen", "stop")
    assert done.usage.completion_tokens == len(out)
    assert done.usage.completion_tokens_details.reasoning_tokens == len(tok.encode("why"))


def test_importing_reasonspan_pulls_in_no_asgi_stack() -> None:
    import subprocess
    import sys

    code = (
        "import sys, reasonspan, reasonspan.serving, reasonspan.serving.engine; "
        "print(sorted(m for m in ('starlette', 'uvicorn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_readme_runtime_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """README item: the runtime example runs as written (only the model path changes)."""
    import re
    from pathlib import Path

    from tests.support.fixtures import folder

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- example: runtime -->\n```python\n(.*?)```", readme, re.S)
    assert m is not None, "the README lost its runtime example"
    code = m.group(1).replace('"path/to/model"', repr(str(folder("qwen-3"))))
    exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    events = [e for e in out.split("\n\n") if e]
    assert events[-1] == "data: [DONE]"
    import json

    chunks = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("reasoning", "") for d in deltas) == "Two and two."
    assert "".join(d.get("content", "") for d in deltas) == "4"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["reasoning_ended"] is True


async def test_each_step_from_a_thread_is_delivered_before_the_next() -> None:
    """A handshake: the engine thread waits for the consumer to receive each step's text
    before it steps again. Were delivery to wait for something else to wake the event
    loop, the first wait would time out."""
    tok, parser = qwen()
    runtime = ReasoningRuntime()
    out = tok.encode("<think>one two three four</think> five six")
    stream = runtime.add("hs", parser, tok.encode(PROMPT))
    eid = stream.engine_id
    seen = threading.Event()
    timeouts: list[int] = []
    # Which steps release text: tokens labelled reasoning or content (markers do not).
    labels = parser.parse(out, prompt_token_ids=tok.encode(PROMPT)).labels
    texts_at = [lab in (reasonspan.Label.REASONING, reasonspan.Label.CONTENT) for lab in labels]

    def engine(link: reasonspan.runtime.stream.runtime.RuntimeFromThread) -> None:
        for i, t in enumerate(out):
            seen.clear()
            link.step(np.array([eid]), np.array([t]), np.array([0, 1]))
            if texts_at[i] and not seen.wait(5):
                timeouts.append(i)
        link.finish(eid, "stop")

    text: list[str] = []
    with anyio.fail_after(20):
        async with runtime.from_thread() as link:
            thread = threading.Thread(target=engine, args=(link,))
            thread.start()
            async for chunk in stream:
                d = chunk.choices[0].delta
                if d.reasoning or d.content:
                    text.append((d.reasoning or "") + (d.content or ""))
                seen.set()
            await anyio.to_thread.run_sync(thread.join)
    assert timeouts == []
    assert "".join(text) == "one two three four five six"
