"""The ``stream`` and ``prompt`` suites: per-request cost of ``stream()``, ``TextSplitter``
and the prompt scan, beside the text baseline on the same tokens."""

from __future__ import annotations

from typing import Any

import numpy as np

from reasonspan.baseline import TextBaseline
from reasonspan.bench.common import QWEN3, Family, Plan, Row, median_ns, transcript_ids
from reasonspan.runtime import TextSplitter, build_parser_sync
from reasonspan.tokenizer import LoadedTokenizer
from reasonspan.transcripts import ALL


def bench_stream(tok: LoadedTokenizer, plan: Plan) -> list[Row]:
    """Per-request streaming with one token per delta, on a 1,000-token transcript."""
    family, repeats = plan.family, plan.repeats
    parser = build_parser_sync(family.parser, tok)
    ids = transcript_ids(tok, family=family)
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
        b = TextBaseline(tok.tokenizer, family.start, family.end, in_reasoning=True)
        for d in deltas:
            b.feed(d)

    base = median_ns(baseline, repeats)
    rows = [
        Row("stream", "text baseline: DecodeStream + string search", base / n, base / n / 1e3, n),
    ]
    for case, fn, note in (
        ("reasonspan stream() (ids + labels)", ours, "what a server needs to route tokens"),
        ("reasonspan TextSplitter (ids + text)", ours_text, "same output as the baseline"),
    ):
        t = median_ns(fn, repeats)
        rows.append(Row("stream", case, t / n, t / n / 1e3, n, base / t, note))
    return rows


def long_prompt(tok: LoadedTokenizer, n_tokens: int = 128_000, family: Family = QWEN3) -> list[int]:
    """A multi-turn prompt of ``n_tokens`` tokens whose history holds old think blocks in
    the family's markers (the role tags are ChatML text whatever the family: only the
    markers and the turn's end decide what the scan reads)."""
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
                f"{family.start}\n{m['reasoning_content']}\n{family.end}\n\n"
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
    tail = tok.encode(
        f"<|im_start|>user\nAnd now?<|im_end|>\n<|im_start|>assistant\n{family.start}\n"
    )
    return ids[: n_tokens - len(tail)] + tail


def bench_prompt(tok: LoadedTokenizer, plan: Plan) -> list[Row]:
    """Prompt seeding on a 128k-token multi-turn prompt, and on one with no turn marker."""
    family, repeats = plan.family, plan.repeats
    parser = build_parser_sync(family.parser, tok)
    prompt = long_prompt(tok, plan.prompt_tokens, family)
    arr = np.asarray(prompt, dtype=np.int64)
    rows = []
    text_ns = median_ns(lambda: tok.decode(prompt).rfind(family.end), max(3, repeats // 10))
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

        t = median_ns(scan, repeats)
        rows.append(Row("prompt", case, t / n, t / 1e3, n, text_ns / t))
    # No marker and no turn start anywhere, so the scan reads all 128k tokens: plain text
    # (every chunk is skipped on its max id), then text with a special token that is not a
    # marker in every line (each chunk is gathered through the lookup table: the worst case).
    line = tok.encode("The quick brown fox jumps over the lazy dog. ")
    plain = np.asarray(line * (n // len(line) + 1))[:n]
    noisy_line = tok.encode("The quick brown fox jumps over the lazy dog.<tool_response>")
    noisy = np.asarray(noisy_line * (n // len(noisy_line) + 1))[:n]
    for case, arr_ in (
        ("is_prompt_in_reasoning, no marker, plain text", plain),
        ("is_prompt_in_reasoning, no marker, special tokens (worst case)", noisy),
    ):

        def scan_all(a: np.ndarray = arr_) -> bool:
            return parser.is_prompt_in_reasoning(a)

        t = median_ns(scan_all, repeats)
        rows.append(Row("prompt", case, t / n, t / 1e3, n, text_ns / t))
    return rows
