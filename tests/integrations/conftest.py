"""The vLLM plugin's tests need vLLM, which the main test environment does not install (its
GPU requirements are several GB): they are collected only where vLLM imports, and
``bash scripts/vllm_env.sh`` builds the environment that runs them (``.venv-vllm``). The
session header says which, so a run without them says so instead of skipping silently."""

from __future__ import annotations

import importlib.util

import pytest

HAS_VLLM = importlib.util.find_spec("vllm") is not None

collect_ignore = [] if HAS_VLLM else ["test_vllm_plugin.py"]


def pytest_report_header(config: pytest.Config) -> str:
    if HAS_VLLM:
        return "vllm plugin tests: collected (vLLM is installed)"
    return (
        "vllm plugin tests: not collected, vLLM is not installed here "
        "(bash scripts/vllm_env.sh builds .venv-vllm, which runs them)"
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The same line at the end of a whole-suite run (this conftest loads after the
    header is written there)."""
    if not HAS_VLLM:
        terminalreporter.write_line(pytest_report_header(terminalreporter.config))
