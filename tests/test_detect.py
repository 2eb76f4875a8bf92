"""reasonspan.detect: which parser fits a model folder, on real tokenizer folders.

Expected names come from what these models are (the model matrix, the engines' own
``--reasoning-parser`` choices), not from the detector's output. Synthetic fixtures carry
no chat template and no config.json, so for them only what a vocabulary can tell is
asserted; template and config evidence is added explicitly where a test needs it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

import reasonspan
from reasonspan import LoadedTokenizer, ReasoningParser, ReasoningSpec
from reasonspan.cli import main as cli_main
from reasonspan.detection import Detection, describe, detect
from reasonspan.detection.template_text import TemplateText
from reasonspan.runtime.parser import registry
from tests.support.fixtures import folder, tokenizer

REAL = {
    "deepseek-r1": "deepseek_r1",
    "deepseek-r1-distill-qwen-7b": "deepseek_r1",
    "deepseek-r1-distill-llama-8b": "deepseek_r1",
    "deepseek-r1-0528-qwen3-8b": "deepseek_r1",
    "qwq-32b": "deepseek_r1",
    "deepseek-v3.1": "deepseek_v3",
    "deepseek-v3.2": "deepseek_v3",
    "deepseek-v4": "deepseek_v4",
    "qwen-3": "qwen3",
    "qwen-3.5": "qwen3",
    "glm-4.5v": "glm45",
    "glm-4.7-flash": "glm47",
    "minimax": "minimax_m2",
    "minimax-m3": "minimax_m3",
}
NOT_REASONING = ["qwen-2.5", "deepseek-v2"]


def variant(
    name: str,
    *,
    chat_template: str | None = None,
    drop_template: bool = False,
    model_config: dict[str, Any] | None = None,
) -> LoadedTokenizer:
    """A fixture's vocabulary with other folder files (no reload of tokenizer.json)."""
    base = tokenizer(name)
    config = {k: v for k, v in base.config.items() if not (drop_template and k == "chat_template")}
    template = None if drop_template else (chat_template or base.chat_template)
    return LoadedTokenizer(
        base.tokenizer,
        base.source,
        config=config,
        chat_template=template,
        model_config=model_config if model_config is not None else base.model_config,
    )


# ---------------------------------------------------------------------- real folders


@pytest.mark.parametrize(("name", "expected"), sorted(REAL.items()))
def test_real_folder(name: str, expected: str) -> None:
    result = detect(tokenizer(name))
    assert result.parser == expected, describe(result)
    assert not result.ambiguous
    assert result.candidates[0].name == expected
    # The runner-up is clearly behind, and the answer names a registered parser. Scores are
    # rounded to 3 places, so their difference is too (9.341 - 7.341 is 1.99999... in floats).
    assert round(result.candidates[0].score - result.candidates[1].score, 3) >= 2
    reasonspan.get_parser_class(expected)


@pytest.mark.parametrize("name", NOT_REASONING)
def test_non_reasoning_folder_gets_no_parser(name: str) -> None:
    result = detect(tokenizer(name))
    assert result.parser is None
    assert not result.ambiguous  # "nothing fits" is not a tie
    assert result.candidates == ()
    assert "<think>" not in result.evidence.single_tokens
    assert "no reasoning parser fits" in describe(result)


def test_detect_reads_a_folder_path() -> None:
    result = detect(folder("deepseek-r1-distill-llama-8b"))
    assert result.parser == "deepseek_r1"
    assert result.evidence.source == str(folder("deepseek-r1-distill-llama-8b"))
    assert result.evidence.template is not None
    assert result.evidence.template.source == "tokenizer_config.json"


def test_prefill_evidence_follows_the_templates() -> None:
    def tpl(name: str) -> Any:
        t = detect(tokenizer(name)).evidence.template
        assert t is not None
        return t

    # R1 and QwQ prefill <think>; R1-0528 stopped doing so (the model writes it).
    assert "<think>" in tpl("deepseek-r1").prefills_start
    assert "<think>" in tpl("qwq-32b").prefills_start
    assert tpl("deepseek-r1-0528-qwen3-8b").prefills_start == ()
    # Qwen3 (2504) lets the model open <think>; only its thinking-off form writes markers.
    assert tpl("qwen-3").prefills_start == ()
    assert tpl("qwen-3").prefills_end == ("</think>",)
    assert "<think>" in tpl("qwen-3.5").prefills_start
    # GLM-4.7 prefills <think>; GLM-4.5V leaves it to the model.
    assert "<think>" in tpl("glm-4.7-flash").prefills_start
    assert "<think>" not in tpl("glm-4.5v").prefills_start
    # MiniMax-M3 spells its markers through template variables.
    assert tpl("minimax-m3").prefills_start == ("<mm:think>",)
    assert tpl("minimax").prefills_start[0] == "<think>"
    # V3.2 and V4 ship encoding scripts instead of a template.
    assert detect(tokenizer("deepseek-v3.2")).evidence.template is None


def test_thinking_switches_are_reported() -> None:
    qwen = detect(tokenizer("qwen-3"))
    assert qwen.evidence.template is not None
    assert qwen.evidence.template.kwargs == ("enable_thinking",)
    assert qwen.evidence.template.kwarg_defaults == {"enable_thinking": True}
    assert qwen.best is not None and qwen.best.thinking_off == {"enable_thinking": False}

    v31 = detect(tokenizer("deepseek-v3.1"))
    assert v31.evidence.template is not None
    assert v31.evidence.template.kwarg_defaults == {"thinking": False}
    assert v31.evidence.template.thinking_default is False
    assert v31.best is not None and v31.best.thinking_on == {"thinking": True}
    assert v31.best.thinking_off == {}

    r1 = detect(tokenizer("deepseek-r1"))
    assert r1.evidence.template is not None and r1.evidence.template.kwargs == ()
    assert r1.best is not None and r1.best.thinking_off == {} and r1.best.thinking_default

    m3 = detect(tokenizer("minimax-m3"))
    assert m3.evidence.template is not None
    assert "thinking_mode" in m3.evidence.template.kwargs

    v4 = detect(tokenizer("deepseek-v4"))  # no template: every switch the parser knows
    assert v4.best is not None
    assert v4.best.thinking_off == {
        "thinking": False,
        "enable_thinking": False,
        "reasoning_effort": "none",
    }


def test_vocabulary_evidence() -> None:
    v4 = detect(tokenizer("deepseek-v4")).evidence
    assert {"<think>", "</think>", "<｜Assistant｜>"} <= set(v4.single_tokens)
    assert "<｜DSML｜tool_calls>" in v4.composed  # several tokens, one of them ｜DSML｜
    assert "<｜DSML｜tool_calls>" not in detect(tokenizer("deepseek-v3.1")).evidence.composed
    m3 = detect(tokenizer("minimax-m3")).evidence
    assert {"<mm:think>", "</mm:think>", "]~b]"} <= set(m3.single_tokens)


# ---------------------------------------------------------------------- ambiguity


def test_shared_vocabulary_without_template_is_ambiguous() -> None:
    # Qwen3 and QwQ share this vocabulary: without the template nothing tells them apart.
    result = detect(variant("qwen-3", drop_template=True))
    assert result.evidence.template is None
    assert result.parser is None and result.ambiguous
    assert {"qwen3", "deepseek_r1"} <= set(result.tied)
    assert "ambiguous between" in describe(result)
    # The same vocabulary with QwQ's template is R1-style again.
    qwq_template = tokenizer("qwq-32b").chat_template
    assert detect(variant("qwen-3", chat_template=qwq_template)).parser == "deepseek_r1"


def test_config_model_type_settles_a_shared_vocabulary() -> None:
    # Nemotron 3 writes the same special tokens as Qwen3; only config.json can tell.
    bare = detect(tokenizer("qwen-3_base_with_nemotron_v3_special_tokens"))
    assert bare.parser != "nemotron_v3"
    assert "nemotron_v3" in [c.name for c in bare.candidates]
    named = detect(
        variant(
            "qwen-3_base_with_nemotron_v3_special_tokens",
            model_config={"model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"]},
        )
    )
    assert named.parser == "nemotron_v3", describe(named)
    assert named.evidence.model_type == "nemotron_h"
    # architectures alone are enough (matched by name).
    by_arch = detect(
        variant(
            "qwen-2.5_base_with_ernie45_special_tokens",
            model_config={"architectures": ["Ernie4_5_MoeForCausalLM"]},
        )
    )
    assert by_arch.parser == "ernie45", describe(by_arch)


def test_config_json_is_read_from_the_folder(tmp_path: Path) -> None:
    src = folder("qwen-3_base_with_nemotron_v3_special_tokens")
    shutil.copy(src / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "nemotron_h"}), "utf-8")
    assert detect(tmp_path).parser == "nemotron_v3"


# ---------------------------------------------------------------------- synthetic families

DECIDED_BY_VOCABULARY = {
    "qwen-2.5_base_with_seed_oss_special_tokens": "seed_oss",
    "qwen-2.5_base_with_mistral_special_tokens": "mistral",
    "glm-4_base_with_inkling_special_tokens": "inkling",
    "qwen-3_base_with_kimi_k2_special_tokens": "kimi_k2",
    "qwen-3_base_with_kimi_k3_special_tokens": "kimi_k3",
    "qwen-3_base_with_gemma4_special_tokens": "gemma4",
    "qwen-3_base_with_openai_gptoss_special_tokens": "openai_gptoss",
    "qwen-3_base_with_hy_v3_special_tokens": "hy_v3",
}


@pytest.mark.parametrize(("name", "expected"), sorted(DECIDED_BY_VOCABULARY.items()))
def test_family_tokens_decide(name: str, expected: str) -> None:
    # Tokens that only this family declares outweigh the base vocabulary's generic ones.
    result = detect(tokenizer(name))
    assert result.parser == expected, describe(result)


@pytest.mark.parametrize(
    ("name", "tied"),
    [
        # Step-3 and Step-3.5 share every token; cohere 3 and 4 share this fixture's.
        ("deepseek-v3.1_base_with_step3_special_tokens", {"step3", "step3p5"}),
        ("deepseek-v3_base_with_cohere_special_tokens", {"cohere_command3", "cohere_command4"}),
    ],
)
def test_same_tokens_tie(name: str, tied: set[str]) -> None:
    result = detect(tokenizer(name))
    assert result.parser is None and result.ambiguous
    assert set(result.tied) == tied


@pytest.mark.parametrize(
    "name",
    [
        "qwen-2.5_base_with_granite_special_tokens",
        "qwen-2.5_base_with_hunyuan_a13b_special_tokens",
        "qwen-2.5_base_with_magistral_2506_special_tokens",
    ],
)
def test_plain_text_markers_need_a_template(name: str) -> None:
    # Their markers are ordinary text: without a template that spells them, nothing in
    # the folder says "reasoning model", and the detector must not guess.
    result = detect(tokenizer(name))
    assert result.parser is None and not result.ambiguous


GRANITE_TEMPLATE = (
    "{%- if thinking %}{%- set system_message = 'You are a helpful AI assistant.\\n"
    "Respond in the following format:\\nHere is my thought process:\\n<thought process>\\n"
    "Here is my response:\\n<response>' %}{%- endif %}"
    "{%- for message in messages %}{{- '<|start_of_role|>' + message['role'] + "
    "'<|end_of_role|>' + message['content'] + '<|end_of_text|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_of_role|>assistant<|end_of_role|>' }}"
    "{%- endif %}"
)
OLMO3_THINK_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>' }}{% endif %}"
)


def test_text_markers_found_in_the_template() -> None:
    granite = detect(
        variant("qwen-2.5_base_with_granite_special_tokens", chat_template=GRANITE_TEMPLATE)
    )
    assert granite.parser == "granite", describe(granite)
    assert granite.evidence.template is not None
    assert "Here is my thought process:" in granite.evidence.template.markers
    # The parser reads the phrases by default; `thinking: false` switches that off.
    assert granite.best is not None and granite.best.thinking_off == {"thinking": False}

    olmo = detect(variant("qwen-2.5", chat_template=OLMO3_THINK_TEMPLATE))
    assert olmo.parser == "olmo3", describe(olmo)


# ---------------------------------------------------------------------- registry-driven


class _LateFamily(ReasoningParser):
    """A family registered after detect.py was written: same tokens as seed_oss."""

    spec = ReasoningSpec(
        name="late_seed_variant",
        start=("<seed:think>",),
        end=("</seed:think>",),
        turn=("<seed:bos>",),
        tool=("<seed:tool_call>",),
        required=("<seed:think>", "</seed:think>"),
        thinking_switches=("enable_thinking",),
    )


def test_a_family_registered_later_is_detected() -> None:
    name = "qwen-2.5_base_with_seed_oss_special_tokens"
    assert detect(tokenizer(name)).parser == "seed_oss"
    with registry.rescan_plugins_for_tests():
        registry.register(_LateFamily)
        result = detect(tokenizer(name))
        late = next(c for c in result.candidates if c.name == "late_seed_variant")
        assert any("<seed:think>" in r for r in late.reasons)
        # Identical markers to seed_oss: reported as a tie, not settled silently.
        assert result.ambiguous and set(result.tied) == {"seed_oss", "late_seed_variant"}
    assert detect(tokenizer(name)).parser == "seed_oss"


# ---------------------------------------------------------------------- template reading


def test_template_reader() -> None:
    t = TemplateText(
        "{%- set think_open = '<think>' -%}{%- set nl = '\\n' -%}"
        "{%- if not thinking is defined %}{% set thinking = false %}{% endif %}"
        "{% for message in messages %}{% if message.tool is defined %}x{% endif %}"
        "{% endfor %}"
        "{%- if add_generation_prompt %}<|im_start|>assistant{{ nl ~ think_open }}"
        "{% if enable_thinking is defined and enable_thinking is false %}"
        "{{ '<think>\\n\\n</think>' }}{% endif %}{% endif %}"
    )
    assert t.variables == {"think_open": "<think>", "nl": "\n"}
    assert t.names_read() == {"thinking", "enable_thinking"}  # not message.tool
    assert t.bool_default("thinking") is False
    assert t.bool_default("enable_thinking") is True
    gen = t.generation_prompt_start()
    assert gen is not None
    tail = t.pieces(gen)
    assert "<think>" in tail and "<|im_start|>assistant" in tail
    assert "<think>\n\n</think>" in tail
    assert TemplateText("{{ x | default(true) }}{% if x %}{% endif %}").bool_default("x") is True


# ---------------------------------------------------------------------- CLI


def test_cli_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(folder("glm-4.7-flash"))
    assert cli_main(["detect", path, "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "parser: glm47" in out
    assert 'thinking off: chat_template_kwargs {"enable_thinking":false}' in out
    assert cli_main(["detect", path, "--json"]) == 0
    decoded = msgspec.json.decode(capsys.readouterr().out, type=Detection)
    assert decoded.parser == "glm47"
    assert decoded.evidence.template is not None
    assert "<think>" in decoded.evidence.template.prefills_start


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["detect", str(folder("deepseek-v2"))]) == 1
    assert "parser: none" in capsys.readouterr().out
    assert cli_main(["detect", str(tmp_path / "missing")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
