"""Every path, one answer, whatever the model writes.

For every registered family, with tools offered, random outputs are built from the
family's own markers (reasoning, tool-call open and close), plain words, and tool calls
whose argument values are drawn from a pool of well-formed and hostile ones: containers
nested past :data:`~reasonspan.runtime.core.nesting.MAX_NESTING` and past Python's recursion
limit, integers past the int-to-string limit (decimal and hex), ``1e999``, broken JSON,
XML and pythonic, a close marker inside a string. Each output goes through four paths:

- ``parse(ids, tools=...)`` (the reference);
- ``TextSplitter`` fed 1 to 4 tokens at a time;
- the runtime read as chunk objects, and the runtime read as SSE bytes (``sse=True``),
  eight requests of the family in one runtime, each step taking 1 to 4 tokens of a random
  subset of them;

and each must give ``parse()``'s reasoning, content and calls, with no exception anywhere.
A call that is sent never holds arguments nesting past the bound or a value JSON cannot
hold.

CI runs :data:`CI_ROUNDS` batches a family; ``pytest --long`` runs :data:`LONG_ROUNDS`
(about 12 M tokens over all families), and so does ``python -m tests.runtime.test_fuzz_paths``,
which prints the tokens fuzzed: the count, seed range and result of the last full run
are in BENCHMARKS.md, "Hostile outputs through every path".
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from functools import cache

import anyio
import pytest

import reasonspan
from reasonspan import ReasoningParser, TextSplitter
from reasonspan.runtime.core.nesting import MAX_NESTING, nested_deeper_than
from reasonspan.runtime.parser import registry
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.wire.openai import FinishReason
from tests.support.fixtures import (
    FAMILY_KWARGS,
    FAMILY_TOKENIZERS,
    how_to_declare_calls,
    tokenizer,
)
from tests.support.hostile import CALLS, TOOLS, output
from tests.support.paths import Answer, read_chunks, read_sse, without_broken
from tests.support.sampling import long_run

CI_ROUNDS = 1
LONG_ROUNDS = 80
BATCH = 8


@cache
def _parser(family: str, kwargs: str) -> ReasoningParser:
    return reasonspan.create_parser_sync(
        family, tokenizer(FAMILY_TOKENIZERS[family]), json.loads(kwargs)
    )


def parsed(parser: ReasoningParser, ids: list[int], reason: FinishReason | None = None) -> Answer:
    res = parser.parse(ids, tools=TOOLS, finish_reason=reason)
    calls = [(c.name, c.arguments) for c in res.tool_calls]
    if parser.spec.tool_calls is not None:
        # A call a format's kinds read is sent as JSON they wrote: strict JSON (no inf, no
        # nan), nesting within the bound. (Harmony's calls are messages: their arguments
        # are the text the model wrote, as OpenAI sends them.)
        for _, args in calls:
            loaded = json.loads(args)
            assert not nested_deeper_than(loaded, MAX_NESTING), args[:80]
    return res.reasoning or "", res.content or "", calls


def split(
    parser: ReasoningParser, ids: list[int], rng: random.Random, reason: FinishReason = "stop"
) -> Answer:
    sp = TextSplitter(parser, tools=TOOLS)
    r = c = ""
    at = 0
    while at < len(ids):
        k = rng.randint(1, 4)
        a, b = sp.feed(ids[at : at + k])
        r, c, at = r + a, c + b, at + k
    a, b = sp.finish(reason)
    return r + a, c + b, [(t.name, t.arguments) for t in sp.take_tool_calls()]


async def runtime_paths(
    parser: ReasoningParser,
    outputs: list[list[int]],
    seed: int,
    reasons: Sequence[FinishReason] | None = None,
) -> list[tuple[Answer, Answer]]:
    """Every output as two requests of one runtime (chunks with calls whole, and SSE with
    arguments streamed as written), stepped 1 to 4 tokens at a time over random subsets,
    finished with its finish reason (``reasons``, default "stop"); their answers as a
    client reads them (less the calls a streamed request reports broken)."""
    rng = random.Random(seed)
    rt = ReasoningRuntime(argument_step=rng.randint(1, 4))
    live = []
    streams = []
    for i, ids in enumerate(outputs):
        pair = []
        for sse in (False, True):
            s = rt.add(f"r{i}-{sse}", parser, None, tools=TOOLS, sse=sse, stream_arguments=sse)
            pair.append(s)
            live.append([s, ids, 0, reasons[i] if reasons else "stop"])
        streams.append(pair)
    while live:
        eids: list[int] = []
        toks: list[int] = []
        offs = [0]
        for item in live:
            s, ids, at, _ = item
            if rng.random() < 0.3:
                continue
            piece = ids[at : at + rng.randint(1, 4)]
            item[2] = at + len(piece)
            if piece:
                eids.append(s.engine_id)
                toks += piece
                offs.append(len(toks))
        if eids:
            rt.step(eids, toks, offs)
        for item in list(live):
            if item[2] >= len(item[1]):
                rt.finish(item[0].engine_id, item[3])
                live.remove(item)
    return [
        (without_broken(a, await read_chunks(a)), without_broken(b, await read_sse(b)))
        for a, b in streams
    ]


def _kwargs(family: str) -> list[str]:
    return [json.dumps(k, sort_keys=True) for k in FAMILY_KWARGS.get(family, [{}])]


CASES = [(f, k) for f in sorted(FAMILY_TOKENIZERS) for k in _kwargs(f)]


def seeds(family: str, kwargs: str, rounds: int) -> range:
    """The seeds of a case: ``base .. base + rounds - 1``, ``base`` from its name."""
    base = sum(map(ord, family + kwargs)) * 10_000
    return range(base, base + rounds)


def fuzz(family: str, kwargs: str, rounds: int) -> int:
    """``rounds`` batches of the case through every path (asserting each answer equals
    ``parse()``'s); the number of output tokens fuzzed."""
    parser = _parser(family, kwargs)
    tokens = 0
    for seed in seeds(family, kwargs, rounds):
        rng = random.Random(seed)
        texts = [output(rng, family, parser) for _ in range(BATCH)]
        outputs = [parser.tokenizer.encode(t) for t in texts]
        tokens += sum(map(len, outputs))
        # Either way an engine ends a request: a call region left open is read at "stop"
        # and dropped at "length" (cut by max_tokens); every path is told the same.
        reasons: list[FinishReason] = [rng.choice(("stop", "length")) for _ in outputs]
        expected = [parsed(parser, ids, why) for ids, why in zip(outputs, reasons, strict=True)]
        for text, ids, want, why in zip(texts, outputs, expected, reasons, strict=True):
            assert split(parser, ids, rng, why) == want, (seed, why, text)
        got = anyio.run(runtime_paths, parser, outputs, seed, reasons)
        for text, want, (chunks, sse) in zip(texts, expected, got, strict=True):
            assert chunks == want, ("chunks", seed, text)
            assert sse == want, ("sse", seed, text)
    return tokens


@pytest.mark.sampled(every=2)
@pytest.mark.parametrize(("family", "kwargs"), CASES)
def test_every_path_gives_parse_s_answer(family: str, kwargs: str) -> None:
    fuzz(family, kwargs, LONG_ROUNDS if long_run() else CI_ROUNDS)


@pytest.mark.parametrize("family", sorted(CALLS))
def test_each_call_template_reads(family: str) -> None:
    """The fuzz's call templates are each family's real format: with a plain value each
    reads as exactly the call to ``f`` (so the hostile values are read by the kinds)."""
    parser = _parser(family, _kwargs(family)[-1])
    end = parser.tokenizer.decode(parser.end_marker_token_ids()) if parser.spec.end else ""
    for template in CALLS[family]:
        text = ("Hmm." + end if end else "") + template.replace("V", "[1, 2]")
        _, _, calls = parsed(parser, parser.tokenizer.encode(text))
        assert calls and all(name == "f" for name, _ in calls), (template, calls)
        assert json.loads(calls[0][1]) == {"a": [1, 2]}, (template, calls)


WITHOUT_TEMPLATE: dict[str, str] = {}
"""Families with a tool-call format but no ``CALL_TEMPLATES`` in their test module yet, and
why."""


def test_every_family_with_a_tool_format_has_a_call_template() -> None:
    """So the fuzz, the hostile values and the one-separator rule reach every format."""
    with_format = {
        name
        for name in registry.list_parsers()
        if registry.get_parser_class(name).spec.tool_calls is not None
        and registry.get_parser_class(name).spec.name == name
    }
    missing = sorted(with_format - set(CALLS) - set(WITHOUT_TEMPLATE))
    assert not missing, "\n".join(how_to_declare_calls(f) for f in missing)
    stale = sorted(set(WITHOUT_TEMPLATE) - (with_format - set(CALLS)))
    assert not stale, (
        f"remove from WITHOUT_TEMPLATE (they have CALL_TEMPLATES or no format): {stale}"
    )


def main(argv: list[str]) -> None:
    """``python -m tests.runtime.test_fuzz_paths [PART PARTS]``: the full run (LONG_ROUNDS a
    case), or every PARTS-th case from PART (to run it in several processes), printing
    each case's seeds and tokens and the total (the figure BENCHMARKS.md records)."""
    part, parts = (int(argv[0]), int(argv[1])) if argv else (0, 1)
    total = 0
    for family, kwargs in CASES[part::parts]:
        run = seeds(family, kwargs, LONG_ROUNDS)
        n = fuzz(family, kwargs, LONG_ROUNDS)
        total += n
        print(f"{family} {kwargs} seeds {run.start}..{run.stop - 1}: {n:,} tokens", flush=True)
    print(f"all: {total:,} tokens, no mismatch")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
