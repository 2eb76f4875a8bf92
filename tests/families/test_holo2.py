"""holo2 (H Company's Holo2, Qwen3-based): DeepSeek-V3's switch with thinking on by default
(``thinking: false`` turns it off), R1's lead rule.

Tokenizer: Qwen3's real one (``qwen-3``). Facts: the template prefills ``<think>\\n``; with
thinking off every marker is content; blank text before the model's own ``<think>`` is
dropped, as vLLM's deepseek_r1 parser partitions the output on its first ``<think>``.

The matrix rows and fidelity cases are data run by :mod:`tests.support.family_cases`.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support import family_cases as fc
from tests.support.family_cases import Row, Split

# Qwen3's real tokenizer: Holo2 is Qwen3-based.
FIXTURE = "qwen-3"
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# thinking).
KWARGS = [{}, {"thinking": False}]

CHATML = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
ROWS = [
    Row("on", "x</think>y", "x", "y", prompt=CHATML + "<think>\n"),
    Row("off", "x</think>y", None, "x</think>y", prompt=CHATML, kwargs={"thinking": False}),
]


@pytest.mark.parametrize("row", fc.params(ROWS))
def test_matrix_row(row: Row) -> None:
    fc.check_row("holo2", row)


@pytest.mark.parametrize("case", fc.params(fc.BLANK_BEFORE_START))
@fc.SETTINGS
@given(data=st.data())
def test_blank_before_the_models_own_start_is_dropped(data: st.DataObject, case: Split) -> None:
    fc.check_split(data, "holo2", case)
