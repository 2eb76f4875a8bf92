"""The suite's switches (``--long``, the ``sampled`` marker), its one import check, and the
order its tests run in (grouped by fixture tokenizer, so that few are loaded at a time).

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

import atexit
import ctypes
import gc
import importlib
import importlib.machinery
import importlib.util
import json
import os
import resource
import shutil
import sys
import tempfile
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
    if _groups_scheduled(config) and GROUPS_ENV not in os.environ:
        # The controller: its workers (started after this, with its environment) write
        # each test's group where the scheduler reads it (:class:`GroupScheduling`).
        where = Path(tempfile.mkdtemp(prefix="reasonspan-groups-"))
        atexit.register(shutil.rmtree, where, ignore_errors=True)
        os.environ[GROUPS_ENV] = str(where / "groups.json")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not long_run():
        _skip_long(items)
    items[:] = _grouped(items)
    target = os.environ.get(GROUPS_ENV)
    if target is not None and hasattr(config, "workerinput"):
        groups = {item.nodeid: item.stash[_GROUP] for item in items}
        part = Path(f"{target}.{os.getpid()}")
        part.write_text(json.dumps(groups), encoding="utf-8")
        part.replace(target)  # every worker writes the same map; the last one stays


def _skip_long(items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="long run: pass --long (or set REASONSPAN_LONG=1)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
    sampled_out = pytest.mark.skip(reason="not in the CI sample: --long runs every case")
    for item in sample(items):
        item.add_marker(sampled_out)


# ------------------------------------------------------------------ grouped by tokenizer
# A fixture tokenizer with its tables is 50-100 MB and the suite has ~45; kept for the
# session they made each worker hold 5-7 GB. So the tests about one fixture tokenizer (a
# ``family`` or fixture-name parameter, or a case that starts with one, or a family's own
# module) run together, across modules, and the tokenizer is released when its group ends
# (tests/support/fixtures.py loads it again on use). A test about no one tokenizer is in
# its function's group, with its other parametrized cases; a module with a module-scoped
# fixture of its own (a server) keeps its tests together (its fixture would be built again
# for each group). ``--dist loadgroup`` sends each group to one worker whole
# (:func:`pytest_xdist_make_scheduler`).

_GROUP = pytest.StashKey[str]()
_TOKENIZER_GROUP = "tokenizer "
KEEP_IN_GROUP = 8
"""Fixture tokenizers kept loaded after a test of a tokenizer's group (the ones used last:
such a test may use a second tokenizer, such as the one it is compared with)."""

KEEP_BETWEEN_GROUPS = 2
"""Fixture tokenizers kept loaded when a group ends (the ones used last: the next test
function of a module often uses the same Qwen3 or DeepSeek tokenizer), besides the next
group's own."""

_CHEAP_MODULE_FIXTURES = frozenset({"_release_grammar_tables"})


def _own_module_fixture(item: pytest.Item) -> bool:
    """``item`` uses a fixture of this suite's that lives longer than a test (a server)."""
    info = getattr(item, "_fixtureinfo", None)
    for name, defs in (getattr(info, "name2fixturedefs", None) or {}).items():
        if name in _CHEAP_MODULE_FIXTURES:
            continue
        if any(d.scope != "function" and d.baseid.startswith("tests") for d in defs):
            return True
    return False


def _fixture_of(item: pytest.Item, fixtures: Any) -> str | None:
    params = getattr(getattr(item, "callspec", None), "params", {})
    for param in params.values():
        # A family or fixture name, or a case tuple that starts with one.
        for value in param[:2] if isinstance(param, tuple) else (param,):
            if isinstance(value, str):
                if value in fixtures.FAMILY_TOKENIZERS:
                    return str(fixtures.FAMILY_TOKENIZERS[value])
                if value in fixtures.FIXTURE_NAMES:
                    return value
    module_path = item.nodeid.split("::")[0]
    if module_path.startswith("tests/families/test_"):
        family = module_path.removeprefix("tests/families/test_").removesuffix(".py")
        got = fixtures.FAMILY_TOKENIZERS.get(family)
        return None if got is None else str(got)
    return None


def _group(item: pytest.Item, fixtures: Any) -> str:
    """The group ``item`` runs in (a tokenizer's is named by :data:`_TOKENIZER_GROUP`)."""
    if fixtures is None or _own_module_fixture(item):
        return item.nodeid.split("::")[0]
    mix = getattr(getattr(item, "callspec", None), "params", {}).get("mix")
    if isinstance(mix, int):  # tests/batch/test_batch.py's MIXES: each mix's tests together
        return f"mix {mix}"
    fixture = _fixture_of(item, fixtures)
    if fixture is None:  # a test function with its parametrized cases
        return item.nodeid.split("[")[0]
    return _TOKENIZER_GROUP + fixture


def _tokenizer_of(group: str) -> str | None:
    """The fixture tokenizer a group is about (None: not a tokenizer's group)."""
    return group.removeprefix(_TOKENIZER_GROUP) if group.startswith(_TOKENIZER_GROUP) else None


def _grouped(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` with each group's tests together, where its first test was (the order is
    the same in every pytest-xdist worker)."""
    fixtures = sys.modules.get("tests.support.fixtures")
    first: dict[str, int] = {}
    keys = []
    for at, item in enumerate(items):
        group = item.stash[_GROUP] = _group(item, fixtures)
        keys.append(first.setdefault(group, at))
    return [items[j] for j in sorted(range(len(items)), key=lambda j: (keys[j], j))]


GROUPS_ENV = "REASONSPAN_TEST_GROUPS"


def _groups_scheduled(config: pytest.Config) -> bool:
    return bool(config.pluginmanager.hasplugin("xdist")) and (
        config.getoption("dist", "no") == "loadgroup"
    )


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` sends each group to one worker whole. pytest-xdist's own
    loadgroup reads ``xdist_group`` marks by renaming items, which pytest 9 no longer lets
    it do, so the workers write their groups to a file and this scheduler reads it."""
    if not _groups_scheduled(config):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                path = Path(os.environ[GROUPS_ENV])
                self.groups = json.loads(path.read_text("utf-8")) if path.exists() else {}
            got = self.groups.get(nodeid)
            return got if got is not None else nodeid.split("::")[0]

    return GroupScheduling(config, log)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """When a group ends, release the fixture tokenizers but the next group's own and the
    :data:`KEEP_BETWEEN_GROUPS` used last; inside a tokenizer's group, all but the
    :data:`KEEP_IN_GROUP` used last. Inside another group nothing goes until it ends: the
    cases of a test function may each mix every family in one batch, and each would load
    them all again."""
    yield
    fixtures = sys.modules.get("tests.support.fixtures")
    if fixtures is None:
        return
    group = item.stash.get(_GROUP, "")
    following = nextitem.stash.get(_GROUP, "") if nextitem is not None else ""
    if following != group:
        next_own = _tokenizer_of(following)
        keep = set() if next_own is None else {next_own}
        gone = fixtures.release_unused(KEEP_BETWEEN_GROUPS, keep_names=keep)
    elif _tokenizer_of(group) is not None:
        gone = fixtures.release_unused(KEEP_IN_GROUP)
    else:
        gone = 0
    if gone:
        _return_free_memory()


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """Release the fixture tokenizers a module's import loaded (but the
    :data:`KEEP_BETWEEN_GROUPS` used last, which the next module often shares): each worker imports every module, and kept, they made
    collection alone hold 1.8 GB. Then freeze what collection built (parsers, case tables:
    module-level, kept for the whole session) out of the cyclic GC: each full collection
    would otherwise walk them again, a few percent of the suite's time."""
    fixtures = sys.modules.get("tests.support.fixtures")
    if fixtures is not None and fixtures.release_unused(KEEP_BETWEEN_GROUPS):
        _return_free_memory()
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
