"""The suite's release of what fixture tokenizers hold (tests/support/fixtures.py): a
fixture tokenizer is one object for the session, whose contents (the Rust tokenizer and the
tables built on it) go between modules and come back on use; a large table a module built
on one that stays loaded (an llguidance tokenizer is ~110 MB) goes when the module ends."""

from __future__ import annotations

import gc
import weakref

from tests.support.fixtures import FixtureTokenizer, release_tables, release_unused, tokenizer


class Table:
    """Stands for a large table: only its lifetime is checked."""


def test_a_table_built_in_the_block_goes_and_one_built_before_stays() -> None:
    before, during = tokenizer("qwen-3"), tokenizer("deepseek-r1")
    kept = Table()
    before.cache["tests.table"] = kept
    try:
        with release_tables("tests.table"):
            built = Table()
            during.cache["tests.table"] = built
            gone = weakref.ref(built)
            del built
        gc.collect()
        assert gone() is None
        assert "tests.table" not in during.cache
        assert before.cache["tests.table"] is kept
    finally:
        before.cache.pop("tests.table", None)
        during.cache.pop("tests.table", None)


def test_the_same_tokenizer_on_every_call() -> None:
    assert tokenizer("qwen-3") is tokenizer("qwen-3")


def test_a_released_tokenizer_drops_its_tables_and_reads_the_same_after() -> None:
    tok = tokenizer("deepseek-r1")
    assert isinstance(tok, FixtureTokenizer)
    ids = tok.encode("<｜tool▁calls▁begin｜>Zürich 🙂")
    table = Table()
    tok.cache["tests.table"] = table
    gone, bytes_before = weakref.ref(table), tok.token_bytes[ids[0]]
    del table
    assert tokenizer("qwen-3").vocab_size  # used (loaded) after it: release_unused(1) keeps it
    release_unused(1)
    gc.collect()
    assert not tok.loaded and gone() is None
    assert tok.encode("<｜tool▁calls▁begin｜>Zürich 🙂") == ids  # loaded again on use
    assert tok.loaded and "tests.table" not in tok.cache
    assert tok.token_bytes[ids[0]] == bytes_before
    assert tokenizer("deepseek-r1") is tok
