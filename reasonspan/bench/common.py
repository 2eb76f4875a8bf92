"""What every suite of ``reasonspan bench`` shares: the row type, timing, the transcript."""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable

import msgspec

from ..tokenizer import LoadedTokenizer
from ..transcripts import ALL, long_reasoning


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


def median_ns(fn: Callable[[], object], repeats: int) -> float:
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


def machine_line() -> str:
    return (
        f"{platform.machine()} {platform.processor() or ''} cores={os.cpu_count()} "
        f"python={platform.python_version()} ({platform.system()})"
    ).replace("  ", " ")
