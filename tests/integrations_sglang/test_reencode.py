"""The re-encoder SGLang's detectors rely on: text deltas cut anywhere give the ids of the
whole text (reasonspan then splits exactly what ``parse()`` would), with markers, accents,
emoji and long words cut mid-way, on real tokenizers of several vocabularies."""

from __future__ import annotations

import random

import pytest

from reasonspan.integrations.sglang.reencode import HOLD, Reencoder
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

WORDS = (
    " The", " answer", " is", " 42", ",", " naïve", " café", "\n", "\n\n", " 🙂", "🙂🙂",
    " antidisestablishmentarianism", " 0x" + "f" * 40, ' {"a": [1, 2]}', "</think>", "<think>",
)  # fmt: skip


def _text(rng: random.Random, markers: tuple[str, ...]) -> str:
    return "".join(rng.choice(WORDS + markers) for _ in range(120))


def _streamed(tok: object, text: str, rng: random.Random, most: int) -> tuple[list[int], Reencoder]:
    r = Reencoder(tok)  # type: ignore[arg-type]
    ids: list[int] = []
    i = 0
    while i < len(text):
        k = rng.randint(1, most)
        ids += r.feed(text[i : i + k])
        i += k
    return ids + r.finish(), r


@pytest.mark.parametrize("family", ["deepseek_r1", "glm45", "kimi_k2", "qwen3"])
def test_any_cut_gives_the_ids_of_the_whole_text(family: str) -> None:
    tok = tokenizer(FAMILY_TOKENIZERS[family])
    markers = ("<|tool_calls_section_begin|>",) if family == "kimi_k2" else ()
    if family == "deepseek_r1":
        markers = ("<｜tool▁calls▁begin｜>", "<｜tool▁sep｜>")
    rng = random.Random(family)
    for _ in range(10):
        text = _text(rng, markers)
        whole = tok.tokenizer.encode(text, add_special_tokens=False).ids
        ids, r = _streamed(tok, text, rng, rng.choice((1, 3, 12)))
        assert ids == whole
        assert r.diverged == 0


def test_ids_are_held_until_later_text_cannot_change_them() -> None:
    """A marker cut in pieces is handed over whole, once later text settled it; the last
    HOLD tokens wait for more text or the end."""
    tok = tokenizer(FAMILY_TOKENIZERS["deepseek_r1"])
    marker = "<｜tool▁calls▁begin｜>"
    pieces = ["Calling.", marker[:3], marker[3:9], marker[9:], " Done", " now,", " all", " of it."]
    whole = tok.tokenizer.encode("".join(pieces), add_special_tokens=False).ids
    r = Reencoder(tok)
    got: list[int] = []
    for piece in pieces[:4]:
        got += r.feed(piece)
    assert tok.tokenizer.token_to_id(marker) not in got  # not settled: text may follow
    for piece in pieces[4:]:
        got += r.feed(piece)
    assert tok.tokenizer.token_to_id(marker) in got
    assert got == whole[: len(whole) - HOLD]
    assert got + r.finish() == whole
