"""The vLLM plugin's tests need vLLM, which the main test environment does not install (its
GPU requirements are several GB): they are collected only where vLLM imports, and
``bash scripts/vllm_env.sh`` builds the environment that runs them (``.venv-vllm``). The
run's last lines say which (``tests/conftest.py``: the root conftest, which xdist's
controller loads too), so a run without them says so instead of skipping silently."""

from __future__ import annotations

import importlib.util

HAS_VLLM = importlib.util.find_spec("vllm") is not None

collect_ignore = (
    []
    if HAS_VLLM
    else [
        "test_vllm_plugin.py",
        "test_vllm_fixes.py",
        "test_vllm_names.py",
        "test_vllm_tekken.py",
    ]
)
