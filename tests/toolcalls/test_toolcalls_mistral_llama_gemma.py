"""The cases that compare the tool-call formats whose calls run to the end of the output
(Mistral's, Llama's): the rule for JSON bodies, and the pythonic kinds' quiet reading.
Each family's own cases live in its module (``tests/families/test_mistral.py``,
``test_llama3_json.py``, ``test_llama4_pythonic.py``, ``test_gemma4.py``); the shared
checks in :mod:`tests.support.end_calls`.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from tests.support import end_calls
from tests.support.end_calls import Fam, every_path, got, json_args

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
