"""Requests with tool calls in one batch never see each other's state.

For every reference model of the CanIToolCall corpus (so every family with a tool-call
format), all of its fixtures are admitted to one :class:`ReasoningRuntime` at once and
stepped together, each request taking a different, random number of tokens per step (and
some none): every request's reasoning, content and calls, as a client assembles them from
its chunks, must equal ``parse()`` of its output alone. The corpus module runs each fixture
alone under many splits; this one checks the batch (one seed in the default run, four
with ``--long``).
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import anyio
import pytest
from canitoolcall.fixtures import Fixture

from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.wire.openai import FinishReason
from tests.support.canitoolcall_replay import REFERENCE, _ids, _parser, assemble, corpus

_BY_MODEL: dict[str, list[Fixture]] = defaultdict(list)
for _f in corpus():
    _BY_MODEL[_f.tokenizer.repo if _f.tokenizer else _f.models[0]].append(_f)


def _reason(fixture: Fixture) -> FinishReason:
    """A "truncated" fixture is a token prefix of an output: max_tokens cut it."""
    return "length" if "truncated" in fixture.tags else "stop"


def _alone(fixture: Fixture) -> tuple[Any, list[int], list[int], list[Any]]:
    parser, tok, _ = _parser(fixture)
    ids, _ = _ids(fixture, tok)
    prompt = tok.encode(fixture.generation_prompt or "")
    tools = list(fixture.tools)
    whole = parser.parse(ids, prompt_token_ids=prompt, tools=tools, finish_reason=_reason(fixture))
    expected = (
        whole.reasoning or "",
        whole.content or "",
        [(c.name, c.arguments) for c in whole.tool_calls],
    )
    return expected, ids, prompt, tools


async def _together(fixtures: list[Fixture], seed: int, sse: bool) -> None:
    rng = random.Random(seed)
    rt = ReasoningRuntime()
    todo = []
    for i, f in enumerate(fixtures):
        expected, ids, prompt, tools = _alone(f)
        parser, _, _ = _parser(f)  # a parser per request, as a server keeps per request
        stream = rt.add(f"r{i}", parser, prompt, tools=tools, sse=sse)
        todo.append([f.id, expected, ids, 0, stream, _reason(f)])
    live = list(todo)
    while live:
        eids: list[int] = []
        toks: list[int] = []
        offs = [0]
        for item in live:
            _, _, ids, at, stream, _ = item
            k = rng.choice([0, 1, 1, 2, 3, 7])
            piece = ids[at : at + k]
            item[3] = at + len(piece)
            if piece:
                eids.append(stream.engine_id)
                toks += piece
                offs.append(len(toks))
        if eids:
            rt.step(eids, toks, offs)
        for item in list(live):
            if item[3] >= len(item[2]):
                rt.finish(item[4].engine_id, item[5])
                live.remove(item)
    for fid, expected, _, _, stream, _ in todo:
        reasoning, content, calls = await assemble(stream)
        got = (reasoning, content, calls)
        assert got == expected, fid


@pytest.mark.parametrize("model", sorted(REFERENCE))
@pytest.mark.parametrize(
    ("seed", "sse"),
    [
        (0, False),
        (0, True),
        *(pytest.param(s, s % 2 == 1, marks=pytest.mark.slow) for s in (1, 2, 3)),
    ],
)
def test_a_batch_of_fixtures_equals_each_alone(model: str, seed: int, sse: bool) -> None:
    """``sse``: the requests ride the batch-wide SSE output path (read back as chunks)."""
    fixtures = _BY_MODEL.get(model, [])
    if not fixtures:
        pytest.fail(f"no corpus fixture names {model}: drop it from REFERENCE")
    anyio.run(_together, fixtures, seed, sse)
