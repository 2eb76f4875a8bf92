"""The suite's switches (``--long``, the ``sampled`` marker) and its one import check.

``tests`` is a package: a test imports its helpers as ``tests.support.…`` and pytest's
default ``prepend`` import mode puts the repository root on ``sys.path`` to find it (as
``python -m pytest`` and each pytest-xdist worker do anyway with their working directory).
The root also holds ``reasonspan/``, which is only the top layer: ``runtime/``,
``architectures/`` and ``tokenizer/`` become ``reasonspan.runtime`` etc. only through an
install. An editable install maps them into the in-tree package, so the suite runs; after a
plain ``pip install .`` the in-tree folder shadows the installed package and every module
would fail to collect. No import mode avoids that (``python -m`` and the xdist workers put
the root first whatever pytest does), so :func:`pytest_configure` stops the run with one
message that says what to do instead. From another folder, ``--import-mode=importlib``
imports ``tests`` from its path without putting the root on ``sys.path``, and the suite
runs against the installed package.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import importlib.machinery
import importlib.util
import os
import resource
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.sampling import LONG_ENV, long_run, sample

ROOT = Path(__file__).resolve().parent.parent


def _import_problem() -> str | None:
    """Why ``import reasonspan`` fails here, in words a user can act on (None: it works)."""
    try:
        importlib.import_module("reasonspan")
    except ImportError as exc:  # ModuleNotFoundError, or a name `from reasonspan import` lacks
        if not (exc.name or "").startswith("reasonspan"):
            raise
        elsewhere = [p for p in sys.path if Path(p or ".").resolve() != ROOT]
        installed = importlib.machinery.PathFinder.find_spec("reasonspan", elsewhere)
        if installed is None or installed.origin is None:
            exc.add_note("Is reasonspan installed? README, first line: pip install -e '.[test]'")
            raise
        return (
            f"`import reasonspan` found this repository's reasonspan/ folder ({ROOT}), which"
            " holds only the top layer: runtime/, architectures/ and tokenizer/ become"
            " reasonspan.runtime etc. only through an install. reasonspan is installed, not"
            f" editable, at {Path(installed.origin).parent}, and the repository root (first"
            " on sys.path under pytest) shadows it. To run the tests from this clone, install"
            " it editable: `pip install -e '.[test]'` (README, first line); to test the"
            " installed package, run them from another folder, where nothing shadows it:"
            f" `cd /tmp && python -m pytest --import-mode=importlib {ROOT / 'tests'}`."
        )
    return None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long",
        action="store_true",
        default=False,
        help="run the long adversarial tests (marked slow) and every case of the sampled ones;"
        " same as REASONSPAN_LONG=1",
    )


def _vllm_line() -> str:
    """Whether the vLLM plugin's tests ran here (they need vLLM: tests/integrations/)."""
    if importlib.util.find_spec("vllm") is not None:
        return "vllm plugin tests: collected (vLLM is installed)"
    return (
        "vllm plugin tests: not collected, vLLM is not installed here "
        "(bash scripts/vllm_env.sh builds .venv-vllm, which runs them; .ci/run does)"
    )


def _sglang_line() -> str:
    """Where the SGLang adapter's tests run: never in this run (pyproject's
    ``norecursedirs``; SGLang's pins conflict with vLLM's), only when named."""
    return (
        "sglang adapter tests: not in this run; tests/integrations_sglang runs in SGLang's "
        "environment (bash scripts/sglang_env.sh builds it; .ci/run does)"
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--long"):
        os.environ[LONG_ENV] = "1"
    problem = _import_problem()
    if problem is not None:
        pytest.exit(problem, returncode=pytest.ExitCode.USAGE_ERROR)


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


@pytest.fixture(scope="module", autouse=True)
def _release_grammar_tables() -> Iterator[None]:
    """llguidance's tokenizer, built on a fixture tokenizer during a module, goes when the
    module ends. A server builds one for every model it serves (``warm_model``), 110-180 MB
    each, and the fixture tokenizers live for the session: a worker's serving modules left
    2-3 GB of them behind. A later module that needs one builds it again (about a second)."""
    from reasonspan.runtime.batch.grammar import _CACHE_KEY  # imports reasonspan: see the doc
    from tests.support.fixtures import release_tables

    with release_tables(_CACHE_KEY):
        yield
    _return_free_memory()


def _return_free_memory() -> None:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim``; a no-op
    elsewhere). What a module frees is not always reused by the next: a server builds its
    tables on its own threads, in glibc arenas the main thread never allocates from, so
    after test_server_tools released its llguidance tokenizers the worker still held 1.6 GB
    of free memory (2.9 GB resident, 1.25 GB after a trim)."""
    global _TRIM
    if _TRIM is None:
        try:
            _TRIM = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):
            _TRIM = False
    if _TRIM:
        _TRIM(0)


_TRIM: Any = None


# Peak memory per process: a worker once ran out of memory, so every run says how much each
# used (xdist workers hand theirs to the controller through ``workeroutput``).
_PEAKS: dict[str, int] = {}


def _peak_mib() -> int:
    """This process's peak resident set size in MiB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["peak_rss_mib"] = _peak_mib()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """xdist's hook on the controller: a worker finished and sent its peak."""
    peak = getattr(node, "workeroutput", {}).get("peak_rss_mib")
    if peak is not None:
        _PEAKS[str(node.gateway.id)] = int(peak)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    peaks = _PEAKS or {"main": _peak_mib()}
    line = ", ".join(f"{name} {mib} MiB" for name, mib in sorted(peaks.items()))
    terminalreporter.write_line(f"peak RSS per process: {line}")
    terminalreporter.write_line(_vllm_line())
    if not any("integrations_sglang" in str(arg) for arg in terminalreporter.config.args):
        terminalreporter.write_line(_sglang_line())
