"""The ``tools`` suite: what tool calls cost per token, beside a plain answer of the same
length, per request and in the batch.

Two Qwen3 transcripts of the same number of tokens, both starting with the same reasoning
(a fifth of the tokens):
a *tool-heavy* one (a sentence of answer, then a Hermes ``<tool_call>{…}</tool_call>``
block, again and again: most of its answer tokens are inside calls) and a *plain* one (the
same reasoning, then answer text). The tools are offered in both runs, so the only
difference is the calls themselves: their regions held and read, their arguments decoded
and typed, their ``delta.tool_calls`` built and encoded.

- per request: ``TextSplitter(parser, prompt, tools=…)`` fed one token at a time (text and
  calls, what a server needs from one request);
- in the batch: :class:`ReasoningRuntime` with N requests stepping one token each, every
  chunk encoded as SSE bytes (as the ``serve`` suite), the tool-heavy one twice: each
  call sent whole, and its arguments sent as they are written (``stream_arguments``, a
  server's ``stream=True``); and a third transcript, one long call writing a file
  (:func:`long_call`), both ways: streaming's cost where streaming matters.

The figures to read are the ratios: tool-heavy ns/token over plain ns/token (the target
is at most 2), and streamed arguments over whole calls (at most 1.2).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import numpy as np

from reasonspan.bench.common import Plan, Row, interleaved_medians, median_ns
from reasonspan.bench.serve import runtime_to_sse
from reasonspan.runtime import ReasonspanError, TextSplitter, build_parser_sync
from reasonspan.tokenizer import LoadedTokenizer
from reasonspan.transcripts import long_reasoning

SIZES = (1, 256)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    },
]
PROMPT = "<|im_start|>user\nPlan my week.<|im_end|>\n<|im_start|>assistant\n"


def transcripts(tok: LoadedTokenizer, n_tokens: int = 1000) -> tuple[list[int], list[int]]:
    """(tool-heavy, plain) transcripts of exactly ``n_tokens`` tokens each; the tool-heavy
    one ends after its last complete call, padded with answer text."""
    reasoning = tok.encode(long_reasoning())[: n_tokens // 5]
    think = tok.encode("<think>\n") + reasoning + tok.encode("\n</think>\n\n")
    cities = ["Kyoto", "Lisbon", "Montréal", "Nairobi", "Quito", "Oslo"]
    pieces: list[int] = []
    k = 0
    while True:
        city = cities[k % len(cities)]
        args = {"city": city, "days": k % 7 + 1} if k % 2 == 0 else {"query": f"{city} museums"}
        name = "get_weather" if k % 2 == 0 else "search"
        call = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
        unit = tok.encode(f"Checking {city} next.\n<tool_call>\n{call}\n</tool_call>\n")
        if len(think) + len(pieces) + len(unit) > n_tokens:
            break
        pieces += unit
        k += 1
    filler = tok.encode(" All done for now." * 50)
    tool_heavy = (think + pieces + filler)[:n_tokens]
    prose = tok.encode(
        " ".join(f"In {c} the weather looks fine for a walk by the river." for c in cities * 40)
    )
    plain = (think + prose)[:n_tokens]
    return tool_heavy, plain


def long_call(tok: LoadedTokenizer, n_tokens: int = 1000) -> list[int]:
    """A transcript of about ``n_tokens`` tokens that is one call writing a file: the
    reasoning of :func:`transcripts`, then a Hermes ``write_file`` call whose ``content``
    (a Python file: newlines, quotes, non-ASCII escaped in JSON) is most of the tokens."""
    reasoning = tok.encode(long_reasoning())[: n_tokens // 5]
    lines: list[str] = []
    while True:
        i = len(lines)
        doc = f'"""Step {i}: "quoted", Zürich."""'
        lines.append(f"def step_{i}(x):\n    {doc}\n    return x + {i}\n")
        args = {"path": "steps.py", "content": "\n".join(lines)}
        call = json.dumps({"name": "write_file", "arguments": args}, ensure_ascii=False)
        ids = (
            tok.encode("<think>\n") + reasoning + tok.encode("\n</think>\n\n")
            + tok.encode(f"<tool_call>\n{call}\n</tool_call>")
        )  # fmt: skip
        if len(ids) >= n_tokens:
            return ids


def _per_request(tok: LoadedTokenizer, ids: list[int], repeats: int) -> float:
    parser = build_parser_sync("qwen3", tok)
    prompt = tok.encode(PROMPT)
    deltas = [[t] for t in ids]

    def run() -> None:
        parser.reset()
        split = TextSplitter(parser, prompt, tools=TOOLS)
        for d in deltas:
            split.feed(d)
            split.take_tool_calls()
        split.finish()
        split.take_tool_calls()

    return median_ns(run, repeats)


def _runtime(
    tok: LoadedTokenizer, ids: list[int], n: int, stream_arguments: bool = False
) -> Callable[[], int]:
    parser = build_parser_sync("qwen3", tok)
    tokens = np.tile(np.asarray(ids, dtype=np.int64)[:, None], (1, n))
    return runtime_to_sse(
        parser, tok.encode(PROMPT), tokens, "stop", TOOLS, stream_arguments=stream_arguments
    )


def bench_tools(tok: LoadedTokenizer, plan: Plan) -> list[Row]:
    """Tool-heavy vs plain, per request (TextSplitter) and in the runtime at each size
    (the serve sizes of the plan). The transcripts are Qwen3's Hermes calls: on another
    family's tokenizer the suite says so and measures nothing."""
    try:  # Qwen3's markers, its prompt scan's <|im_start|> and its Hermes <tool_call>
        build_parser_sync("qwen3", tok)
        missing = tok.single_token_id("<tool_call>") is None
    except ReasonspanError:
        missing = True
    if missing:
        print(
            f"reasonspan bench: tools suite skipped: it is written in Qwen3's format, "
            f"which {plan.family.parser}'s tokenizer lacks\n"
        )
        return []
    repeats = plan.repeats
    sizes: Sequence[int] = plan.serve_sizes or SIZES
    heavy, plain = transcripts(tok)
    long = long_call(tok)
    n = len(heavy)
    rows: list[Row] = []
    base = _per_request(tok, plain, repeats)
    ours = _per_request(tok, heavy, repeats)
    note = "tools offered in both; × = plain / tool-heavy cost (≥ 0.5 meets the 2× target)"
    rows.append(Row("tools", "TextSplitter, plain answer", base / n, base / 1e3, n, None, note))
    rows.append(
        Row("tools", "TextSplitter, tool-heavy answer", ours / n, ours / 1e3, n, base / ours, note)
    )
    runs = max(3, repeats // 10)
    streamed_note = "× = whole calls / arguments streamed (≥ 0.83 meets the 1.2× target)"
    for size in sizes:
        b, o, st, lw, ls = interleaved_medians(
            [
                _runtime(tok, plain, size),
                _runtime(tok, heavy, size),
                _runtime(tok, heavy, size, stream_arguments=True),
                _runtime(tok, long, size),
                _runtime(tok, long, size, stream_arguments=True),
            ],
            runs,
        )
        prefix = "ReasoningRuntime + SSE"
        for case, t, ratio, why, length in (
            (f"{prefix}, plain, {size} concurrent", b, None, note, n),
            (f"{prefix}, tool-heavy, {size} concurrent", o, b / o, note, n),
            (
                f"{prefix}, tool-heavy, arguments streamed, {size} concurrent",
                st,
                o / st,
                streamed_note,
                n,
            ),
            (f"{prefix}, one long call, {size} concurrent", lw, None, streamed_note, len(long)),
            (
                f"{prefix}, one long call, arguments streamed, {size} concurrent",
                ls,
                lw / ls,
                streamed_note,
                len(long),
            ),
        ):
            total = size * length
            rows.append(
                Row("tools", case, t / total, t / length / 1e3, total, ratio, why, batch=size, k=1)
            )
    return rows
