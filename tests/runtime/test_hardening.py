"""Adversarial suite: bad input at every public entry point, the all-or-nothing
step, leak checks for add/remove churn and tokenizer reloads, and one regression test per
hardening item.

CI-sized by default; ``pytest --long`` (or ``REASONSPAN_LONG=1``) runs every case of the
``sampled`` tests and widens the others (see ``tests/support/sampling.py``).
"""

from __future__ import annotations

import asyncio
import gc
import random
import subprocess
import sys
import tracemalloc
import weakref
from functools import cache
from typing import Any

import msgspec
import numpy as np
import pytest

import reasonspan
from reasonspan import ReasoningBatch, ReasoningParser
from reasonspan.cli import main as cli_main
from reasonspan.runtime import InvalidOptionError, InvalidTokenError
from reasonspan.runtime.batch.errors import BatchTokenError
from reasonspan.tokenizer import load_tokenizer_sync
from tests.support.fixtures import FAMILY_TOKENIZERS, folder, tokenizer
from tests.support.sampling import long_run

LONG = long_run()


@cache
def _parser(family: str, kwargs: tuple[tuple[str, Any], ...] = ()) -> ReasoningParser:
    return reasonspan.create_parser_sync(family, tokenizer(FAMILY_TOKENIZERS[family]), dict(kwargs))


def parser(family: str, **kwargs: Any) -> ReasoningParser:
    return _parser(family, tuple(sorted(kwargs.items())))


def fresh(family: str, **kwargs: Any) -> ReasoningParser:
    p = parser(family, **kwargs)
    return type(p).create(p.tokenizer, p.chat_template_kwargs)


def end_id(p: ReasoningParser) -> int:
    ids = p.end_marker_token_ids()
    assert len(ids) == 1
    return ids[0]


FAMILIES = sorted(FAMILY_TOKENIZERS)
STATEFUL = ["olmo3", "granite", "openai_gptoss", "kimi_k3", "nemotron_v3"]

# Values that are not token ids, each of which a lax conversion would turn into one.
NOT_IDS: list[Any] = ["151668", 151668.0, True, False, [151668], None, 2**70, -1]


# ---------------------------------------------------------------------------- item 1: prompts


@pytest.mark.parametrize("family", ["qwen3", "minimax_m3", "gemma4", "openai_gptoss"])
@pytest.mark.parametrize("bad", NOT_IDS, ids=repr)
def test_prompt_ids_validated_beyond_the_tail(family: str, bad: Any) -> None:
    # The bad id sits far before the last 64 tokens, in text the scan must read (no turn
    # start or marker after it), so a lax conversion would read it as a marker.
    p = parser(family, **({"enable_thinking": True} if family == "gemma4" else {}))
    filler = p.tokenizer.encode("plain words without any marker " * 40)[:300]
    prompt = [bad, *filler]
    with pytest.raises(InvalidTokenError) as info:
        p.is_prompt_in_reasoning(prompt)
    assert "prompt_token_ids[0]" in str(info.value)
    assert repr(bad) in str(info.value)


def test_prompt_str_end_marker_never_seeds_outside_reasoning() -> None:
    # "151668" is qwen3's </think> as a string: it must not end the prompt's reasoning.
    p = parser("qwen3")
    tid = str(end_id(p))
    prompt = [*p.tokenizer.encode("<think>\n"), tid, *p.tokenizer.encode("thinking " * 100)]
    with pytest.raises(InvalidTokenError):
        p.is_prompt_in_reasoning(prompt)
    batch = ReasoningBatch(2)
    with pytest.raises(InvalidTokenError):
        batch.add(1, p, prompt)
    assert len(batch) == 0


def test_prompt_uint64_shown_as_given() -> None:
    p = parser("qwen3")
    filler = p.tokenizer.encode("plain words " * 100)[:100]
    arr = np.array([2**64 - 1, *filler], np.uint64)
    with pytest.raises(InvalidTokenError) as info:
        p.is_prompt_in_reasoning(arr)
    assert str(2**64 - 1) in str(info.value)


# ---------------------------------------------------------------------------- item 2: add


def test_failed_adds_leave_the_batch_as_it_was() -> None:
    p = parser("qwen3")
    batch = ReasoningBatch(4)
    batch.add(1, p, [])
    bad_adds: list[dict[str, Any]] = [
        {"thinking_token_budget": 2**63},
        {"thinking_token_budget": 2**63 - 1},
        {"thinking_token_budget": np.uint64(2**64 - 1)},
        {"thinking_token_budget": -1},
        {"thinking_token_budget": 1.5},
        {"budget_lead_in": "x"},
        {"include_reasoning": 1},
        {"prompt_token_ids": [True]},
        {"prompt_token_ids": [[1]]},
    ]
    for i in range(1000):
        kw = dict(bad_adds[i % len(bad_adds)])
        prompt = kw.pop("prompt_token_ids", [])
        with pytest.raises((InvalidOptionError, InvalidTokenError)):
            batch.add(2 + i, p, prompt, **kw)
    assert batch.capacity == 4
    assert batch.request_ids() == [1]
    # The batch still works, and the ids refused above are free.
    batch.add(2, p, [])
    res = batch.step([1, 2], [5, 6], [0, 1, 2])
    assert res.labels.tolist() == [reasonspan.Label.CONTENT] * 2 or len(res.labels) == 2


# ---------------------------------------------------------------------------- item 3: atomic


class _Boom(BaseException):
    pass


def _run_batch(interrupt_at: int | None, exc: type[BaseException]) -> list[Any]:
    """Four requests (table, hold-back and custom-machine families) stepped together; at
    step ``interrupt_at`` one parser raises ``exc``; the step is retried afterwards."""
    fams = ["qwen3", "minimax_m3", "openai_gptoss", "olmo3"]
    batch = ReasoningBatch(4)
    outs = []
    for rid, fam in enumerate(fams):
        p = parser(fam)
        text = "<think>a b c</think>done" if fam != "openai_gptoss" else "hello there"
        outs.append(p.tokenizer.encode(text * 3))
        batch.add(rid, p, [], thinking_token_budget=4 if fam == "qwen3" else None)
    victim = 2  # openai_gptoss: a custom machine, so its parser sees every token
    got: list[Any] = []
    steps = min(len(o) for o in outs)
    for s in range(0, steps, 2):
        toks = [o[s : s + 2] for o in outs]
        flat = [t for ts in toks for t in ts]
        offs = np.cumsum([0] + [len(t) for t in toks]).tolist()
        if s == interrupt_at:
            sl = batch._slots
            ps = sl.parsers[sl.slot_of[victim]]
            assert ps is not None
            real = ps.stream

            def boom(*a: Any, **k: Any) -> Any:
                raise exc()

            ps.stream = boom  # type: ignore[method-assign]
            with pytest.raises(exc):
                batch.step(list(range(4)), flat, offs)
            del ps.stream
            assert ps.stream == real
        res = batch.step(list(range(4)), flat, offs)
        got.append((res.labels.tolist(), res.is_reasoning.tolist(), res.forcing.tolist()))
        got.append([batch.usage(r) for r in range(4)])
    got.append([tuple(batch.finish(r)) for r in range(4)])
    return got


@pytest.mark.parametrize("exc", [KeyboardInterrupt, asyncio.CancelledError, _Boom])
@pytest.mark.parametrize("seed", range(6 if not LONG else 40))
def test_step_is_all_or_nothing_on_base_exceptions(exc: type[BaseException], seed: int) -> None:
    at = 2 * random.Random(seed).randrange(0, 6)
    assert _run_batch(at, exc) == _run_batch(None, exc)


# ---------------------------------------------------------------------------- item 4: tokens


@pytest.mark.parametrize(
    "tokens",
    [[5, True], [5, 1.0], [5, "6"], [5, [6]], [5, None], np.array([5, 2**63 + 5], np.uint64)],
    ids=repr,
)
def test_batch_validates_tokens_as_stream_does(tokens: Any) -> None:
    p = parser("qwen3")
    with pytest.raises(InvalidTokenError) as ref:
        fresh("qwen3").stream(tokens)
    batch = ReasoningBatch(2)
    batch.add(7, p, [])
    with pytest.raises(BatchTokenError) as info:
        batch.step([7], tokens, [0, 2])
    assert "request 7" in str(info.value)
    given = tokens[1].item() if isinstance(tokens, np.ndarray) else tokens[1]
    assert f"= {given!r}" in str(info.value)
    assert f"= {given!r}" in str(ref.value)
    assert batch.usage(7).completion_tokens == 0


# ---------------------------------------------------------------------------- item 5: gemma4


@pytest.mark.parametrize("kwargs", [{}, {"enable_thinking": True}])
@pytest.mark.parametrize(
    "prompt",
    [
        "<|turn>user\n<|think|>Hi<turn|>\n<|turn>model\n",
        "<|turn>system\nBe brief.<turn|>\n<|turn>user\n<|think|><turn|>\n<|turn>model\n",
        "<|turn>user\nsystem\n<|think|><turn|>\n<|turn>model\n",
    ],
)
def test_gemma4_think_in_a_user_turn_never_seeds(prompt: str, kwargs: dict[str, Any]) -> None:
    # A <|think|> a user typed is text, not the switch: the turn starts where a prompt
    # without it starts.
    p = parser("gemma4", **kwargs)
    plain = prompt.replace("<|think|>", "")
    got = p.is_prompt_in_reasoning(p.tokenizer.encode(prompt))
    assert got is p.is_prompt_in_reasoning(p.tokenizer.encode(plain)) is False


# ---------------------------------------------------------------------------- item 6: leaks


def test_batch_releases_machines_and_tokenizers_of_removed_requests() -> None:
    path = folder(FAMILY_TOKENIZERS["qwen3"])
    batch = ReasoningBatch(4)
    keep = parser("qwen3")
    batch.add(0, keep, [])  # a family that stays, so its group must survive the repack
    refs = []
    for i in range(3):
        tok = load_tokenizer_sync(path)
        p = reasonspan.create_parser_sync("minimax_m3" if i == 1 else "qwen3", tok)
        refs.append(weakref.ref(tok))
        batch.add(1, p, [])
        batch.step([0, 1], [5, 6], [0, 1, 2])
        batch.remove(1)
        del tok, p
    gc.collect()
    assert [r() for r in refs] == [None, None, None]
    # The remaining request still routes by its own table after the repacks.
    e = end_id(keep)
    res = batch.step([0], [e], [0, 1])
    assert res.is_reasoning.tolist() == [False]


def test_raw_tokenizer_is_not_rebuilt_per_request() -> None:
    raw = tokenizer(FAMILY_TOKENIZERS["qwen3"]).tokenizer
    a = reasonspan.create_parser_sync("qwen3", raw)
    b = reasonspan.create_parser_sync("qwen3", raw)
    assert a.tokenizer is b.tokenizer and a.machine is b.machine


def test_add_remove_churn_does_not_grow_memory() -> None:
    p = parser("qwen3")
    m = parser("minimax_m3")
    batch = ReasoningBatch(8)

    def churn(n: int) -> None:
        for i in range(n):
            batch.add(i, p if i % 2 else m, [], thinking_token_budget=3, budget_lead_in="ok")
            batch.step([i], [5, 6], [0, 2])
            batch.remove(i)

    churn(200)  # warm caches
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    churn(2000 if LONG else 500)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert after - before < 64 * 1024, after - before


# ---------------------------------------------------------------------------- item 7: forced


def test_memory_per_request_does_not_depend_on_another_requests_lead_in() -> None:
    p = parser("qwen3")
    batch = ReasoningBatch(1024)
    long_lead = "wait " * 5000
    batch.add(0, p, [], thinking_token_budget=1, budget_lead_in=long_lead)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(1, 200):
        batch.add(i, p, [], thinking_token_budget=1, budget_lead_in="ok")
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    # 199 short requests: far from 199 x 5000 ids (8 MB) of a lead-in-wide matrix.
    assert grown < 1024 * 1024, grown
    assert batch.forced_token_ids(0) == []
    res = batch.step([0], [5], [0, 1])
    assert res.forced_token_ids(0)[-1] == end_id(p)
    assert len(res.forced_token_ids(0)) == len(p.tokenizer.encode(long_lead)) + 1
    batch.remove(0)
    for i in range(1, 200):
        batch.remove(i)
    assert batch._slots.fpool.nbytes < 64 * 1024  # the long lead-in's space is given back


# ---------------------------------------------------------------------------- item 8: CLI


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli_main(argv)
    err = capsys.readouterr().err
    return code, err


def test_cli_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    tok = str(folder(FAMILY_TOKENIZERS["qwen3"]))
    code, err = _cli(
        ["split", "--tokenizer", tok, "--parser", "qwen3", "--text", "a\udcffb"], capsys
    )
    assert code == 2 and err.count("\n") == 1 and "not valid UTF-8" in err
    code, err = _cli(
        ["bench", "--tokenizer", tok, "--json", str(tmp_path / "no" / "x.json")], capsys
    )
    assert code == 2 and err.count("\n") == 1 and "does not exist" in err
    code, err = _cli(["demo", "--parser", "qwen3"], capsys)
    assert code == 2 and "--tokenizer" in err


def test_cli_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli_main(["--help"])
    out = capsys.readouterr().out
    for code in ("0 ", "1 ", "2 ", "3 ", "130", "141"):
        assert f"\n  {code}" in out


def test_cli_broken_pipe_is_quiet() -> None:
    tok = str(folder(FAMILY_TOKENIZERS["qwen3"]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "reasonspan", "detect", tok, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away before anything is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and err == ""


# ---------------------------------------------------------------------------- item 9: ints


@pytest.mark.parametrize("family", ["qwen3", "minimax_m3", "openai_gptoss"])
def test_numpy_scalar_ids_become_python_ints(family: str) -> None:
    p = fresh(family)
    ids = [np.int64(t) for t in p.tokenizer.encode("<think>x</think>y")] + [np.uint32(5)]
    res = p.parse(ids, prompt_token_ids=[np.int32(5)])
    assert all(
        type(t) is int for t in res.token_ids + res.reasoning_token_ids + res.content_token_ids
    )
    msgspec.json.encode(res)
    d = p.stream(ids)
    assert all(type(t) is int for t in d.token_ids)
    msgspec.json.encode(d.token_ids)


# ---------------------------------------------------------------------------- item 10: options


def test_reasoning_flag_none_means_tracked_state_everywhere() -> None:
    p = fresh("qwen3")
    e = end_id(p)
    assert p.stream([e], True).is_still_reasoning is False
    d = p.stream([5], None)  # the tracked state: content now, not "not reasoning" by luck
    assert d.content_token_ids == [5]
    q = fresh("qwen3")
    q.stream([5], True)
    assert q.stream([6], None).reasoning_token_ids == [6]  # tracked: still reasoning
    for bad in ("yes", 1, 0.0, []):
        with pytest.raises(InvalidOptionError):
            p.stream([5], bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidOptionError):
            p.finish(bad)  # type: ignore[arg-type]


def test_minimax_m3_thinking_mode_values() -> None:
    for mode in ("enabled", "adaptive", "disabled"):
        parser("minimax_m3", thinking_mode=mode)
    with pytest.raises(InvalidOptionError) as info:
        reasonspan.create_parser_sync(
            "minimax_m3", parser("minimax_m3").tokenizer, {"thinking_mode": "enabeld"}
        )
    assert '"enabled", "adaptive" or "disabled"' in str(info.value)


@pytest.mark.parametrize(
    ("family", "typo", "meant"),
    [
        ("qwen3", "enable_thinkng", "enable_thinking"),
        ("deepseek_v3", "thinkng", "thinking"),
        ("minimax_m3", "thinking_mod", "thinking_mode"),
    ],
)
def test_near_miss_kwargs_are_refused(family: str, typo: str, meant: str) -> None:
    tok = parser(family).tokenizer
    with pytest.raises(InvalidOptionError) as info:
        reasonspan.create_parser_sync(family, tok, {typo: True})
    assert repr(meant) in str(info.value)
    # Keys meant for the chat template pass.
    reasonspan.create_parser_sync(
        family, tok, {"tools": [], "add_generation_prompt": True, "custom_var": 1}
    )


# ---------------------------------------------------------------------------- bad input, everywhere


@pytest.mark.sampled(every=3)
@pytest.mark.parametrize("family", FAMILIES)
def test_bad_ids_at_every_entry_point_change_nothing(family: str) -> None:
    p = fresh(family)
    good = p.tokenizer.encode("<think>a</think>b")
    vocab = p.machine.vocab_size
    bad_values: list[Any] = [*NOT_IDS, vocab, np.uint64(2**63 + 1)]
    ref = fresh(family)
    want = [ref.stream([t]) for t in good] + [ref.finish()]
    for bad in bad_values:
        for where, call in (
            ("delta_token_ids", lambda b=bad: p.stream([good[0], b])),
            ("output_token_ids", lambda b=bad: p.parse([good[0], b])),
            ("prompt_token_ids", lambda b=bad: p.is_prompt_in_reasoning([b, *good])),
        ):
            with pytest.raises(InvalidTokenError) as info:
                call()
            assert where in str(info.value)
    batch = ReasoningBatch(2)
    batch.add(1, p, [])
    for bad in bad_values:
        toks: Any = [good[0], bad]
        with pytest.raises((InvalidTokenError, ValueError)):
            batch.step([1], toks, [0, 2])
        with pytest.raises((InvalidTokenError, ValueError)):
            batch.add(2, p, [bad])
    assert batch.request_ids() == [1] and batch.usage(1).completion_tokens == 0
    # Nothing changed: the same tokens give what a fresh parser gives.
    assert [_fields(p.stream([t])) for t in good] + [_fields(p.finish())] == [
        _fields(d) for d in want
    ]


def _fields(d: Any) -> tuple[Any, ...]:
    return (d.token_ids, d.labels, d.is_still_reasoning, d.held_token_count, d.spill)


@pytest.mark.parametrize("family", STATEFUL)
def test_stateful_families_need_a_parser_per_request(family: str) -> None:
    """A parser carries one request's state (documented: one parser per request, or
    ``reset()`` between requests). ``reset()`` gives back a fresh parser's behaviour."""
    p = fresh(family)
    out = p.tokenizer.encode("<think>a</think>b")
    first = [_fields(p.stream([t])) for t in out] + [_fields(p.finish())]
    p.reset()
    assert [_fields(p.stream([t])) for t in out] + [_fields(p.finish())] == first


@pytest.mark.sampled(every=6)
@pytest.mark.parametrize("family", FAMILIES)
def test_random_garbage_never_corrupts_a_parser(family: str) -> None:
    """Long run: random mixes of good and bad deltas; a refused delta changes nothing."""
    rng = random.Random(family)
    p, ref = fresh(family), fresh(family)
    vocab = p.machine.vocab_size
    for _ in range(2000):
        delta = [rng.randrange(vocab) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.3:
            delta[rng.randrange(len(delta))] = rng.choice([*NOT_IDS, vocab])
            with pytest.raises(InvalidTokenError):
                p.stream(delta)
            continue
        assert _fields(p.stream(delta)) == _fields(ref.stream(delta))
    assert _fields(p.finish()) == _fields(ref.finish())
