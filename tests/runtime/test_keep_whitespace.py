"""``ReasoningParser.keep_whitespace()``: the text keeps the layout whitespace the family's
trims take off next to markers, as vLLM's parsers keep it (the vLLM plugin's ``vllm`` text
mode, docs/vllm.md).

What must hold: every path gives the same text in that mode too (``TextSplitter`` at any
split, the runtime as chunks and as SSE bytes, ``parse()``); the mode changes whitespace
only, never a label, a count or a call; and it belongs to the one parser that asked, so a
request in that mode and one in the default mode, of the same family in one batch, each get
their own text. Tokenizers: the families' fixtures (tests/support/fixtures.py).
"""

from __future__ import annotations

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import ReasoningParser
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path, read_chunks, read_sse
from tests.support.sampling import examples
from tests.support.strategies import outputs

FAMILIES = ["qwen3", "glm45", "minimax_m2", "kimi_k2", "step3p5", "ernie45", "cohere_command3"]
"""Families whose spec trims whitespace next to markers, with each kind of trim: a
template's newlines on both sides of the reasoning (qwen3, glm45, minimax_m2), one newline
(kimi_k2, step3p5), content's newlines (ernie45), spaces and tabs (cohere)."""


def make(family: str, keep: bool) -> ReasoningParser:
    parser = reasonspan.create_parser_sync(family, tokenizer(FAMILY_TOKENIZERS[family]))
    if keep:
        parser.keep_whitespace()
    return parser


def squeezed(text: str | None) -> str:
    return "".join((text or "").split())


def test_qwen3_keeps_its_template_newlines_as_vllm_does() -> None:
    """vLLM's qwen3 parser gives ``"\\nhmm\\n"`` and ``"\\n\\nThe answer."`` here
    (docs/vllm.md, "Whitespace next to markers"); the default mode trims them."""
    tok = tokenizer(FAMILY_TOKENIZERS["qwen3"])
    ids = tok.encode("<think>\nhmm\n</think>\n\nThe answer.")
    kept = make("qwen3", True).parse(ids, None)
    trimmed = make("qwen3", False).parse(ids, None)
    assert (kept.reasoning, kept.content) == ("\nhmm\n", "\n\nThe answer.")
    assert (trimmed.reasoning, trimmed.content) == ("hmm", "The answer.")


def test_a_label_trim_is_not_whitespace_and_stays() -> None:
    """Gemma 4's ``thought\\n`` label is the family's text, not layout: it is still taken
    off; the newline its trim takes before the channel's end is kept."""
    tok = tokenizer(FAMILY_TOKENIZERS["gemma4"])
    ids = tok.encode("<|channel>thought\nPlan it.\n<channel|>Done.")
    kept = make("gemma4", True).parse(ids, None)
    trimmed = make("gemma4", False).parse(ids, None)
    assert trimmed.reasoning == "Plan it."
    assert kept.reasoning == "Plan it.\n"
    assert kept.content == trimmed.content == "Done."


@pytest.mark.parametrize("family", FAMILIES)
@settings(
    max_examples=examples(24),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_every_path_keeps_the_same_whitespace(family: str, data: st.DataObject) -> None:
    """Any split, the runtime as chunks and SSE: ``parse()``'s text in this mode; and the
    two modes differ in whitespace only, with the same labels and calls."""
    probe = make(family, True)
    ids = data.draw(outputs(probe))
    kept = every_path(lambda: make(family, True), None, ids, None)
    trimmed = make(family, False).parse(ids, None)
    assert kept.labels == trimmed.labels
    assert kept.reasoning_tokens == trimmed.reasoning_tokens
    assert squeezed(kept.reasoning) == squeezed(trimmed.reasoning)
    assert squeezed(kept.content) == squeezed(trimmed.content)
    assert len(kept.reasoning or "") >= len(trimmed.reasoning or "")
    assert len(kept.content or "") >= len(trimmed.content or "")


@pytest.mark.parametrize("sse", [False, True])
def test_the_mode_belongs_to_its_request(sse: bool) -> None:
    """Both modes of one family in one batch (sharing its machine, tables and decoder
    states), over many requests and steps: each request gets its own parser's text."""
    tok = tokenizer(FAMILY_TOKENIZERS["qwen3"])
    ids = tok.encode("<think>\nA plan.\n\nTwo lines.\n</think>\n\nThe answer.\n\nMore text.")
    modes = [i % 2 == 0 for i in range(64)]
    parsers = [make("qwen3", keep) for keep in modes]
    want = [(p.parse(ids, None).reasoning, p.parse(ids, None).content) for p in parsers]
    assert want[0] != want[1]

    async def run() -> list[tuple[str | None, str | None]]:
        rt = ReasoningRuntime()
        streams = [rt.add(f"r{i}", p, None, sse=sse) for i, p in enumerate(parsers)]
        eids = [s.engine_id for s in streams]
        for tid in ids:
            rt.step(eids, [tid] * len(eids), list(range(len(eids) + 1)))
        for i in range(len(streams)):
            rt.finish(f"r{i}", "stop")
        got = []
        for s in streams:
            r, c, _ = await (read_sse(s) if sse else read_chunks(s))
            got.append((r or None, c or None))
        return got

    assert anyio.run(run) == want
