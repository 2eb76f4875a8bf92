"""hy_v3: Hy3's key/value calls in a ``<tool_calls:S>`` section, tags with the token suffix.

Tokenizer: Qwen3's BPE with the released Hy3's suffixed special tokens added
(``qwen-3_base_with_hy_v3_special_tokens``: ``<think:opensource>``,
``<tool_calls:opensource>``, ``<tool_call:opensource>``, ``<tool_sep:opensource>``,
``<arg_key:opensource>``, … one token each; SGLang's ``HunyuanDetector`` says the
shipping tokenizer suffixes each of them).

Facts (architectures/hunyuan.py, runtime/toolcalls/hunyuan_calls.py): vLLM's ``hy_v3`` tool
parser and SGLang's ``HunyuanDetector`` read ``<tool_calls>`` then per call
``<tool_call>NAME<tool_sep>`` and ``<arg_key>K</arg_key><arg_value>V</arg_value>`` pairs
(a newline between the parts in the preview's outputs), ``</tool_call>``, ``</tool_calls>``;
values typed from the schema. ``reasoning_effort`` defaults to ``no_think`` (all content).

Every expected call and text is built here from known pieces; ``every_path`` checks that
``parse()``, ``TextSplitter`` at every offset and at random offsets, and the runtime
(chunks and SSE) give the same answer.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel

import reasonspan
from reasonspan import (
    InvalidOptionError,
    LoadedTokenizer,
    MissingMarkerError,
    ReasoningParser,
)
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import family_cases as fc
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path, read_chunks, split_at

# Hy3 (released): suffixed specials, the call tags too (SGLang's HunyuanDetector: the
# shipping tokenizer suffixes each). The base's own bare <think> stays, so the tests show
# that the suffixed pair is the one resolved.
FIXTURE = "qwen-3_base_with_hy_v3_special_tokens"
ADDED_TOKENS = (
    "<｜hy_begin_of_sentence:opensource｜>",
    "<｜hy_User:opensource｜>",
    "<｜hy_Assistant:opensource｜>",
    "<｜hy_eos:opensource｜>",
    "<｜reasoning_mode:opensource｜>",
    "<think:opensource>",
    "</think:opensource>",
    "<tool_calls:opensource>",
    "</tool_calls:opensource>",
    "<tool_call:opensource>",
    "</tool_call:opensource>",
    "<tool_sep:opensource>",
    "<arg_key:opensource>",
    "</arg_key:opensource>",
    "<arg_value:opensource>",
    "</arg_value:opensource>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# reasoning_effort).
KWARGS = [{}, {"reasoning_effort": "high"}]

# One call to f(a=V) in each form of the tool-call format architectures/hunyuan.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    "<tool_calls:opensource>\n<tool_call:opensource>f<tool_sep:opensource>\n"
    "<arg_key:opensource>a</arg_key:opensource>\n<arg_value:opensource>V"
    "</arg_value:opensource>\n</tool_call:opensource>\n</tool_calls:opensource>",
)

FAMILY = "hy_v3"
S = ":opensource"
SEP = f"<tool_sep{S}>"
LAYOUT = "\n"
"""What the model writes between the parts of a call."""
TOK = tokenizer(FAMILY_TOKENIZERS[FAMILY])
TURN = f"<｜hy_begin_of_sentence{S}｜><｜hy_User{S}｜>Weather?<｜hy_Assistant{S}｜>"
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
    return reasonspan.create_parser_sync(FAMILY, TOK, {"reasoning_effort": "high"})


def default() -> ReasoningParser:
    return reasonspan.create_parser_sync(FAMILY, TOK, {})


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


def test_reasoning_effort_no_think_by_default() -> None:
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
    broken = f"<tool_call{S}>note{SEP}<arg_key{S}>a</arg_key{S}>oops</tool_call{S}>"
    out = section(broken, entry("get_weather", WEATHER))
    res = every_path(default, NO_THINK, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("get_weather", WEATHER)]
    assert not res.content


@pytest.mark.parametrize(
    "bad",
    [
        OPEN + "not a call" + CLOSE,
        OPEN + f"<tool_call{S}>two words{SEP}</tool_call{S}>" + CLOSE,
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
        assert len(res.tool_calls) == (whole if THINK_END in chosen else 0), chosen


# ---------------------------------------------------------------------- matrix rows

HY = ":opensource"
HY_Q = f"<｜hy_begin_of_sentence{HY}｜><｜hy_User{HY}｜>Capital of France?<｜hy_Assistant{HY}｜>"


def test_resolves_the_suffixed_markers() -> None:
    parser = fc.parser_for("hy_v3", {"reasoning_effort": "high"})
    assert parser.machine.spec.start == (f"<think{HY}>",)
    assert parser.machine.spec.turn == (f"<｜hy_Assistant{HY}｜>",)
    end_id = parser.tokenizer.single_token_id(f"</think{HY}>")
    assert parser.end_marker_token_ids() == [end_id]
    # The base vocabulary's bare <think>/</think> are single tokens too, but ordinary here.
    assert parser.tokenizer.single_token_id("</think>") is not None
    out = f"a</think>b</think{HY}>Paris"
    assert fc.texts(
        fc.split("hy_v3", out, prompt=HY_Q + f"<think{HY}>", kwargs={"reasoning_effort": "high"})
    ) == (
        "a</think>b",
        "Paris",
    )


async def test_reasoning_end_token_id_uses_the_suffix() -> None:
    tok = tokenizer(FAMILY_TOKENIZERS["hy_v3"])
    cls = reasonspan.get_parser_class("hy_v3")
    assert await cls.reasoning_end_token_id(tok) == tok.single_token_id(f"</think{HY}>")


def test_reasoning_effort() -> None:
    default = fc.parser_for("hy_v3")
    assert not default.thinking_enabled
    no_think = HY_Q + f"<think{HY}></think{HY}>"
    assert not default.is_prompt_in_reasoning(default.tokenizer.encode(no_think))
    res = fc.split("hy_v3", "Paris.", prompt=no_think)
    assert fc.texts(res) == (None, "Paris.")
    out = f"x</think{HY}>y"
    assert fc.texts(fc.split("hy_v3", out, kwargs={"reasoning_effort": "no_think"})) == (None, out)
    high = {"reasoning_effort": "high"}
    assert fc.in_reasoning("hy_v3", HY_Q + f"<think{HY}>", high)
    assert fc.texts(fc.split("hy_v3", f"Recall.</think{HY}>Paris.", kwargs=high)) == (
        "Recall.",
        "Paris.",
    )
    assert fc.texts(
        fc.split("hy_v3", f"<think{HY}>r</think{HY}>c", kwargs={"reasoning_effort": "low"})
    ) == (
        "r",
        "c",
    )
    res = fc.split("hy_v3", "Recalling", kwargs=high)
    assert fc.texts(res) == ("Recalling", None) and not res.reasoning_ended
    assert fc.texts(fc.split("hy_v3", f"</think{HY}>Paris", kwargs=high)) == (None, "Paris")
    with pytest.raises(InvalidOptionError):
        fc.parser_for("hy_v3", {"reasoning_effort": 1})


def test_multi_turn_history() -> None:
    high = {"reasoning_effort": "high"}
    history = (
        f"<｜hy_begin_of_sentence{HY}｜><｜hy_User{HY}｜>Q1<｜hy_Assistant{HY}｜>"
        f"<think{HY}></think{HY}>A1<｜hy_eos{HY}｜><｜hy_User{HY}｜>Q2<｜hy_Assistant{HY}｜>"
    )
    assert fc.in_reasoning("hy_v3", history + f"<think{HY}>", high)
    assert fc.in_reasoning("hy_v3", history, high)
    assert not fc.in_reasoning("hy_v3", history + f"<think{HY}></think{HY}>", high)


def test_suffix_from_config_preview_and_ambiguity() -> None:
    def with_bare_turn(tok: LoadedTokenizer) -> LoadedTokenizer:
        # The bare-suffix variants need the bare turn marker (the prompt scan's bound).
        copy = Tokenizer.from_str(tok.tokenizer.to_str())
        copy.add_special_tokens(["<｜hy_Assistant｜>"])
        return LoadedTokenizer(copy, tok.source, config={"token_suffix": ""})

    base = tokenizer(FAMILY_TOKENIZERS["hy_v3"])
    # tokenizer_config.json's token_suffix wins when its pair is in the vocabulary.
    configured = with_bare_turn(base)
    assert fc.parser_for("hy_v3", tok=configured).machine.spec.start == ("<think>",)
    # A preview vocabulary (bare pair only) resolves to the bare markers.
    preview_tok = with_bare_turn(tokenizer("qwen-3"))
    preview_tok.config.clear()
    preview = fc.parser_for("hy_v3", {"reasoning_effort": "high"}, tok=preview_tok)
    assert preview.machine.spec.start == ("<think>",)
    # Without any turn marker the scan cannot be bounded: the wrong tokenizer is an error.
    with pytest.raises(MissingMarkerError, match=r"<｜hy_Assistant｜>.*assistant-turn marker"):
        fc.parser_for("hy_v3", {"reasoning_effort": "high"}, tok=tokenizer("qwen-3"))
    # Two suffixed pairs and no token_suffix: refuse to guess.
    tiny = Tokenizer(WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    tiny.add_special_tokens(["<think:a>", "</think:a>", "<think:b>", "</think:b>"])
    with pytest.raises(MissingMarkerError, match="token_suffix"):
        fc.parser_for("hy_v3", tok=LoadedTokenizer(tiny, "tiny"))
