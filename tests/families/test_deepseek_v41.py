"""deepseek_v41 (DeepSeek-V4.1): V4's markers and DSML tool calls with a space after the
DSML token (``<｜DSML｜ calls>`` … ``</｜DSML｜ calls>``).

Tokenizer: DeepSeek-V4's real one (``deepseek-v4``; V4.1 has V4's vocabulary). The
tool-call checks are data run by :mod:`tests.support.section_calls`.
"""

from __future__ import annotations

import pytest

from tests.support import section_calls

# V4.1's vocabulary has V4's special tokens: its corpus ids decode exactly with V4's.
FIXTURE = "deepseek-v4"
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# reasoning_effort).
KWARGS = [{}, {"reasoning_effort": "none"}]

# One call to f(a=V) in each form of the tool-call format architectures/deepseek_v4.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '<｜DSML｜ calls>\n<｜DSML｜ invoke name="f">\n'
    '<｜DSML｜ parameter name="a" string="false">V</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n'
    "</｜DSML｜ calls>",
)

CALLS = section_calls.Family(
    "deepseek_v41",
    "deepseek-v4",
    section_calls.DS_PROMPT + "<think>",
    section_calls.dsml("calls", " "),
    think=("", "</think>"),
    leak=("DSML",),
)


@pytest.mark.parametrize("check", list(section_calls.CHECKS))
def test_section_calls(check: str) -> None:
    section_calls.CHECKS[check](CALLS)
