"""What every suite of ``reasonspan bench`` shares: the row type, timing, the transcript."""

from __future__ import annotations

import gc
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from reasonspan.runtime import ReasonspanError, build_parser_sync
from reasonspan.tokenizer import LoadedTokenizer
from reasonspan.transcripts import ALL, long_reasoning


@dataclass(frozen=True)
class Family:
    """The parser the bench times and the markers its transcripts are written with, so a
    GLM or DeepSeek folder is benchmarked in its own format, not in Qwen3's."""

    parser: str
    start: str
    end: str


QWEN3 = Family("qwen3", "<think>", "</think>")
"""The family of the default tokenizer (the real Qwen3 one)."""


def family_for(tok: LoadedTokenizer, name: str | None) -> Family:
    """The family named by ``--parser``, else the one detected for the tokenizer; refused
    (one line) when none is detected, the tokenizer lacks its markers, or it has no
    reasoning markers to split on."""
    if name is None:
        from reasonspan.detection import detect

        found = detect(tok)
        if found.parser is None:
            raise ReasonspanError(
                f"could not tell which parser fits {tok.source}; pass --parser NAME "
                "(see `reasonspan detect`)"
            )
        name = found.parser
    spec = build_parser_sync(name, tok).spec  # a marker the vocabulary lacks: its error
    if not spec.start or not spec.end:
        raise ReasonspanError(
            f"parser {spec.name!r} has no reasoning markers: there is nothing to split, so "
            "nothing to time; pass --parser NAME of a reasoning family"
        )
    return Family(spec.name, spec.start[0], spec.end[0])


@dataclass(frozen=True)
class Plan:
    """What one ``reasonspan bench`` run measures: the family, the repeats, and the sizes of
    the suites that take sizes (empty: the suite's own defaults, the full run)."""

    family: Family = QWEN3
    repeats: int = 30
    batch_sizes: tuple[int, ...] = ()
    batch_ks: tuple[int, ...] = ()
    grammar_sizes: tuple[int, ...] = ()
    serve_sizes: tuple[int, ...] = ()
    prompt_tokens: int = 128_000


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
    collector_ns_per_token: float | None = None
    """Of ``ns_per_token``, what the cyclic garbage collector took (:func:`collector_ns`;
    measured for the output suite's paths that make chunks)."""


def median_ns(fn: Callable[[], object], repeats: int) -> float:
    """Median ns of ``fn`` over ``repeats`` calls, after one warm-up call."""
    return interleaved_medians([fn], repeats)[0]


def interleaved_medians(fns: list[Callable[[], object]], repeats: int) -> list[float]:
    """Median ns of each function, the functions timed in turn within every repeat (after
    one warm-up call each), so all of them see the same machine load.

    The cyclic garbage collector stays on: what a path allocates, it pays to collect.
    But no path pays for another's: before each timed call the heap is collected and the
    function is called once untimed (which also warms the caches the collection walked
    over), so a collection during the timed call is of that path's own garbage, as in a
    server that runs only it. Without this, the objects one path leaves behind trigger a
    full collection in the next one's run (at 4,096 requests, a third of a run's time)."""
    for fn in fns:
        fn()  # warm-up
    times: list[list[int]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, into in zip(fns, times, strict=True):
            _settle(fn)
            t0 = time.perf_counter_ns()
            fn()
            into.append(time.perf_counter_ns() - t0)
    return [float(statistics.median(t)) for t in times]


def _settle(fn: Callable[[], object]) -> None:
    """Before a timed call of ``fn``: collect the heap, then call it once untimed."""
    gc.collect()
    fn()


def collector_ns(fn: Callable[[], object]) -> int:
    """Nanoseconds the cyclic garbage collector spends in one call of ``fn``, timed as
    :func:`interleaved_medians` times it (collected heap, one untimed call first): the
    share of a path's time that is the collector's, which grows with the objects the
    whole process holds."""
    spent = 0
    started = 0

    def watch(phase: str, info: dict[str, int]) -> None:
        nonlocal spent, started
        if phase == "start":
            started = time.perf_counter_ns()
        else:
            spent += time.perf_counter_ns() - started

    _settle(fn)
    gc.callbacks.append(watch)
    try:
        fn()
    finally:
        gc.callbacks.remove(watch)
    return spent


def transcript_ids(tok: LoadedTokenizer, n_tokens: int = 1000, family: Family = QWEN3) -> list[int]:
    """A real reasoning transcript of ``n_tokens`` tokens in the family's markers:
    start marker, reasoning, end marker, answer (the end marker always inside)."""
    answer = "\n\n".join(t.answer for t in ALL)
    ids = tok.encode(f"{family.start}\n{long_reasoning()}\n{family.end}\n\n{answer}")
    end_ids = tok.encode(family.end)
    while len(ids) < n_tokens:
        ids = ids + ids
    ids = ids[:n_tokens]
    if not _contains(ids, end_ids):
        at = int(n_tokens * 0.8)
        ids[at : at + len(end_ids)] = end_ids
        ids = ids[:n_tokens]
    return ids


def _contains(ids: list[int], part: list[int]) -> bool:
    n = len(part)
    return any(ids[i : i + n] == part for i in range(len(ids) - n + 1))


def machine_line() -> str:
    return (
        f"{platform.machine()} {platform.processor() or ''} cores={os.cpu_count()} "
        f"python={platform.python_version()} ({platform.system()})"
    ).replace("  ", " ")
