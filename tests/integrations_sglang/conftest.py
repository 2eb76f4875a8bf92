"""The SGLang adapter's tests need SGLang, which the main test environment does not install
(its requirements are many GB of GPU packages and its pins conflict with vLLM's):
``bash scripts/sglang_env.sh`` builds the environment that runs them, and ``.ci/run`` runs
them there. The main run does not recurse here (pyproject's ``norecursedirs``); named
explicitly where SGLang is missing, nothing is collected and the run's last line says
why."""

from __future__ import annotations

import importlib.util
from typing import Any

HAS_SGLANG = importlib.util.find_spec("sglang") is not None
WHY = (
    "tests/integrations_sglang: not run, SGLang is not installed here "
    "(bash scripts/sglang_env.sh builds the environment that runs them)"
)

collect_ignore_glob = [] if HAS_SGLANG else ["test_*.py"]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not HAS_SGLANG:
        terminalreporter.write_line(WHY)
