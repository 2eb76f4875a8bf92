"""Each request's lane is its own: decided at admission, kept per slot, and taken per row.

A harmony request (its own machine: the parser lane) or a hold-back request (text
markers) in a batch of qwen3 requests leaves every qwen3 row on the table lane, in the
batch (``BatchStepResult.lanes``) and on the runtime's SSE output path (its rows written
as bytes, ``ReasoningRuntime.rows_by_form``); and every lane, mixed with the others,
gives ``parse()``'s answer (the batch's twin check, ``test_batch.simulate``, and the SSE
twin check, ``test_sse_path.Pair``, reused here).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

from reasonspan import ReasoningBatch
from reasonspan.runtime.batch.lanes import (
    FORM_BYTES,
    HOLD_BACK,
    LANE_FORBIDDEN,
    PARSER,
    TABLE,
    choose_lane,
    lane_features,
    lane_of,
)
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from tests.batch.test_batch import Req, random_output, simulate
from tests.batch.test_sse_path import Pair, parser_for, step_rows

HARMONY = "openai_gptoss"
HOLD = "minimax_m3"
"""A hold-back family (text markers)."""
LANE_FAMILIES = {"qwen3": TABLE, HOLD: HOLD_BACK, HARMONY: PARSER}
"""One family per lane."""
FAMILIES = [
    ("qwen3", {}),
    (HARMONY, {}),
    (HOLD, {}),
    ("nemotron_v3", {"force_nonempty_content": True}),  # reasoning-as-content swap
    ("cohere_command3", {}),  # citations
]

PLAIN = " one two three four five six seven eight nine ten eleven twelve"


def test_each_feature_rules_out_lanes_and_the_fastest_left_is_taken() -> None:
    assert choose_lane([]) == TABLE
    assert choose_lane(["swap"]) == TABLE  # single-token markers: finish() applies it
    assert choose_lane(["text_markers"]) == HOLD_BACK
    assert choose_lane(["text_markers", "swap"]) == PARSER
    assert choose_lane(["custom_machine"]) == PARSER
    assert all(PARSER not in lanes for lanes in LANE_FORBIDDEN.values())
    for family, lane in LANE_FAMILIES.items():
        assert lane_of(parser_for(family, {})) == lane, lane_features(parser_for(family, {}))


def qwen3_rows(n: int) -> tuple[Any, list[int]]:
    """A qwen3 parser and one output: reasoning opened by the model, then plain words."""
    p = parser_for("qwen3", {})
    return p, p.tokenizer.encode("<think>\n" + PLAIN * 4)


def test_a_harmony_request_leaves_255_qwen3_rows_on_the_table_lane() -> None:
    batch = ReasoningBatch()
    qwen, ids = qwen3_rows(255)
    for rid in range(255):
        batch.add(rid, qwen, [])
    harmony = parser_for(HARMONY, {})
    batch.add(255, harmony, [])
    hold = parser_for(HOLD, {})
    batch.add(256, hold, [])
    assert [batch.lane(r) for r in (0, 254, 255, 256)] == [TABLE, TABLE, PARSER, HOLD_BACK]
    other = harmony.tokenizer.encode(PLAIN * 4)
    held = hold.tokenizer.encode("<think>" + PLAIN * 4)
    taken: Counter[int] = Counter()
    rids = np.arange(257, dtype=np.int64)
    for j in range(min(len(ids), len(other), len(held))):
        toks = np.array([ids[j]] * 255 + [other[j], held[j]], np.int64)
        lanes = batch.step(rids, toks, np.arange(258, dtype=np.int64)).lanes()
        assert (lanes[:255] == TABLE).all()
        assert lanes[255] == PARSER
        taken.update(lanes.tolist())
    assert taken[TABLE] >= 255 * min(len(ids), len(other))
    # One qwen3 request stepped alone takes the scalar lane of one request, whatever the
    # other requests of the batch are.
    res = batch.step([0], [ids[0]], [0, 1])
    assert res.one is not None
    assert batch.step([0, 1], [ids[1], ids[1]], [0, 1, 2]).lanes().tolist() == [TABLE, TABLE]


def test_a_harmony_request_leaves_255_sse_rows_on_the_bytes_form() -> None:
    def run(with_harmony: bool) -> list[int]:
        rt = ReasoningRuntime()
        qwen, ids = qwen3_rows(255)
        streams = [rt.add(f"q{i}", qwen, None, sse=True) for i in range(255)]
        harmony = parser_for(HARMONY, {})
        other = harmony.tokenizer.encode(PLAIN * 4)
        if with_harmony:
            streams.append(rt.add("h", harmony, None, sse=True))
        steps = min(len(ids), len(other))
        warm = 4  # the marker, the newline the trim takes, the first word
        before = [0, 0, 0]
        for j in range(steps):
            if j == warm:
                before = list(rt.rows_by_form)
            rows = [(s, [ids[j]]) for s in streams[:255]]
            if with_harmony:
                rows.append((streams[255], [other[j]]))
            step_rows(rt, rows)
            for s in streams:
                s.ready_events()  # a reading client: no queue fills up
        return [a - b for a, b in zip(rt.rows_by_form, before, strict=True)]

    alone, mixed = run(False), run(True)
    steps = sum(alone) // 255
    assert steps > 10
    assert alone[FORM_BYTES] == 255 * steps  # every qwen3 row written as bytes
    assert mixed[FORM_BYTES] >= alone[FORM_BYTES]  # and still, beside a harmony request
    assert sum(mixed) == sum(alone) + steps


def lane_mix(rng: random.Random, family: str, kwargs: dict[str, Any], n: int) -> list[Req]:
    """``n`` requests of ``family`` among requests of every lane, marker-rich outputs."""
    reqs = []
    for i in range(n):
        fam, kw = (family, kwargs) if i % 2 else (rng.choice(list(LANE_FAMILIES)), {})
        p = parser_for(fam, kw)
        reqs.append(
            Req(
                rid=i,
                template=p,
                prompt=random_output(rng, p, rng.randrange(0, 6)),
                output=random_output(rng, p, rng.randrange(0, 30)),
                include=rng.random() < 0.8,
            )
        )
    return reqs


@pytest.mark.parametrize(("family", "kwargs"), FAMILIES, ids=[f for f, _ in FAMILIES])
@pytest.mark.parametrize("size", [3, 60], ids=["scalar", "vectorized"])
@pytest.mark.parametrize("seed", [0, 1])
def test_every_lane_in_a_batch_is_parse(
    family: str, kwargs: dict[str, Any], size: int, seed: int
) -> None:
    """Each request, checked step by step against its own ``stream()`` and at its end
    against ``parse()`` (``test_batch.simulate``), in random splits of 0-4 tokens."""
    rng = random.Random(seed)
    reqs = lane_mix(rng, family, kwargs, size)
    assert simulate(reqs, [rng.randrange(0, 5) for _ in reqs], rng, kmax=4) > size // 2


@pytest.mark.parametrize(("family", "kwargs"), FAMILIES, ids=[f for f, _ in FAMILIES])
@pytest.mark.parametrize("seed", [0, 1])
def test_every_lane_on_the_sse_path_is_parse(
    family: str, kwargs: dict[str, Any], seed: int
) -> None:
    """SSE requests of every lane in one runtime, each beside its chunk-object twin
    (``test_sse_path.Pair``: byte for byte), ended and checked against ``parse()``."""
    rng = random.Random(seed)
    rt = ReasoningRuntime()
    units = []
    for i, req in enumerate(lane_mix(rng, family, kwargs, 40)):
        units.append((Pair(rt, f"r{i}", req.template), req.template, req.output, [0]))
    while any(pos[0] < len(ids) for _, _, ids, pos in units):
        rows = []
        for pair, _, ids, pos in units:
            k = rng.randrange(0, 5)
            delta = ids[pos[0] : pos[0] + k]
            pos[0] += len(delta)
            rows += [(pair.obj, delta), (pair.sse, delta)]
        step_rows(rt, rows)
        for pair, *_ in units:
            pair.drain()
    for pair, p, ids, _ in units:
        pair.end_as_parsed(rt, p, ids)
