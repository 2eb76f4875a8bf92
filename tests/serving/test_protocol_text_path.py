"""The Messages and Responses events of a streamed request are written from the runtime's
batch-wide output path (``RequestStream.text_items``: the path's text events, still
JSON-escaped, and chunks for the rest), byte for byte as from the request's chunks.

Each family's output (Qwen3, DeepSeek R1, gpt-oss's harmony, MiniMax-M2's text markers,
Nemotron 3's reasoning-as-content swap; their real or fixture tokenizers) runs through one
runtime twice, as a request on the output path (``sse=True``) and as a chunk stream, cut
into the same random steps; the events of each protocol's encoder must be equal (Responses'
random item ids aside), and where the output path writes a family's plain rows, it must
have written much of the text.
"""

from __future__ import annotations

import random
import re
from typing import Any

import numpy as np
import pytest

import reasonspan
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.serving.messages_events import MessageEvents
from reasonspan.serving.responses import ResponsesRequest
from reasonspan.serving.responses_events import ResponseEvents, ResponseShape
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

OUTPUTS = {
    "qwen3": '<think>\nFirst "quoted" \\ 東京 🙂\n\nthen more.\n</think>\n\nThe answer:\n\n42 ✓',
    "deepseek_r1": 'Plan it.\n</think>\n\nDone, <b>bold</b> & "so".',
    "openai_gptoss": "<|channel|>analysis<|message|>Think 🙂.<|end|>"
    '<|start|>assistant<|channel|>final<|message|>Final "answer".<|return|>',
    "minimax_m2": "a plan\n</think>\n\nAn answer\twith tabs.",
    "nemotron_v3": "Only reasoning, presented as the answer",
}
PROMPTS = {
    "deepseek_r1": "<｜User｜>hi<｜Assistant｜><think>\n",
    "minimax_m2": "]~b]user\nhi[e~[\n]~b]ai\n<think>\n",
    "nemotron_v3": "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n",
}
KWARGS = {"nemotron_v3": {"enable_thinking": False}}
PATH_WRITES = {"qwen3", "deepseek_r1", "minimax_m2"}
"""Families whose plain rows the output path writes (harmony's channels and a reasoning
swap that may still happen take the exact path: their events come from chunks)."""


def encoders(key: str) -> dict[str, tuple[Any, Any]]:
    """Each protocol's encoder of one request, and its closing events."""
    messages = MessageEvents(key, "m", 3)
    responses = ResponseEvents(ResponseShape(key, ResponsesRequest(model="m", input="hi"), 0))
    return {
        "messages": (messages, lambda s: messages.end(s.finish_reason, s.stop_sequence, 0)),
        "responses": (responses, lambda s: responses.end(s.finish_reason, None)),
    }


def _no_ids(events: list[bytes]) -> list[bytes]:
    return [re.sub(rb'"(rs|msg|fc)_[0-9a-f]{32}"', b'"ID"', e) for e in events]


@pytest.mark.parametrize("family", sorted(OUTPUTS))
@pytest.mark.parametrize(("seed", "alias"), [(0, False), (1, False), (2, True)])
def test_events_from_the_output_path_equal_those_from_chunks(
    family: str, seed: int, alias: bool
) -> None:
    """``alias``: the runtime also fills ``reasoning_content`` (its reasoning events carry
    the text twice)."""
    tok = tokenizer(FAMILY_TOKENIZERS[family])
    parser = reasonspan.create_parser_sync(family, tok, KWARGS.get(family, {}))
    ids = tok.encode(OUTPUTS[family])
    prompt = tok.encode(PROMPTS[family]) if family in PROMPTS else None
    rt = ReasoningRuntime(reasoning_content_alias=alias)
    on_path = rt.add("a", parser, prompt, sse=True)
    chunks = rt.add("b", parser, prompt)
    enc = {"a": encoders("req"), "b": encoders("req")}
    out: dict[str, dict[str, list[bytes]]] = {"a": {}, "b": {}}
    for side in "ab":
        for name, (encoder, _end) in enc[side].items():
            out[side][name] = list(encoder.start())
    texts = 0
    rng = random.Random(seed)
    i = 0
    while i <= len(ids):
        k = rng.randint(1, 3)
        piece = ids[i : i + k]
        i += k
        if piece:
            rows = [on_path.engine_id, chunks.engine_id]
            rt.step(rows, piece * 2, [0, len(piece), 2 * len(piece)])
        else:
            rt.finish("a", "stop")
            rt.finish("b", "stop")
        for side, stream in (("a", on_path), ("b", chunks)):
            items = stream.ready_items()
            texts += side == "a" and sum(type(x) is tuple for x in items)
            for name, (encoder, _end) in enc[side].items():
                for item in items:
                    got = encoder.text(item) if type(item) is tuple else encoder.chunk(item)
                    out[side][name] += got
    for side, stream in (("a", on_path), ("b", chunks)):
        for name, (_encoder, end) in enc[side].items():
            out[side][name] += end(stream)
    assert out["a"]["messages"] == out["b"]["messages"]
    assert _no_ids(out["a"]["responses"]) == _no_ids(out["b"]["responses"])
    if family in PATH_WRITES:
        assert texts >= len(ids) // 4, texts  # the output path wrote the plain text rows
    assert all(type(x) is not tuple for x in chunks.ready_items())


def test_a_reasoning_block_signed_from_escaped_text_is_signed_as_its_text() -> None:
    """The Messages thinking block's signature is taken over its text: text that arrived
    escaped (quotes, backslashes, newlines, emoji) is decoded before it is signed."""
    from reasonspan.serving.messages_events import signature

    tok = tokenizer(FAMILY_TOKENIZERS["qwen3"])
    parser = reasonspan.create_parser_sync("qwen3", tok)
    ids = tok.encode(OUTPUTS["qwen3"])
    rt = ReasoningRuntime()
    stream = rt.add("a", parser, None, sse=True)
    enc = MessageEvents("m1", "m", 1)
    events: list[bytes] = []
    for t in ids:
        rt.step(np.array([stream.engine_id]), np.array([t]), np.array([0, 1]))
        for item in stream.ready_items():
            events += enc.text(item) if type(item) is tuple else enc.chunk(item)
    rt.finish("a", "stop")
    for item in stream.ready_items():
        events += enc.text(item) if type(item) is tuple else enc.chunk(item)
    events += enc.end("stop", None, 0)
    want = parser.parse(ids).reasoning
    assert want and signature(want).encode() in b"".join(events)
