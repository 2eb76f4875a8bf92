"""``reasonspan bench``: what reasonspan costs per token and per step, beside the text-based
approach (incremental detokenization + string search) measured in the same run.

Figures are medians over repeats on a real tokenizer and a real transcript. Nothing here
asserts a time: the numbers are for BENCHMARKS.md and for the reader.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from .baseline import TextBaseline
from .demo_data import NoTokenizerError, default_tokenizer_path
from .runtime import TextSplitter, create_parser_sync
from .tokenizer import LoadedTokenizer, load_tokenizer_sync
from .transcripts import ALL, long_reasoning


class Row(msgspec.Struct):
    """One measured case. For the batch suite a call is one step of the whole batch:
    ``tokens`` is ``batch * k``, and ``bytes_per_request`` is the tracemalloc peak of
    admitting the batch and stepping it, divided by ``batch``."""

    suite: str
    case: str
    ns_per_token: float
    us_per_call: float
    tokens: int
    vs_baseline: float | None = None
    note: str = ""
    batch: int = 0
    k: int = 0
    bytes_per_request: float | None = None
    steps: int = 0


def _median_ns(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return float(statistics.median(times))


def transcript_ids(tok: LoadedTokenizer, n_tokens: int = 1000) -> list[int]:
    """A real reasoning transcript of ``n_tokens`` tokens: reasoning, </think>, answer."""
    answer = "\n\n".join(t.answer for t in ALL)
    ids = tok.encode(f"<think>\n{long_reasoning()}\n</think>\n\n{answer}")
    end_id = tok.single_token_id("</think>")
    while len(ids) < n_tokens:
        ids = ids + ids
    ids = ids[:n_tokens]
    if end_id is not None and end_id not in ids:
        ids[int(n_tokens * 0.8)] = end_id
    return ids


def bench_stream(tok: LoadedTokenizer, repeats: int) -> list[Row]:
    """Per-request streaming with one token per delta, on a 1,000-token transcript."""
    parser = create_parser_sync("qwen3", tok)
    ids = transcript_ids(tok)
    n = len(ids)
    deltas = [[t] for t in ids]

    def ours() -> None:
        parser.reset()
        state = True
        for d in deltas:
            state = parser.stream(d, state).is_still_reasoning
        parser.finish(state)

    def ours_text() -> None:
        split = TextSplitter(parser)
        for d in deltas:
            split.feed(d)
        split.finish()

    def baseline() -> None:
        b = TextBaseline(tok.tokenizer, in_reasoning=True)
        for d in deltas:
            b.feed(d)

    base = _median_ns(baseline, repeats)
    rows = [
        Row("stream", "text baseline: DecodeStream + string search", base / n, base / n / 1e3, n),
    ]
    for case, fn, note in (
        ("reasonspan stream() (ids + labels)", ours, "what a server needs to route tokens"),
        ("reasonspan TextSplitter (ids + text)", ours_text, "same output as the baseline"),
    ):
        t = _median_ns(fn, repeats)
        rows.append(Row("stream", case, t / n, t / n / 1e3, n, base / t, note))
    return rows


def long_prompt(tok: LoadedTokenizer, n_tokens: int = 128_000) -> list[int]:
    """A multi-turn prompt of ``n_tokens`` tokens whose history holds old think blocks."""
    messages: list[dict[str, Any]] = []
    for t in ALL:
        messages.append({"role": "user", "content": t.user})
        messages.append(
            {"role": "assistant", "content": t.answer, "reasoning_content": t.reasoning}
        )
    one_round = tok.encode(
        "".join(
            f"<|im_start|>{m['role']}\n"
            + (
                f"<think>\n{m['reasoning_content']}\n</think>\n\n"
                if "reasoning_content" in m
                else ""
            )
            + f"{m['content']}<|im_end|>\n"
            for m in messages
        )
    )
    ids: list[int] = []
    while len(ids) < n_tokens:
        ids += one_round
    tail = tok.encode("<|im_start|>user\nAnd now?<|im_end|>\n<|im_start|>assistant\n<think>\n")
    return ids[: n_tokens - len(tail)] + tail


def bench_prompt(tok: LoadedTokenizer, repeats: int) -> list[Row]:
    """Prompt seeding on a 128k-token multi-turn prompt, and on one with no turn marker."""
    import numpy as np

    parser = create_parser_sync("qwen3", tok)
    prompt = long_prompt(tok)
    arr = np.asarray(prompt, dtype=np.int64)
    rows = []
    text_ns = _median_ns(lambda: tok.decode(prompt).rfind("</think>"), max(3, repeats // 10))
    n = len(prompt)
    rows.append(
        Row("prompt", "text baseline: decode prompt + rfind", text_ns / n, text_ns / 1e3, n)
    )
    for case, p in (
        ("is_prompt_in_reasoning(list)", prompt),
        ("is_prompt_in_reasoning(ndarray)", arr),
    ):

        def scan(p: list[int] | np.ndarray = p) -> bool:
            return parser.is_prompt_in_reasoning(p)

        t = _median_ns(scan, repeats)
        rows.append(Row("prompt", case, t / n, t / 1e3, n, text_ns / t))
    # No marker and no turn start anywhere, so the scan reads all 128k tokens: plain text
    # (every chunk is skipped on its max id), then text with a special token that is not a
    # marker in every line (each chunk is gathered through the lookup table: the worst case).
    plain = np.asarray(tok.encode("The quick brown fox jumps over the lazy dog. ") * 13_000)[:n]
    noisy = np.asarray(
        tok.encode("The quick brown fox jumps over the lazy dog.<tool_response>") * 12_000
    )[:n]
    for case, arr_ in (
        ("is_prompt_in_reasoning, no marker, plain text", plain),
        ("is_prompt_in_reasoning, no marker, special tokens (worst case)", noisy),
    ):

        def scan_all(a: np.ndarray = arr_) -> bool:
            return parser.is_prompt_in_reasoning(a)

        t = _median_ns(scan_all, repeats)
        rows.append(Row("prompt", case, t / n, t / 1e3, n, text_ns / t))
    return rows


def bench_batch(tok: LoadedTokenizer, repeats: int, sizes: Sequence[int] = ()) -> list[Row]:
    """One engine step over batches of 1 to 4,096 requests (see reasonspan/bench_batch.py)."""
    from .bench_batch import SIZES, run_batch_suite  # it imports Row from here

    return run_batch_suite(tok, repeats, sizes or SIZES)


SUITES: dict[str, Callable[[LoadedTokenizer, int], list[Row]]] = {
    "stream": bench_stream,
    "prompt": bench_prompt,
    "batch": bench_batch,
}


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 1,64,256, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"batch sizes must be >= 1, got {text!r}")
    return sizes


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tokenizer", help="model folder or tokenizer.json (default: real Qwen3)")
    p.add_argument("--suite", action="append", choices=[*SUITES, "all"], help="default: all")
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    # Batch sizes of the batch suite (default 1,64,256,1024,4096); the tests use small ones.
    p.add_argument("--sizes", type=_sizes, help=argparse.SUPPRESS)


def machine_line() -> str:
    return (
        f"{platform.machine()} {platform.processor() or ''} cores={os.cpu_count()} "
        f"python={platform.python_version()} ({platform.system()})"
    ).replace("  ", " ")


def _ratio(r: Row) -> str:
    return f"{r.vs_baseline:,.1f}×" if r.vs_baseline else "—"


def render(rows: list[Row]) -> str:
    """Markdown tables: per-call suites, then the batch suite (one row per path and size)."""
    tables: list[str] = []
    calls = [r for r in rows if r.suite != "batch"]
    if calls:
        lines = [
            "| suite | case | ns/token | µs/call | tokens | × faster than baseline |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for r in calls:
            lines.append(
                f"| {r.suite} | {r.case} | {r.ns_per_token:,.1f} | {r.us_per_call:,.2f} | "
                f"{r.tokens:,} | {_ratio(r)} |"
            )
        tables.append("\n".join(lines))
    steps = [r for r in rows if r.suite == "batch"]
    if steps:
        lines = [
            "| path | batch | tokens/request/step | µs/step (median) | ns/token | "
            "peak bytes/request | steps timed | × faster than baseline |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in steps:
            case = f"{r.case} ({r.note})" if r.note else r.case
            mem = f"{r.bytes_per_request:,.0f}" if r.bytes_per_request is not None else "—"
            lines.append(
                f"| {case} | {r.batch:,} | {r.k} | {r.us_per_call:,.1f} | "
                f"{r.ns_per_token:,.1f} | {mem} | {r.steps} | {_ratio(r)} |"
            )
        lines.append(BATCH_NOTE)
        tables.append("\n".join(lines))
    return "\n\n".join(tables)


BATCH_NOTE = (
    "\nBatch suite: every request reads the 1,000-token transcript from its own offset "
    "(cycling), seeded from the tokens before it, so a step mixes reasoning and content "
    "and crosses </think>. µs/step is the median of single steps (big batches: fewer "
    "steps, at least 5). Peak bytes/request: tracemalloc peak of creating the batch, "
    "admitting every request and 4 steps, over the batch size, in a separate untimed pass "
    "(Python and numpy memory; the Rust-side DecodeStream state of the baseline is not "
    "seen by tracemalloc). The hold-back and stream()-loop rows read the same transcript with "
    "minimax_m3's markers (<mm:think>, </mm:think>: 5 tokens each in Qwen3's vocabulary); "
    "the stream() loop is what custom machines (harmony) still cost per request. "
    "× faster: the baseline's µs/step over the row's, at the same batch size and k."
)


def run(args: argparse.Namespace) -> int:
    try:
        path = args.tokenizer or default_tokenizer_path()
    except NoTokenizerError as exc:
        print(f"reasonspan bench: {exc}")
        return 2
    tok = load_tokenizer_sync(path)
    suites = args.suite or ["all"]
    names = list(SUITES) if "all" in suites else suites
    print(f"machine: {machine_line()}")
    print(f"tokenizer: {tok.source}\n")
    rows: list[Row] = []
    for name in names:
        if name == "batch" and args.sizes:
            rows += bench_batch(tok, args.repeats, args.sizes)
        else:
            rows += SUITES[name](tok, args.repeats)
    print(render(rows))
    if args.json:
        Path(args.json).write_bytes(
            msgspec.json.format(
                msgspec.json.encode({"machine": machine_line(), "rows": rows}), indent=2
            )
        )
        print(f"\nwrote {args.json}")
    return 0
