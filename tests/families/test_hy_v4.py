"""hy_v4: Hy4's key/value calls in a ``<tool_calls:S>`` section, no ``<tool_sep>``.

Tokenizer: Qwen2.5's BPE with Hy4's structural tokens added under vLLM's example suffix
(``qwen-2.5_base_with_hy_v4_special_tokens``: ``<think:6124c78e>``,
``<tool_calls:6124c78e>``, ``<tool_call:6124c78e>``, ``<arg_key:6124c78e>``,
``<arg_value:6124c78e>`` and their closes, one token each).

Facts (architectures/hunyuan_v4.py, runtime/toolcalls/hunyuan_calls.py): vLLM's ``hy_v4``
tool parser reads ``<tool_calls:S>``, per call ``<tool_call:S>NAME`` then
``<arg_key:S>K</arg_key:S><arg_value:S>V</arg_value:S>`` pairs and ``</tool_call:S>``, with
no whitespace between the parts (its tests); values typed from the schema. Thinking is on
unless ``reasoning_effort`` is ``no_think``.

Every expected call and text is built here from known pieces; ``every_path`` checks that
``parse()``, ``TextSplitter`` at every offset and at random offsets, and the runtime
(chunks and SSE) give the same answer.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import msgspec
import pytest
from tokenizers import AddedToken

import reasonspan
from reasonspan import Label, LoadedTokenizer, ReasoningParser
from reasonspan.runtime.core.errors import MissingMarkerError
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
from reasonspan.serving.protocol import ChatCompletionRequest
from tests.support import family_cases as fc
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path, read_chunks, split_at

# Hunyuan V4: structural tokens with a per-checkpoint suffix (vLLM's example suffix). The
# base's own bare <tool_call> stays, so the tests show the suffixed set is resolved.
# Qwen2.5's vocabulary has no <think>, so the think tokens here are the family's own
# (tests/families/test_matrix_added_tokens_a.py).
FIXTURE = "qwen-2.5_base_with_hy_v4_special_tokens"
ADDED_TOKENS = (
    "<think:6124c78e>",
    "</think:6124c78e>",
    "<tool_calls:6124c78e>",
    "</tool_calls:6124c78e>",
    "<tool_call:6124c78e>",
    "</tool_call:6124c78e>",
    "<arg_key:6124c78e>",
    "</arg_key:6124c78e>",
    "<arg_value:6124c78e>",
    "</arg_value:6124c78e>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# reasoning_effort).
KWARGS = [{}, {"reasoning_effort": "no_think"}]

# One call to f(a=V) in each form of the tool-call format architectures/hunyuan_v4.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    "<tool_calls:6124c78e><tool_call:6124c78e>f<arg_key:6124c78e>a</arg_key:6124c78e>"
    "<arg_value:6124c78e>V</arg_value:6124c78e></tool_call:6124c78e>"
    "</tool_calls:6124c78e>",
)

FAMILY = "hy_v4"
S = ":6124c78e"
SEP = ""
LAYOUT = ""
"""What the model writes between the parts of a call."""
TOK = tokenizer(FAMILY_TOKENIZERS[FAMILY])
TURN = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
PROMPT = TOK.encode(TURN + f"<think{S}>")
"""The prompt with thinking on: the template opens the block."""
NO_THINK = TOK.encode(TURN + f"<think{S}></think{S}>")
THINK_END = f"</think{S}>"
OPEN, CLOSE = f"<tool_calls{S}>", f"</tool_calls{S}>"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "metric": {"type": "boolean"},
                    "where": {"type": "object"},
                    "tags": {"type": "array"},
                },
            },
        },
    },
    {"type": "function", "function": {"name": "note", "parameters": {"type": "object"}}},
]


def parser() -> ReasoningParser:
    return reasonspan.create_parser_sync(FAMILY, TOK, {})


def default() -> ReasoningParser:
    """``reasoning_effort: no_think``: the whole output is content."""
    return reasonspan.create_parser_sync(FAMILY, TOK, {"reasoning_effort": "no_think"})


def raw(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def entry(name: str, args: dict[str, Any]) -> str:
    pairs = "".join(
        f"<arg_key{S}>{k}</arg_key{S}>{LAYOUT}<arg_value{S}>{raw(v)}</arg_value{S}>{LAYOUT}"
        for k, v in args.items()
    )
    return f"<tool_call{S}>{name}{SEP}{LAYOUT}{pairs}</tool_call{S}>"


def section(*entries: str) -> str:
    return OPEN + LAYOUT + LAYOUT.join(entries) + LAYOUT + CLOSE


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


WEATHER = {"city": "深圳", "days": 3}


def test_the_written_shape_has_no_separator_or_whitespace() -> None:
    assert entry("note", {"a": 1}) == (
        f"<tool_call{S}>note<arg_key{S}>a</arg_key{S}><arg_value{S}>1</arg_value{S}></tool_call{S}>"
    )


NOTE = {"text": "两行\n 🙂 "}


def test_the_suffixed_call_tags_are_single_tokens() -> None:
    for marker in (OPEN, CLOSE, f"<tool_call{S}>", f"</tool_call{S}>", f"<arg_key{S}>"):
        assert TOK.single_token_id(marker) is not None, marker
    fmt = parser().machine.spec.tool_calls
    assert fmt is not None and fmt.open == (OPEN,) and fmt.close == (CLOSE,)


def test_a_call_after_reasoning() -> None:
    out = (
        "I need the weather."
        + THINK_END
        + "Let me check.\n"
        + section(entry("get_weather", WEATHER))
    )
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "I need the weather."
    assert res.content == "Let me check."
    assert res.tool_calls == [call("get_weather", WEATHER)]


def test_a_call_section_ends_the_reasoning() -> None:
    out = "I will call it" + section(entry("get_weather", WEATHER)) + "Done."
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "I will call it"
    assert res.tool_calls == [call("get_weather", WEATHER)]
    assert res.content == "Done."


def test_two_calls_and_a_call_without_arguments() -> None:
    out = "plan" + THINK_END + section(entry("get_weather", WEATHER), entry("note", {}))
    out += "\nDone."
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("get_weather", WEATHER), call("note", {})]
    assert res.content == "Done."


def test_values_are_typed_from_the_schema_and_strings_kept_as_written() -> None:
    args = {"city": "007", "days": 4, "metric": True, "where": {"lat": 1.5}, "tags": ["a"]}
    out = THINK_END + section(entry("get_weather", args), entry("note", NOTE))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("get_weather", args), call("note", NOTE)]


def test_reasoning_effort_no_think() -> None:
    out = "Sure.\n" + section(entry("note", NOTE))
    res = every_path(default, NO_THINK, TOK.encode(out), TOOLS)
    assert res.reasoning is None
    assert res.content == "Sure."
    assert res.tool_calls == [call("note", NOTE)]


def test_a_value_close_inside_a_value_is_text() -> None:
    args = {"text": f"a </arg_value{S}> b"}
    res = every_path(default, NO_THINK, TOK.encode(section(entry("note", args))), TOOLS)
    assert res.tool_calls == [call("note", args)]


def test_a_call_that_does_not_read_drops_only_itself() -> None:
    broken = f"<tool_call{S}>note<arg_key{S}>a</arg_key{S}>oops</tool_call{S}>"
    out = section(broken, entry("get_weather", WEATHER))
    res = every_path(default, NO_THINK, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("get_weather", WEATHER)]
    assert not res.content


@pytest.mark.parametrize(
    "bad",
    [
        OPEN + "not a call" + CLOSE,
        OPEN + f"<tool_call{S}>two words</tool_call{S}>" + CLOSE,
    ],
)
def test_a_malformed_section_goes_back_to_the_content_verbatim(bad: str) -> None:
    out = "Before.\n" + bad
    res = every_path(default, NO_THINK, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.content == out


async def _served_until(ids: list[int], finish: str) -> tuple[str, str, list[tuple[str, str]]]:
    rt = ReasoningRuntime()
    stream = rt.add("r", default(), NO_THINK, tools=TOOLS)
    for i in range(0, len(ids), 2):
        rt.step([stream.engine_id], ids[i : i + 2], [0, len(ids[i : i + 2])])
    rt.finish("r", finish)  # type: ignore[arg-type]
    return await read_chunks(stream)


def test_a_section_cut_by_the_end_of_the_output_keeps_its_complete_calls() -> None:
    head = "Checking.\n" + OPEN + LAYOUT + entry("get_weather", WEATHER)
    first = len(TOK.encode(head))
    whole = TOK.encode(head + LAYOUT + entry("note", NOTE) + LAYOUT + CLOSE)
    want = [call("get_weather", WEATHER)]
    for cut in range(first, len(whole) - 2):
        ids = whole[:cut]
        res = default().parse(ids, NO_THINK, tools=TOOLS)
        assert (res.content, res.tool_calls) == ("Checking.", want), cut
        for cuts in ([], [cut // 2], list(range(0, cut, 3))):
            got = split_at(default(), NO_THINK, ids, cuts, TOOLS)
            assert got == ("", "Checking.", want), (cut, cuts)
        sent = anyio.run(_served_until, ids, "length")
        assert sent == ("", "Checking.", [("get_weather", want[0].arguments)])


def test_without_tools_there_are_no_calls() -> None:
    res = default().parse(TOK.encode("Sure.\n" + section(entry("note", NOTE))), NO_THINK)
    assert res.tool_calls == [] and res.content is not None and "note" in res.content


def test_every_split_of_mixed_outputs() -> None:
    pieces = [
        "plan ",
        THINK_END,
        "A ",
        section(entry("get_weather", {"city": "Oslo"})),
        f"\n{OPEN}{{bad}}{CLOSE}",
        " B",
        section(entry("note", {}), entry("note", NOTE)),
    ]
    for chosen in (pieces, pieces[1:], pieces[::2], pieces[1::2]):
        res = every_path(parser, PROMPT, TOK.encode("".join(chosen)), TOOLS)
        whole = sum(p.count(f"<tool_call{S}>") for p in chosen)
        # (<tool_calls:S> ends the reasoning: a section inside it is read too)
        assert len(res.tool_calls) == whole, chosen


# ---------------------------------------------------------------------- matrix rows

REASONING = "Two and two make four."
ANSWER = "It is 4."

SUFFIX = ":6124c78e"
HY_START, HY_END = f"<think{SUFFIX}>", f"</think{SUFFIX}>"
HY_TOOLS = f"<tool_calls{SUFFIX}>"


def test_reads_the_suffix_from_the_vocabulary() -> None:
    parser_cls = reasonspan.get_parser_class("hy_v4")
    spec = parser_cls.resolve_spec(tokenizer(FAMILY_TOKENIZERS["hy_v4"]))
    assert (spec.start, spec.end, spec.tool) == ((HY_START,), (HY_END,), (HY_TOOLS,))
    res = fc.split("hy_v4", f"{REASONING}{HY_END}{ANSWER}")
    assert res.started_in_reasoning
    assert (res.reasoning, res.content) == (REASONING, ANSWER)
    # The base vocabulary's bare "</think>" is ordinary text here.
    plain = fc.split("hy_v4", f"{REASONING}</think>{ANSWER}")
    assert (plain.reasoning, plain.content) == (f"{REASONING}</think>{ANSWER}", None)


def test_echoed_start_is_consumed() -> None:
    res = fc.split("hy_v4", f"{HY_START}{REASONING}{HY_END}{ANSWER}")
    assert (res.reasoning, res.content) == (REASONING, ANSWER)
    assert fc.labelled(res, FAMILY_TOKENIZERS["hy_v4"], Label.DELIMITER) == [HY_START, HY_END]


def test_tool_calls_end_reasoning() -> None:
    call = f"{HY_TOOLS}<tool_call{SUFFIX}>get_weather</tool_call{SUFFIX}></tool_calls{SUFFIX}>"
    res = fc.split("hy_v4", REASONING + call)
    assert (res.reasoning, res.content) == (REASONING, call)
    assert fc.labelled(res, FAMILY_TOKENIZERS["hy_v4"], Label.TOOL) == [HY_TOOLS]


@pytest.mark.parametrize("effort", [None, "", "low", "high", "medium"])
def test_any_effort_but_no_think_thinks(effort: str | None) -> None:
    res = fc.split("hy_v4", f"{REASONING}{HY_END}{ANSWER}", kwargs={"reasoning_effort": effort})
    assert (res.reasoning, res.content) == (REASONING, ANSWER)


def test_no_think_is_all_content() -> None:
    out = f"{REASONING}{HY_END}{ANSWER}"
    res = fc.split("hy_v4", out, kwargs={"reasoning_effort": "no_think"})
    assert not res.started_in_reasoning
    assert (res.reasoning, res.content) == (None, out)


def test_chat_template_kwargs_beat_the_top_level_effort() -> None:
    request = msgspec.convert(
        {
            "model": "hy",
            "messages": [{"role": "user", "content": "Hi"}],
            "reasoning_effort": "high",
            "chat_template_kwargs": {"reasoning_effort": "no_think"},
        },
        ChatCompletionRequest,
    )
    res = fc.split("hy_v4", f"{REASONING}{HY_END}{ANSWER}", kwargs=request.template_kwargs())
    assert res.reasoning is None


def test_refuses_an_effort_that_is_not_a_string() -> None:
    err = fc.refused("hy_v4", {"reasoning_effort": 3})
    assert err.key == "reasoning_effort"


def test_several_suffixes_are_an_error_naming_them() -> None:
    base = tokenizer(FAMILY_TOKENIZERS["hy_v4"])
    inner = type(base.tokenizer).from_str(base.tokenizer.to_str())
    inner.add_special_tokens([AddedToken("<think:other>", special=True)])
    tok = LoadedTokenizer(inner, "two-suffix-vocabulary", config=dict(base.config))
    with pytest.raises(MissingMarkerError) as info:
        reasonspan.create_parser_sync("hy_v4", tok)
    assert SUFFIX in str(info.value) and ":other" in str(info.value)
