"""The matrix rows of seed_oss, nemotron_v3, ernie45, hy_v3, olmo3,
hunyuan_a13b, each against its row of the model matrix.

Every case runs twice: ``parse()`` of the whole output, and ``TextSplitter`` fed one token
at a time; both must give the expected text (the stream after applying its finish signal).
Expected texts are written from the format, never computed by the parser.
"""

from __future__ import annotations

from typing import Any

import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel

import reasonspan
from reasonspan import (
    InvalidOptionError,
    Label,
    LoadedTokenizer,
    MissingMarkerError,
    ParseResult,
    ReasoningParser,
)
from tests.support.cases import split_with_parser
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer


def parser_for(
    family: str, kwargs: dict[str, Any] | None = None, tok: LoadedTokenizer | None = None
) -> ReasoningParser:
    return reasonspan.create_parser_sync(
        family, tok or tokenizer(FAMILY_TOKENIZERS[family]), kwargs
    )


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


# ---------------------------------------------------------------------------- seed_oss

SEED_Q = "<seed:bos>user\nHi<seed:eos>\n<seed:bos>assistant\n"


def test_seed_oss_start_in_prompt_or_output() -> None:
    assert texts(split("seed_oss", "<seed:think>ok</seed:think>Hi", prompt=SEED_Q)) == (
        "ok",
        "Hi",
    )
    prefilled = SEED_Q + "<seed:think>"
    assert in_reasoning("seed_oss", prefilled)
    assert texts(split("seed_oss", "ok</seed:think>Hi", prompt=prefilled)) == ("ok", "Hi")


def test_seed_oss_truncated_empty_content_only() -> None:
    res = split("seed_oss", "<seed:think>so far", prompt=SEED_Q)
    assert texts(res) == ("so far", None) and not res.reasoning_ended
    assert texts(split("seed_oss", "<seed:think></seed:think>Hi", prompt=SEED_Q)) == (None, "Hi")
    off = {"enable_thinking": False}
    assert not in_reasoning("seed_oss", SEED_Q + "<seed:think>", off)
    assert texts(split("seed_oss", "Hi", prompt=SEED_Q, kwargs=off)) == (None, "Hi")
    assert texts(split("seed_oss", "<seed:think>x</seed:think>y", kwargs=off)) == (
        None,
        "<seed:think>x</seed:think>y",
    )


def test_seed_oss_tool_call_and_repeats() -> None:
    call = "<seed:tool_call>\n<function=f>\n</function>\n</seed:tool_call>"
    res = split("seed_oss", "<seed:think>use f" + call, prompt=SEED_Q)
    assert texts(res) == ("use f", call)
    assert texts(split("seed_oss", "<seed:think>a</seed:think>b</seed:think>c")) == (
        "a",
        "b</seed:think>c",
    )


def test_seed_oss_multi_turn_history() -> None:
    history = (
        "<seed:bos>user\nQ1<seed:eos>\n<seed:bos>assistant\n<seed:think>old</seed:think>A1"
        "<seed:eos>\n<seed:bos>user\nQ2<seed:eos>\n<seed:bos>assistant\n"
    )
    # The old </seed:think> is behind the current turn's <seed:bos>: the turn starts fresh.
    assert in_reasoning("seed_oss", history)
    assert not in_reasoning("seed_oss", history, {"enable_thinking": False})
    assert not in_reasoning("seed_oss", history + "<seed:think></seed:think>")


# ---------------------------------------------------------------------------- nemotron_v3

NEMO_Q = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
NEMO_ON = NEMO_Q + "<think>\n"
NEMO_OFF = NEMO_Q + "<think></think>"


def test_nemotron_v3_as_qwen3() -> None:
    assert in_reasoning("nemotron_v3", NEMO_ON)
    assert texts(split("nemotron_v3", "plan\n</think>\n\nHello", prompt=NEMO_ON)) == (
        "plan\n",
        "\n\nHello",
    )
    assert texts(split("nemotron_v3", "<think>plan</think>Hello")) == ("plan", "Hello")
    res = split("nemotron_v3", "still going", prompt=NEMO_ON)
    assert texts(res) == ("still going", None) and not res.reasoning_as_content
    assert texts(split("nemotron_v3", "</think>Hello", prompt=NEMO_ON)) == (None, "Hello")
    call = '<tool_call>\n{"name": "f"}\n</tool_call>'
    assert texts(split("nemotron_v3", "use f" + call, prompt=NEMO_ON)) == ("use f", call)
    # Repeated </think> in content is dropped; a later <think> opens a block again.
    assert texts(split("nemotron_v3", "a</think>b</think>c<think>d</think>e")) == (
        "ad",
        "bce",
    )


def test_nemotron_v3_thinking_off_content_and_leaked_block() -> None:
    off = {"enable_thinking": False}
    assert not in_reasoning("nemotron_v3", NEMO_OFF, off)
    res = split("nemotron_v3", "Hello", prompt=NEMO_OFF, kwargs=off)
    assert texts(res) == (None, "Hello") and not res.reasoning_as_content
    # A block the model writes anyway is split off when an answer follows it ...
    res = split("nemotron_v3", "<think>greet</think>Hello", prompt=NEMO_OFF, kwargs=off)
    assert texts(res) == ("greet", "Hello") and not res.reasoning_as_content
    # ... and is the answer when nothing follows it.
    res = split("nemotron_v3", "<think>Hello there</think>", prompt=NEMO_OFF, kwargs=off)
    assert texts(res) == (None, "Hello there")
    assert res.reasoning_as_content and res.reasoning_tokens == 0
    assert Label.REASONING not in res.labels


def test_nemotron_v3_force_nonempty_content() -> None:
    force = {"force_nonempty_content": True}
    res = split("nemotron_v3", "only thoughts", prompt=NEMO_ON, kwargs=force)
    assert texts(res) == (None, "only thoughts")
    assert res.reasoning_as_content and not res.reasoning_ended
    assert res.content_token_ids == [t for t in res.token_ids]
    res = split("nemotron_v3", "thoughts</think>", prompt=NEMO_ON, kwargs=force)
    assert texts(res) == (None, "thoughts") and res.reasoning_ended
    # Content (a tool call counts) means no swap; nor does the default without the switch.
    call = "<tool_call>\n{}\n</tool_call>"
    res = split("nemotron_v3", "t" + call, prompt=NEMO_ON, kwargs=force)
    assert texts(res) == ("t", call) and not res.reasoning_as_content
    res = split("nemotron_v3", "thoughts</think>", prompt=NEMO_ON)
    assert texts(res) == ("thoughts", None) and not res.reasoning_as_content
    with pytest.raises(InvalidOptionError):
        parser_for("nemotron_v3", {"force_nonempty_content": "yes"})


def test_nemotron_v3_stream_signals_the_swap_at_finish() -> None:
    """Streaming labels + the finish() signal == parse(), for every cut of the output."""
    parser = parser_for("nemotron_v3", {"force_nonempty_content": True})
    assert parser.may_return_reasoning_as_content
    assert not parser_for("nemotron_v3").may_return_reasoning_as_content
    ids = parser.tokenizer.encode("a b c d</think>")
    whole = parser.parse(ids, prompt_token_ids=parser.tokenizer.encode(NEMO_ON))
    for cut in range(len(ids) + 1):
        parser.reset()
        first = parser.stream(ids[:cut], True)
        second = parser.stream(ids[cut:], first.is_still_reasoning)
        assert not first.reasoning_as_content and not second.reasoning_as_content
        tail = parser.finish()
        assert tail.reasoning_as_content
        streamed = first.labels + second.labels + tail.labels
        assert streamed.replace(bytes([Label.REASONING]), bytes([Label.CONTENT])) == whole.labels
    # reset() forgets what the last request saw.
    parser.reset()
    parser.stream(parser.tokenizer.encode("x</think>answer"), True)
    assert not parser.finish().reasoning_as_content
    parser.reset()
    parser.stream(parser.tokenizer.encode("y</think>"), True)
    assert parser.finish().reasoning_as_content


def test_nemotron_v3_multi_turn_history() -> None:
    history = (
        "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\n<think>\nold\n</think>\n\nA1"
        "<|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n"
    )
    assert in_reasoning("nemotron_v3", history + "<think>\n")
    assert in_reasoning("nemotron_v3", history)
    assert not in_reasoning("nemotron_v3", history, {"enable_thinking": False})
    assert not in_reasoning("nemotron_v3", history + "<think></think>")


# ---------------------------------------------------------------------------- ernie45

ERNIE_Q = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n"


def test_ernie45_response_wrapper_and_newlines() -> None:
    assert in_reasoning("ernie45", ERNIE_Q)
    out = "abc\n</think>\n\n<response>\ndef\n</response>\n"
    res = split("ernie45", out, prompt=ERNIE_Q)
    assert texts(res) == ("abc\n", "def")
    # Labels stay honest: the newlines are content tokens, only their text is trimmed.
    assert res.content_token_ids
    assert texts(split("ernie45", "abc\n</think>\ndef", prompt=ERNIE_Q)) == ("abc\n", "def")
    assert texts(split("ernie45", "abc</think>\n\n\ndef\n\nghi")) == ("abc", "def\n\nghi")


def test_ernie45_start_truncated_empty_repeated() -> None:
    assert texts(split("ernie45", "<think>abc</think>\n\ndef")) == ("abc", "def")
    res = split("ernie45", "abc", prompt=ERNIE_Q)
    assert texts(res) == ("abc", None) and not res.reasoning_ended
    out = "</think>\n\n<response>\ndef\n</response>"
    assert texts(split("ernie45", out, prompt=ERNIE_Q)) == (None, "def")
    assert texts(split("ernie45", "a</think>\nb</think>c", prompt=ERNIE_Q)) == (
        "a",
        "b</think>c",
    )
    # No thinking switch in this family: chat_template_kwargs leave parsing unchanged.
    off = {"enable_thinking": False}
    assert texts(split("ernie45", "a</think>b", kwargs=off)) == ("a", "b")


def test_ernie45_multi_turn_history() -> None:
    history = (
        "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\n<think>\nold\n</think>\n\n"
        "<response>\nA1\n</response><|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert in_reasoning("ernie45", history)
    assert in_reasoning("ernie45", history + "<think>\n")


# ---------------------------------------------------------------------------- hy_v3

HY = ":opensource"
HY_Q = f"<｜hy_begin_of_sentence{HY}｜><｜hy_User{HY}｜>Capital of France?<｜hy_Assistant{HY}｜>"


def test_hy_v3_resolves_the_suffixed_markers() -> None:
    parser = parser_for("hy_v3", {"reasoning_effort": "high"})
    assert parser.machine.spec.start == (f"<think{HY}>",)
    assert parser.machine.spec.turn == (f"<｜hy_Assistant{HY}｜>",)
    end_id = parser.tokenizer.single_token_id(f"</think{HY}>")
    assert parser.end_marker_token_ids() == [end_id]
    # The base vocabulary's bare <think>/</think> are single tokens too, but ordinary here.
    assert parser.tokenizer.single_token_id("</think>") is not None
    out = f"a</think>b</think{HY}>Paris"
    assert texts(
        split("hy_v3", out, prompt=HY_Q + f"<think{HY}>", kwargs={"reasoning_effort": "high"})
    ) == (
        "a</think>b",
        "Paris",
    )


async def test_hy_v3_reasoning_end_token_id_uses_the_suffix() -> None:
    tok = tokenizer(FAMILY_TOKENIZERS["hy_v3"])
    cls = reasonspan.get_parser_class("hy_v3")
    assert await cls.reasoning_end_token_id(tok) == tok.single_token_id(f"</think{HY}>")


def test_hy_v3_reasoning_effort() -> None:
    default = parser_for("hy_v3")
    assert not default.thinking_enabled
    no_think = HY_Q + f"<think{HY}></think{HY}>"
    assert not default.is_prompt_in_reasoning(default.tokenizer.encode(no_think))
    res = split("hy_v3", "Paris.", prompt=no_think)
    assert texts(res) == (None, "Paris.")
    out = f"x</think{HY}>y"
    assert texts(split("hy_v3", out, kwargs={"reasoning_effort": "no_think"})) == (None, out)
    high = {"reasoning_effort": "high"}
    assert in_reasoning("hy_v3", HY_Q + f"<think{HY}>", high)
    assert texts(split("hy_v3", f"Recall.</think{HY}>Paris.", kwargs=high)) == (
        "Recall.",
        "Paris.",
    )
    assert texts(
        split("hy_v3", f"<think{HY}>r</think{HY}>c", kwargs={"reasoning_effort": "low"})
    ) == (
        "r",
        "c",
    )
    res = split("hy_v3", "Recalling", kwargs=high)
    assert texts(res) == ("Recalling", None) and not res.reasoning_ended
    assert texts(split("hy_v3", f"</think{HY}>Paris", kwargs=high)) == (None, "Paris")
    with pytest.raises(InvalidOptionError):
        parser_for("hy_v3", {"reasoning_effort": 1})


def test_hy_v3_multi_turn_history() -> None:
    high = {"reasoning_effort": "high"}
    history = (
        f"<｜hy_begin_of_sentence{HY}｜><｜hy_User{HY}｜>Q1<｜hy_Assistant{HY}｜>"
        f"<think{HY}></think{HY}>A1<｜hy_eos{HY}｜><｜hy_User{HY}｜>Q2<｜hy_Assistant{HY}｜>"
    )
    assert in_reasoning("hy_v3", history + f"<think{HY}>", high)
    assert in_reasoning("hy_v3", history, high)
    assert not in_reasoning("hy_v3", history + f"<think{HY}></think{HY}>", high)


def test_hy_v3_suffix_from_config_preview_and_ambiguity() -> None:
    def with_bare_turn(tok: LoadedTokenizer) -> LoadedTokenizer:
        # The bare-suffix variants need the bare turn marker (the prompt scan's bound).
        copy = Tokenizer.from_str(tok.tokenizer.to_str())
        copy.add_special_tokens(["<｜hy_Assistant｜>"])
        return LoadedTokenizer(copy, tok.source, config={"token_suffix": ""})

    base = tokenizer(FAMILY_TOKENIZERS["hy_v3"])
    # tokenizer_config.json's token_suffix wins when its pair is in the vocabulary.
    configured = with_bare_turn(base)
    assert parser_for("hy_v3", tok=configured).machine.spec.start == ("<think>",)
    # A preview vocabulary (bare pair only) resolves to the bare markers.
    preview_tok = with_bare_turn(tokenizer("qwen-3"))
    preview_tok.config.clear()
    preview = parser_for("hy_v3", {"reasoning_effort": "high"}, tok=preview_tok)
    assert preview.machine.spec.start == ("<think>",)
    # Without any turn marker the scan cannot be bounded: the wrong tokenizer is an error.
    with pytest.raises(MissingMarkerError, match=r"<｜hy_Assistant｜>.*assistant-turn marker"):
        parser_for("hy_v3", {"reasoning_effort": "high"}, tok=tokenizer("qwen-3"))
    # Two suffixed pairs and no token_suffix: refuse to guess.
    tiny = Tokenizer(WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    tiny.add_special_tokens(["<think:a>", "</think:a>", "<think:b>", "</think:b>"])
    with pytest.raises(MissingMarkerError, match="token_suffix"):
        parser_for("hy_v3", tok=LoadedTokenizer(tiny, "tiny"))


# ---------------------------------------------------------------------------- olmo3


def test_olmo3_markers_are_several_tokens_and_tokenize_in_context() -> None:
    tok = tokenizer(FAMILY_TOKENIZERS["olmo3"])
    assert tok.single_token_id("<think>") is None and tok.single_token_id("</think>") is None
    ends = {tuple(tok.encode(p + "</think>"))[-3:] for p in ("x", "x ", "x.")}
    assert len(ends) == 3  # "</" "think" ">", " </" …, ".</" …
    starts = {tuple(tok.encode(p + "<think>"))[-3:] for p in ("x", "x ")}
    assert len(starts) == 2  # "<th" "ink" ">" vs " <" "think" ">"
    for before in ("x", "x ", "x.", "x\n"):
        assert texts(split("olmo3", before + "</think>answer")) == (before, "answer")
    assert texts(split("olmo3", "Hi <think>r</think> c")) == ("Hi r", " c")


def test_olmo3_prompt_start_and_output_start() -> None:
    q = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    assert in_reasoning("olmo3", q + "<think>")
    assert texts(split("olmo3", "plan</think>Hello", prompt=q + "<think>")) == ("plan", "Hello")
    assert texts(split("olmo3", "<think>plan</think>Hello", prompt=q)) == ("plan", "Hello")
    res = split("olmo3", "<think>still", prompt=q)
    assert texts(res) == ("still", None) and not res.reasoning_ended
    assert texts(split("olmo3", "</think>Hello", prompt=q)) == (None, "Hello")
    closed = q + "<think>\n</think>\n"
    assert not in_reasoning("olmo3", closed)
    assert texts(split("olmo3", "Hello", prompt=closed)) == (None, "Hello")
    # Repeated markers after the answer are text.
    assert texts(split("olmo3", "a</think>b</think>c<think>d")) == ("a", "b</think>c<think>d")


def test_olmo3_holds_a_partial_marker_until_it_is_decided() -> None:
    parser = parser_for("olmo3")
    tok = parser.tokenizer
    first = parser.stream(tok.encode("plan</"), True)
    assert first.held_token_count == 1
    second = parser.stream(tok.encode("think"), first.is_still_reasoning)
    assert second.held_token_count == 2 and second.is_still_reasoning
    third = parser.stream(tok.encode(">ok"), second.is_still_reasoning)
    assert not third.is_still_reasoning and third.held_token_count == 0


def test_olmo3_multi_turn_history() -> None:
    history = (
        "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\n<think>old</think>A1<|im_end|>\n"
        "<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n"
    )
    assert in_reasoning("olmo3", history)
    unclosed = history.replace("<think>old</think>A1", "<think>cut off")
    assert not in_reasoning("olmo3", unclosed + "<think>\n</think>\n")


# ---------------------------------------------------------------------------- hunyuan_a13b

A13B_Q = "<|startoftext|>Q<|extra_0|>"


def test_hunyuan_a13b_think_and_answer() -> None:
    out = "<think>\nplan\n</think>\n<answer>\nHello\n</answer>"
    res = split("hunyuan_a13b", out, prompt=A13B_Q)
    assert texts(res) == ("plan", "Hello")
    assert res.reasoning_ended
    # The end marker starts inside a token ("\n\n" before "</") and still matches.
    out = "<think>\nplan\n\n</think>\n<answer>\nHello\n</answer>"
    assert texts(split("hunyuan_a13b", out)) == ("plan\n", "Hello")


def test_hunyuan_a13b_fast_think_answer_only_and_no_markers() -> None:
    assert not in_reasoning("hunyuan_a13b", A13B_Q)
    fast = "<think>\n\n</think>\n<answer>\nHello\n</answer>"
    assert texts(split("hunyuan_a13b", fast, prompt=A13B_Q)) == (None, "Hello")
    fast = "<think>\n\n</think>\n<answer>Hello</answer>"
    assert texts(split("hunyuan_a13b", fast, prompt=A13B_Q)) == (None, "Hello")
    assert texts(split("hunyuan_a13b", "<answer>\nHi\n</answer>")) == (None, "Hi")
    assert texts(split("hunyuan_a13b", "Just text.")) == (None, "Just text.")


def test_hunyuan_a13b_truncated_empty_repeated() -> None:
    res = split("hunyuan_a13b", "<think>\nplan")
    assert texts(res) == ("plan", None) and not res.reasoning_ended
    res = split("hunyuan_a13b", "<think>\nplan\n</think>\n<answer>\n")
    assert texts(res) == ("plan", None) and res.reasoning_ended
    out = "<think>\na\n</think>\n<answer>\nb\n</think>\n<answer>\nc\n</answer>"
    assert texts(split("hunyuan_a13b", out)) == ("a", "bc")


def test_hunyuan_a13b_multi_turn_history() -> None:
    history = (
        "<|startoftext|>Q1<|extra_0|><think>\nold\n</think>\n<answer>\nA1\n</answer><|eos|>"
        "Q2<|extra_0|>"
    )
    assert not in_reasoning("hunyuan_a13b", history)
    assert in_reasoning("hunyuan_a13b", history + "<think>\n")
    unclosed = "<|startoftext|>Q1<|extra_0|><think>\nold<|eos|>Q2<|extra_0|>"
    assert not in_reasoning("hunyuan_a13b", unclosed)
