"""The ``grammar`` suite of ``reasonspan bench``: what a grammar engine (llguidance) costs
per step behind the structured-output gate, beside masking from the first token.

A batch of N requests (64 and 256), half of them with a ``response_format`` (a JSON schema:
an array of ``{"answer": int, "unit": str}`` objects, long enough never to finish while
timed). Every request reads reasoning, ``</think>`` and then its JSON answer; request i
starts ``i / N`` of the way through, so at any step some structured requests are past
reasoning and the rest still reason. Per step, in the same run, on the same requests:

- ``mask fill, gated``: ``ReasoningBatch.fill_token_bitmask``: masks for the structured
  requests past reasoning only (one parallel llguidance call), all-allowed rows for the
  others;
- ``mask fill, every structured request``: the same parallel fill for every structured
  request from its first token (a matcher per request, at its answer position when past
  reasoning, at its start otherwise): what a server pays when it does not gate (and, since
  the reasoning would be masked as JSON, a wrong answer too);
- ``step, no grammar`` / ``step, gate only`` / ``step, gate + matcher feed``: the batch step
  with the same tokens, for batches whose structured half is added without a grammar, with
  ``structured_output=True`` (the gate's arrays), and with ``response_format`` (the gate,
  then each masked token fed to its matcher). The differences are the gate's own cost and
  the feed's.

Times are medians over steps (µs per step). Nothing here asserts a time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from reasonspan.bench.common import QWEN3, Family, Row
from reasonspan.runtime import ReasoningBatch, ReasoningParser, build_parser_sync
from reasonspan.runtime.batch.grammar import Grammar, bitmask_width, compile_grammar, fill_bitmasks
from reasonspan.tokenizer import LoadedTokenizer

SIZES: tuple[int, ...] = (64, 256)
REASONING_TOKENS = 600
SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"answer": {"type": "integer"}, "unit": {"type": "string"}},
        "required": ["answer", "unit"],
    },
}
FORMAT = {"type": "json_schema", "json_schema": {"name": "answers", "schema": SCHEMA}}

GATED = "mask fill, gated (only requests past reasoning)"
UNGATED = "mask fill, every structured request from its first token"
PLAIN = "step, no grammar"
GATE = "step, gate only (structured_output=True)"
FEED = "step, gate + matcher feed (response_format)"


def _script(tok: LoadedTokenizer, family: Family) -> tuple[list[int], int]:
    """Reasoning, the end marker, then a long valid JSON answer; and where the answer
    starts."""
    words = tok.encode(" Let me count the apples again, one by one, to be sure.")
    reasoning = (words * (REASONING_TOKENS // len(words) + 1))[:REASONING_TOKENS]
    end = tok.encode(family.end)
    items = ", ".join(f'{{"answer": {i}, "unit": "apples"}}' for i in range(400))
    answer = tok.encode(f"[{items}]")
    return reasoning + end + answer, len(reasoning) + len(end)


def run_grammar_suite(
    tok: LoadedTokenizer, repeats: int, sizes: Sequence[int] = (), family: Family = QWEN3
) -> list[Row]:
    """One row per (case, batch size); ``repeats`` timed steps per size (at least 10)."""
    parser = build_parser_sync(family.parser, tok)
    script, answer_at = _script(tok, family)
    prompt = tok.encode(f"<|im_start|>assistant\n{family.start}\n")
    compile_grammar(FORMAT, tok)  # builds the llguidance tokenizer once, untimed
    rows: list[Row] = []
    steps = max(int(repeats), 10)
    for n in sizes or SIZES:
        structured = [i % 2 == 0 for i in range(n)]
        starts = [i * 2 * answer_at // n for i in range(n)]  # half of them past reasoning
        batches, ungated = _setup(tok, parser, prompt, script, answer_at, starts, structured)
        feed = batches[FEED]
        ids = np.arange(n, dtype=np.int64)
        offs = np.arange(n + 1, dtype=np.int64)
        out = feed.allocate_token_bitmask(n)
        scratch = np.empty((n, bitmask_width(tok.vocab_size)), np.int32)
        times: dict[str, list[int]] = {c: [] for c in (GATED, UNGATED, PLAIN, GATE, FEED)}
        masked_rows = 0
        for s in range(steps + 2):
            pos = [starts[i] + s for i in range(n)]
            toks = np.asarray([script[p % len(script)] for p in pos], np.int64)
            # The two fills alternate which goes first, so neither always meets a warm cache.
            pairs = [(g, i) for i, g in ungated.items()]
            if s % 2:
                t0 = time.perf_counter_ns()
                masked = feed.fill_token_bitmask(ids, out)
                t1 = time.perf_counter_ns()
                fill_bitmasks(pairs, scratch)
                t2 = time.perf_counter_ns()
            else:
                u0 = time.perf_counter_ns()
                fill_bitmasks(pairs, scratch)
                t0 = time.perf_counter_ns()
                masked = feed.fill_token_bitmask(ids, out)
                t1 = time.perf_counter_ns()
                t2 = t1 + (t0 - u0)
            step_ns = {}
            order = list(batches.items())
            for case, b in order[s % 3 :] + order[: s % 3]:  # rotated, for the same reason
                a = time.perf_counter_ns()
                res = b.step(ids, toks, offs)
                step_ns[case] = time.perf_counter_ns() - a
                if res.errors:
                    raise RuntimeError(f"bench grammar: {case}: {next(iter(res.errors.values()))}")
            for i, g in ungated.items():  # keep the ungated matchers in step
                if pos[i] >= answer_at:
                    g.consume([int(toks[i])])
            if s < 2:  # warm-up
                continue
            masked_rows += int(masked.sum())
            times[GATED].append(t1 - t0)
            times[UNGATED].append(t2 - t1)
            for case, ns in step_ns.items():
                times[case].append(ns)
        share = masked_rows / steps / max(1, sum(structured))
        rows += _rows(times, n, share, sum(structured))
    return rows


def _setup(
    tok: LoadedTokenizer,
    parser: ReasoningParser,
    prompt: list[int],
    script: list[int],
    answer_at: int,
    starts: list[int],
    structured: list[bool],
) -> tuple[dict[str, ReasoningBatch], dict[int, Grammar]]:
    """The three batches of one size (request i added after ``prompt`` and ``starts[i]``
    tokens of ``script``), and the ungated matchers: one per structured request, at its
    answer position."""
    n = len(starts)
    batches = {case: ReasoningBatch() for case in (PLAIN, GATE, FEED)}
    for i in range(n):
        seed = prompt + script[: starts[i]]
        batches[PLAIN].add(i, parser, seed)
        batches[GATE].add(i, parser, seed, structured_output=structured[i])
        batches[FEED].add(i, parser, seed, response_format=FORMAT if structured[i] else None)
    ungated: dict[int, Grammar] = {}
    for i in range(n):
        if structured[i]:
            g = compile_grammar(FORMAT, tok)
            assert g is not None
            done = max(0, starts[i] - answer_at)
            g.consume(script[answer_at : answer_at + done])
            ungated[i] = g
    feed = batches[FEED]
    for i in range(n):  # answers already begun: feed the batch's matchers too
        g2 = feed.grammar_of(i)
        if g2 is not None and starts[i] > answer_at:
            g2.consume(script[answer_at : starts[i]])
    return batches, ungated


def _rows(times: dict[str, list[int]], n: int, share: float, masks: int) -> list[Row]:
    """One row per case of one batch size ``n``, from its timed steps."""
    rows: list[Row] = []
    for case, ns_list in times.items():
        us = float(np.median(ns_list)) / 1000
        note = ""
        if case == GATED:
            note = f"{share:.0%} of structured requests past reasoning, on average"
        elif case == UNGATED:
            note = f"{masks} masks per step"
        rows.append(
            Row(
                suite="grammar",
                case=case,
                ns_per_token=us * 1000 / n,
                us_per_call=us,
                tokens=n,
                note=note,
                batch=n,
                k=1,
                steps=len(ns_list),
            )
        )
    return rows
