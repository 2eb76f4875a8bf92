"""The suite's release of per-tokenizer tables a module built (tests/support/fixtures.py):
the fixture tokenizers stay loaded for the session, so a large table left on one (an
llguidance tokenizer is ~110 MB) would stay as long."""

from __future__ import annotations

import gc
import weakref

from tests.support.fixtures import release_tables, tokenizer


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
