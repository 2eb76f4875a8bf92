from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import gc
import os

import pytest
from sampling import LONG_ENV, long_run, sample


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long",
        action="store_true",
        default=False,
        help="run the long adversarial tests (marked slow) and every case of the sampled ones;"
        " same as REASONSPAN_LONG=1",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--long"):
        os.environ[LONG_ENV] = "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if long_run():
        return
    skip = pytest.mark.skip(reason="long run: pass --long (or set REASONSPAN_LONG=1)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
    sampled_out = pytest.mark.skip(reason="not in the CI sample: --long runs every case")
    for item in sample(items):
        item.add_marker(sampled_out)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """Freeze what collection built (tokenizers, parsers, case tables: module-level, kept
    for the whole session) out of the cyclic GC: each full collection would otherwise walk
    every tokenizer's tables again, a few percent of the suite's time."""
    gc.freeze()


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()
