"""``reasonspan bench``: what reasonspan costs per token and per step, beside the text-based
approach (incremental detokenization + string search) measured in the same run.

Figures are medians over repeats on a real tokenizer and a real transcript. Nothing here
asserts a time: the numbers are for BENCHMARKS.md and for the reader.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import msgspec

from reasonspan.argtypes import POSITIVE
from reasonspan.bench.batch import KS, SIZES, run_batch_suite
from reasonspan.bench.common import QWEN3, Family, Plan, Row, family_for, machine_line
from reasonspan.bench.grammar import run_grammar_suite
from reasonspan.bench.output import bench_output
from reasonspan.bench.serve import bench_serve
from reasonspan.bench.stream import bench_prompt, bench_stream
from reasonspan.bench.tools import bench_tools
from reasonspan.demo_data import NoTokenizerError, default_tokenizer_path
from reasonspan.runtime.batch.grammar import GrammarUnavailableError
from reasonspan.runtime.core.errors import ReasonspanError
from reasonspan.tokenizer import LoadedTokenizer, load_tokenizer_sync


def bench_batch(tok: LoadedTokenizer, plan: Plan) -> list[Row]:
    """One engine step over batches of 1 to 4,096 requests (see :mod:`.batch`)."""
    return run_batch_suite(
        tok, plan.repeats, plan.batch_sizes or SIZES, plan.batch_ks or KS, family=plan.family
    )


def bench_grammar(tok: LoadedTokenizer, plan: Plan) -> list[Row]:
    """Mask fill and step with a grammar engine behind the gate (see :mod:`.grammar`)."""
    return run_grammar_suite(tok, plan.repeats, plan.grammar_sizes, family=plan.family)


SUITES: dict[str, Callable[[LoadedTokenizer, Plan], list[Row]]] = {
    "stream": bench_stream,
    "prompt": bench_prompt,
    "batch": bench_batch,
    "grammar": bench_grammar,
    "serve": bench_serve,
    "tools": bench_tools,
    "output": bench_output,
}

QUICK = Plan(
    repeats=3,
    batch_sizes=(1, 16),
    batch_ks=(1,),
    grammar_sizes=(8,),
    serve_sizes=(1, 8),
    prompt_tokens=16_000,
)
"""``--quick``: every suite, small: a first look in a few seconds (the figures are noisier
than the full run's, which BENCHMARKS.md quotes)."""


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
    p.add_argument(
        "--parser",
        help="parser whose markers the transcripts are written in (default: detected for "
        "--tokenizer; qwen3 for the default tokenizer)",
    )
    p.add_argument("--suite", action="append", choices=[*SUITES, "all"], help="default: all")
    p.add_argument(
        "--repeats",
        type=POSITIVE,
        help="timed repeats per case, median taken (>= 1; default 30, 3 with --quick)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="small sizes and few repeats: every suite in a few seconds, for a first look",
    )
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    # Batch sizes of the batch suite (default 1,64,256,1024,4096) and concurrency of the
    # serve suite (default 1,64,256); the tests use small ones.
    p.add_argument("--sizes", type=_sizes, help=argparse.SUPPRESS)


def plan_of(args: argparse.Namespace, family: Family) -> Plan:
    """The run the flags ask for: the full one, or ``--quick``; ``--repeats`` and the
    hidden ``--sizes`` override either."""
    plan = replace(QUICK if args.quick else Plan(), family=family)
    if args.repeats is not None:
        plan = replace(plan, repeats=args.repeats)
    if args.sizes:
        sizes = tuple(args.sizes)
        plan = replace(plan, batch_sizes=sizes, grammar_sizes=sizes, serve_sizes=sizes)
    return plan


def _ratio(r: Row) -> str:
    return f"{r.vs_baseline:,.1f}×" if r.vs_baseline else "—"


def render(rows: list[Row]) -> str:
    """Markdown tables: per-call suites, then the batch suite (one row per path and size)."""
    tables: list[str] = []
    calls = [r for r in rows if r.suite not in ("batch", "grammar")]
    if calls:
        lines = [
            "| suite | case | ns/token | µs/call | tokens | × faster than baseline "
            "| of it, the collector's (ns/token) |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for r in calls:
            gc_ns = r.collector_ns_per_token
            lines.append(
                f"| {r.suite} | {r.case} | {r.ns_per_token:,.1f} | {r.us_per_call:,.2f} | "
                f"{r.tokens:,} | {_ratio(r)} | {'—' if gc_ns is None else f'{gc_ns:,.0f}'} |"
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
    grammar = [r for r in rows if r.suite == "grammar"]
    if grammar:
        lines = [
            "| grammar suite (half the requests structured) | batch | µs/step (median) | "
            "steps timed | note |",
            "|---|---:|---:|---:|---|",
        ]
        for r in grammar:
            lines.append(
                f"| {r.case} | {r.batch:,} | {r.us_per_call:,.1f} | {r.steps} | {r.note} |"
            )
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


def _unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be written, or None."""
    if path.is_dir():
        return "is a directory"
    if path.exists():
        return None if os.access(path, os.W_OK) else "is not writable"
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        return f"directory {str(parent)!r} does not exist"
    return None if os.access(parent, os.W_OK) else f"directory {str(parent)!r} is not writable"


def run(args: argparse.Namespace) -> int:
    try:
        path = args.tokenizer or default_tokenizer_path()
    except NoTokenizerError as exc:
        print(f"reasonspan bench: {exc}", file=sys.stderr)
        return 2
    if args.json:
        problem = _unwritable(Path(args.json))
        if problem:  # before the benchmark runs, not after
            print(f"reasonspan bench: --json {args.json}: {problem}", file=sys.stderr)
            return 2
    try:
        tok = load_tokenizer_sync(path)
        if args.tokenizer is None and args.parser is None:
            family = QWEN3  # the default tokenizer is Qwen3's: nothing to detect
        else:
            family = family_for(tok, args.parser)
    except ReasonspanError as exc:
        print(f"reasonspan bench: {exc}", file=sys.stderr)
        return 2
    plan = plan_of(args, family)
    suites = args.suite or ["all"]
    names = list(SUITES) if "all" in suites else suites
    print(f"machine: {machine_line()}")
    print(f"tokenizer: {tok.source}")
    print(f"parser: {family.parser} (markers {family.start!r} ... {family.end!r})")
    if args.quick:
        print("--quick: small sizes, few repeats; noisier than the full run")
    print()
    rows: list[Row] = []
    for name in names:
        try:
            rows += SUITES[name](tok, plan)
        except GrammarUnavailableError as exc:  # the optional extra is missing
            print(f"reasonspan bench: grammar suite skipped: {exc}\n")
            if "all" not in suites:
                return 2
    print(render(rows))
    if args.json:
        Path(args.json).write_bytes(
            msgspec.json.format(
                msgspec.json.encode({"machine": machine_line(), "rows": rows}), indent=2
            )
        )
        print(f"\nwrote {args.json}")
    return 0
