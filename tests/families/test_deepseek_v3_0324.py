"""deepseek_v3_0324 (DeepSeek-V3-0324): no reasoning; tool calls in a
``<｜tool▁calls▁begin｜>`` section, each ``function<｜tool▁sep｜>NAME`` and a fenced JSON
object (its chat template).

Tokenizer: DeepSeek-V3's real one (``deepseek-v3``), which has no ``<think>`` token. The
tool-call checks are data run by :mod:`tests.support.section_calls`.
"""

from __future__ import annotations

import pytest

from tests.support import section_calls
from tests.support.section_calls import TOOLS, WEATHER, deepseek_v3, expected

# DeepSeek-V3-0324's own tokenizer (no <think> in its vocabulary).
FIXTURE = "deepseek-v3"

# One call to f(a=V) in each form of the tool-call format architectures/deepseek.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{"a": V}\n'
    "```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
)

CALLS = section_calls.Family(
    "deepseek_v3_0324",
    "deepseek-v3",
    section_calls.DS_PROMPT,
    section_calls.deepseek_v3,
    leak=("｜tool",),
    json_arguments=True,
)


@pytest.mark.parametrize("check", list(section_calls.CHECKS))
def test_section_calls(check: str) -> None:
    section_calls.CHECKS[check](CALLS)


def test_section_one_bad_call_keeps_its_siblings() -> None:
    section_calls.section_one_bad_call_keeps_its_siblings(CALLS)


def test_has_no_reasoning() -> None:
    fam = CALLS
    tok = fam.tokenizer()
    assert tok.single_token_id("<think>") is None
    out = "Sure.\n" + deepseek_v3([WEATHER])
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert res.reasoning is None and res.content == "Sure."
    assert res.tool_calls == [expected(*WEATHER)]
