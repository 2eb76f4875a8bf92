"""The plugin under vLLM's own names (``REASONSPAN_VLLM_REPLACE=1``), inside vLLM 0.34.

A class registered under a vLLM name subclasses that name's built-in class, so checks
written against the built-in hold, while nothing of the built-in runs (``builtins.masked``).
Under vLLM's names the plugin also takes the start state vLLM's parser of that name assumes
without a prompt (``names.NO_PROMPT_START``), answers ``is_reasoning_end`` of ids without any
marker from that start state, and tells vLLM its single-token reasoning ends; a family that
reports reasoning as content gates grammars at the model's real end of reasoning; a thinking
switch the chat template ignores is dropped. Tokenizers are the families' fixtures
(``tests/support/fixtures.py``), as the fast tokenizer vLLM hands its parsers.
"""

from __future__ import annotations

import copy
import importlib
import random
from collections.abc import Iterator
from typing import Any

import pytest
from vllm.reasoning import ReasoningParser, ReasoningParserManager
from vllm.tool_parsers import ToolParser, ToolParserManager

import reasonspan
from reasonspan.integrations import vllm as plugin
from reasonspan.integrations.vllm.builtins import masked
from reasonspan.integrations.vllm.names import REASONING_NAMES, TOOL_NAMES
from reasonspan.integrations.vllm.reasoning import ReasoningAdapter
from reasonspan.integrations.vllm.tokens import loaded_tokenizer
from reasonspan.integrations.vllm.tools import ToolAdapter
from tests.integrations.vllm_ways import Fixed, hf, reference, request, streamed, whole


@pytest.fixture
def replaced(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The plugin registered under vLLM's names, undone after the test."""
    monkeypatch.setattr(
        ReasoningParserManager, "reasoning_parsers", dict(ReasoningParserManager.reasoning_parsers)
    )
    monkeypatch.setattr(ToolParserManager, "tool_parsers", dict(ToolParserManager.tool_parsers))
    monkeypatch.setenv("REASONSPAN_VLLM_REPLACE", "1")
    plugin.register()
    yield


def _builtin(manager: Any, name: str) -> type:
    module, cls = manager.lazy_parsers[name]
    found = getattr(importlib.import_module(module), cls)
    assert isinstance(found, type)
    return found


REPLACED = [
    (manager, name, family)
    for manager, table in (
        (ReasoningParserManager, REASONING_NAMES),
        (ToolParserManager, TOOL_NAMES),
    )
    for family, names in table.items()
    for name in names
]


@pytest.mark.sampled(every=4)
@pytest.mark.parametrize(("manager", "name", "family"), REPLACED)
def test_a_vllm_name_gives_a_subclass_of_its_builtin_that_runs_none_of_it(
    replaced: None, manager: Any, name: str, family: str
) -> None:
    builtin = _builtin(manager, name)
    got = (
        manager.get_reasoning_parser(name)
        if manager is ReasoningParserManager
        else manager.get_tool_parser(name)
    )
    assert issubclass(got, builtin) and got.family == family and got.vllm_name == name
    adapter, abstract = (
        (ReasoningAdapter, ReasoningParser)
        if manager is ReasoningParserManager
        else (ToolAdapter, ToolParser)
    )
    assert got.__mro__[1] is adapter
    # Every attribute the built-in's own classes define resolves to the adapter's, vLLM's
    # abstract base's, or None: no method or property of the built-in is reachable.
    for attr, value in masked(builtin, abstract, adapter).items():
        found = next(vars(k)[attr] for k in got.__mro__ if attr in vars(k))
        assert found is value
        assert value is None or any(vars(k).get(attr) is value for k in abstract.__mro__)
    # The same class when the plugin registers again (vLLM loads plugins per process).
    plugin.register()
    again = (
        manager.get_reasoning_parser(name)
        if manager is ReasoningParserManager
        else manager.get_tool_parser(name)
    )
    assert again is got


def test_step3p5_under_its_vllm_name_is_vllms_class_and_reads_as_parse(replaced: None) -> None:
    """vLLM's step3p5 tests assert ``isinstance(parser, Step3p5ParserReasoningAdapter)``: it
    holds, and the parser is reasonspan's (no vLLM engine built), through vLLM's ``Parser``
    both ways."""
    from vllm.parser.engine.registered_adapters import Step3p5ParserReasoningAdapter

    tok = hf("step3p5")
    parser = ReasoningParserManager.get_reasoning_parser("step3p5")(tok)
    assert isinstance(parser, Step3p5ParserReasoningAdapter)
    assert not hasattr(parser, "_parser_engine")
    text = "<think>Check the weather.</think>Sunny."
    ids = tok.encode(text, add_special_tokens=False)
    want = reference("step3p5", tok, ids, None, None)
    assert want == ("Check the weather.", "Sunny.", [])
    names = ("step3p5", None)
    assert whole(names, tok, ids, None, None) == want
    assert streamed(names, tok, ids, None, None, random.Random(3)) == want
    # vLLM's engine-based parsers (step3p5's) give no empty reasoning string; its marker
    # parsers (deepseek_r1's), and the plugin's own names, give "" for a block closed at once.
    assert parser.extract_reasoning("</think>Sunny.", request(None)) == (None, "Sunny.")
    own = ReasoningParserManager.get_reasoning_parser("reasonspan_step3p5")(tok)
    assert own.extract_reasoning("</think>Sunny.", request(None)) == ("", "Sunny.")
    r1 = ReasoningParserManager.get_reasoning_parser("deepseek_r1")(hf("deepseek_r1"))
    assert r1.extract_reasoning("</think>Sunny.", request(None)) == ("", "Sunny.")


def test_reasoning_end_token_ids_are_the_single_tokens_that_end_reasoning() -> None:
    """qwen3: ``</think>`` ends reasoning, and so does ``<tool_call>``, which is also content
    (vLLM's implicit end). With thinking off nothing ends reasoning by a token."""
    tok = hf("qwen3")
    cls = ReasoningParserManager.get_reasoning_parser("reasonspan_qwen3")
    end, call = tok.convert_tokens_to_ids(["</think>", "<tool_call>"])
    parser = cls(tok)
    assert parser.reasoning_end_token_ids == {end, call}
    assert parser.implicit_reasoning_end_token_ids == {call}
    assert parser.find_reasoning_end([end]) is None  # vLLM's default: ask the scan instead
    off = cls(tok, chat_template_kwargs={"enable_thinking": False})
    assert off.reasoning_end_token_ids == frozenset()


def test_glm45_under_vllms_name_starts_in_reasoning_without_a_prompt(replaced: None) -> None:
    """vLLM 0.34's ``glm45`` is its GLM-4.7 parser, which starts in reasoning; the plugin
    under that name does too when there is no prompt (``reasonspan_glm45`` keeps GLM-4.5's
    documented start, the answer). With a prompt, the prompt decides for both."""
    tok = hf("glm45")
    output = "Thinking it over.</think>The answer."
    ids = tok.encode(output, add_special_tokens=False)
    bare = tok.encode("The answer.", add_special_tokens=False)
    vllms = ReasoningParserManager.get_reasoning_parser("glm45")(tok)
    own = ReasoningParserManager.get_reasoning_parser("reasonspan_glm45")(tok)
    assert vllms.extract_reasoning(output, request(None)) == ("Thinking it over.", "The answer.")
    assert own.extract_reasoning("The answer.", request(None)) == (None, "The answer.")
    assert vllms.extract_reasoning("The answer.", request(None)) == ("The answer.", None)
    # ids without any marker: where the turn starts decides.
    assert not vllms.is_reasoning_end(bare) and own.is_reasoning_end(bare)
    assert vllms.is_reasoning_end(ids) and own.is_reasoning_end(ids)
    # GLM-4.5's template leaves <think> to the model: with its prompt both read an answer.
    prompt = tok.encode("<|user|>\nhi<|assistant|>\n", add_special_tokens=False)
    for parser in (vllms, own):
        parser.set_prompt_token_ids(prompt)
        assert parser.extract_reasoning("The answer.", request(None)) == (None, "The answer.")
        assert parser.is_reasoning_end(prompt + bare)
    names = ("glm45", None)
    assert streamed(names, tok, bare, None, None, random.Random(1)) == ("The answer.", "", [])
    assert streamed(names, tok, bare, prompt, None, random.Random(1)) == ("", "The answer.", [])


def test_append_think_gates_a_grammar_at_the_models_end_of_reasoning() -> None:
    """MiniMax-M2 "append think" reports the model's reasoning as content, but the model
    thinks until ``</think>``: vLLM's grammar gate (``is_reasoning_end``) must not open
    before it. The text stays the family's (everything content, ``<think>`` first)."""
    tok = hf("minimax_m2_append_think")
    cls = ReasoningParserManager.get_reasoning_parser("reasonspan_minimax_m2_append_think")
    parser = cls(tok)
    thinking = tok.encode("Let me think", add_special_tokens=False)
    closed = tok.encode("Let me think</think>{", add_special_tokens=False)
    assert not parser.is_reasoning_end(thinking) and not parser.is_reasoning_end([])
    assert parser.is_reasoning_end(closed)
    assert parser.is_reasoning_end_streaming(closed, closed[-2:])
    text = "Let me think</think>Yes."
    assert parser.extract_reasoning(text, request(None)) == (None, "<think>" + text)
    assert parser.count_reasoning_tokens(tok.encode(text, add_special_tokens=False)) == 0


GLM53_STYLE = (
    "[gMASK]<sop>{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
    "<|assistant|><think>"
)
"""A GLM-5.3-style template: it opens ``<think>`` with no thinking switch."""
GLM47_STYLE = (
    "[gMASK]<sop>{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
    "<|assistant|>{% if enable_thinking is defined and not enable_thinking %}</think>"
    "{% else %}<think>{% endif %}"
)
"""A GLM-4.7-style template, which honours ``enable_thinking``."""


@pytest.mark.parametrize(
    ("template", "thinks"),
    [(GLM53_STYLE, True), (GLM47_STYLE, False)],
    ids=["glm53_style", "glm47_style"],
)
def test_a_thinking_switch_the_chat_template_ignores_is_dropped(
    template: str, thinks: bool
) -> None:
    """``enable_thinking=False`` on a template that opens ``<think>`` anyway: the model
    reasons, so the parser must read reasoning (the template rendered by reasonspan's
    template profile decides, not the template's name)."""
    tok = copy.copy(hf("glm47"))
    tok.chat_template = template
    cls = ReasoningParserManager.get_reasoning_parser("reasonspan_glm47")
    parser = cls(tok, chat_template_kwargs={"enable_thinking": False})
    output = "Simple question.</think>2 + 2 = 4"
    want = ("Simple question.", "2 + 2 = 4") if thinks else (None, output)
    assert parser.extract_reasoning(output, request(None)) == want
    ids = tok.encode(output, add_special_tokens=False)
    rs = reasonspan.create_parser_sync(
        "glm47", loaded_tokenizer(tok), {} if thinks else {"enable_thinking": False}
    )
    assert parser.count_reasoning_tokens(ids) == rs.parse(ids).reasoning_tokens


UNRENDERABLE = "{% for tc in m.tool_calls %}{{ tc }}{% endfor %}<|assistant|>"
"""A template fragment that does not render (``m`` is undefined), as vLLM's own GLM-5.3
test hands one."""


@pytest.mark.parametrize(
    ("template", "thinks"),
    [
        (UNRENDERABLE + "<think>", True),
        (
            UNRENDERABLE + "{% if enable_thinking is defined and not enable_thinking %}</think>"
            "{% else %}<think>{% endif %}",
            False,
        ),
    ],
    ids=["never_reads_the_switch", "reads_the_switch"],
)
@pytest.mark.parametrize("switch", ["enable_thinking", "thinking"])
def test_a_template_that_does_not_render_keeps_a_switch_only_if_it_reads_it(
    template: str, thinks: bool, switch: str
) -> None:
    """Without a rendering to look at, the template's text decides: a switch it never reads
    cannot change the prompt, so the model thinks as it would without it (streamed and
    not). One it reads is obeyed."""
    tok = copy.copy(hf("glm47"))
    tok.chat_template = template
    cls = ReasoningParserManager.get_reasoning_parser("reasonspan_glm47")
    kwargs = {"chat_template_kwargs": {switch: False}}
    output = "Simple question.</think>2 + 2 = 4"
    # Only enable_thinking is read by the second template: "thinking" is never read there.
    obeyed = not thinks and switch == "enable_thinking"
    want = (None, output) if obeyed else ("Simple question.", "2 + 2 = 4")
    assert cls(tok, **kwargs).extract_reasoning(output, request(None)) == want
    parser = cls(tok, **kwargs)
    parts = [
        parser.extract_reasoning_streaming("", "", "", [], [], [t])
        for t in tok.encode(output, add_special_tokens=False)
    ]
    parts.append(parser.finish_streaming())
    reasoning = "".join(m.reasoning or "" for m in parts if m is not None)
    content = "".join(m.content or "" for m in parts if m is not None)
    assert (reasoning or None, content) == want


@pytest.mark.parametrize("mode", ["vllm", "reasonspan"])
def test_step3p5s_trailing_reasoning_whitespace(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """vLLM's step3p5 parser (its engine's ``strip_trailing_reasoning_whitespace``) drops
    the whitespace at the end of the reasoning and keeps the answer's: the ``vllm`` mode
    does too, streamed (held until more reasoning follows) as not; ``reasonspan`` gives
    ``parse()``'s text (one newline trimmed on each side of ``</think>``)."""
    monkeypatch.setenv("REASONSPAN_VLLM_TEXT", mode)
    tok = hf("step3p5")
    output = "<think>\nA plan, \n on two lines.\n\n \n</think>\n\nSunny."
    ids = tok.encode(output, add_special_tokens=False)
    if mode == "vllm":
        want = ("\nA plan, \n on two lines.", "\n\nSunny.", [])
    else:
        want = ("\nA plan, \n on two lines.\n\n ", "\nSunny.", [])
    assert reference("step3p5", tok, ids, None, None) == want
    names = ("reasonspan_step3p5", None)
    assert whole(names, tok, ids, None, None) == want
    for steps in (Fixed(1), Fixed(2), random.Random(5)):
        assert streamed(names, tok, ids, None, None, steps) == want
