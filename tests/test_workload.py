"""The simulated engine's scripts follow the rendered prompt, as a model would, and the demo
prints each request's lines in stream order. Real tokenizers and their own chat templates."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonspan import create_parser_sync
from reasonspan.prompts import render_prompt
from reasonspan.workload import prompt_opening, scripted_output
from tests.support.fixtures import tokenizer

REASONING = "The user greets me. I should greet back."
ANSWER = "Hello! How can I help?"
HI = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("model", "family", "kwargs", "opening"),
    [
        ("qwen-3.5", "qwen3", {}, "open"),  # the template ends with <think>\n
        ("deepseek-r1", "deepseek_r1", {}, "open"),
        ("glm-4.7-flash", "glm47", {}, "open"),  # ... with <think>
        ("qwen-3", "qwen3", {}, "none"),  # the model opens <think> itself
        ("minimax-m3", "minimax_m3", {}, "none"),
        ("minimax-m3", "minimax_m3", {"thinking_mode": "enabled"}, "open"),
        ("minimax-m3", "minimax_m3", {"thinking_mode": "disabled"}, "closed"),
    ],
)
def test_script_follows_the_rendered_prompt(
    model: str, family: str, kwargs: dict[str, Any], opening: str
) -> None:
    tok = tokenizer(model)
    parser = create_parser_sync(family, tok, kwargs)
    prompt, _how = render_prompt(tok, HI, **kwargs)
    assert prompt_opening(parser, prompt) == opening
    script = scripted_output(parser, REASONING, ANSWER, "", prompt_ids=prompt)
    start = parser.spec.start[0]
    # Never a second opener after the template's, never one after it closed reasoning.
    assert script.startswith(start) == (opening == "none")
    assert script.count(start) == (1 if opening == "none" else 0)
    res = parser.parse(tok.encode(script), prompt_token_ids=prompt)
    assert (res.content or "").strip() == ANSWER
    expected = None if opening == "closed" else REASONING
    assert (res.reasoning.strip() if res.reasoning else None) == expected


def test_server_script_follows_the_prompt() -> None:
    """The SIMULATED serving engine's default script (no simulated_output) does too."""
    from reasonspan.serving.engine import EngineRequest, script_for
    from reasonspan.serving.protocol import parse_request

    tok = tokenizer("qwen-3.5")
    parser = create_parser_sync("qwen3", tok)
    prompt, _how = render_prompt(tok, HI)
    request = parse_request(json.dumps({"model": "m", "messages": HI}).encode())
    ids = script_for(EngineRequest(1, parser, prompt, request))
    assert not tok.decode(ids).lstrip().startswith("<think>")
    res = parser.parse(ids, prompt_token_ids=prompt)
    assert res.reasoning and res.content and "<think>" not in res.reasoning


def test_demo_prints_the_reasoning_tail_before_the_content(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A reasoning line left unfinished when content starts is printed before the content."""
    from reasonspan.demo import Case, Screen
    from reasonspan.runtime.stream.simulation import SimRequest

    tok = tokenizer("qwen-3")
    parser = create_parser_sync("qwen3", tok)
    case = Case(SimRequest(1, parser, [], []), "qwen3", "", {})
    screen = Screen(color=False)
    screen.emit(case, "reasoning", "first line\nthe tail, no newline")
    screen.emit(case, "content", ANSWER + "\n")
    screen.emit(case, "reasoning", "", final=True)
    screen.emit(case, "content", "", final=True)
    lines = [ln.split("│ ", 1)[1] for ln in capsys.readouterr().out.splitlines()]
    assert lines == ["first line", "the tail, no newline", ANSWER]
