"""Rendering a conversation into prompt token ids, for the demo and the benchmark.

With a chat template in the model folder, the model's own template is rendered (by the
serving layer's renderer), so prompt seeding sees exactly what a server would send.
Otherwise a ChatML rendering is used and said so.
"""

from __future__ import annotations

from typing import Any

from reasonspan.serving.templates import chat_template_of, render_chat
from reasonspan.tokenizer import LoadedTokenizer
from reasonspan.transcripts import Transcript


def messages_for(t: Transcript) -> list[dict[str, Any]]:
    """OpenAI-style messages: the history (with its old reasoning) and the new question."""
    out: list[dict[str, Any]] = []
    for turn in t.history:
        out.append({"role": "user", "content": turn.user})
        out.append(
            {"role": "assistant", "content": turn.answer, "reasoning_content": turn.reasoning}
        )
    out.append({"role": "user", "content": t.user})
    return out


def render_prompt(
    tok: LoadedTokenizer, messages: list[dict[str, Any]], **template_kwargs: Any
) -> tuple[list[int], str]:
    """Return ``(prompt_token_ids, how)`` where ``how`` names the renderer used.

    The demo opts in to the ChatML fallback for folders without a template and says so;
    a server should not (see :func:`reasonspan.serving.render_chat`).
    """
    if chat_template_of(tok):
        text = render_chat(tok, messages, chat_template_kwargs=template_kwargs)
        return tok.encode(text), "the model's chat template"
    text = render_chat(tok, messages, chat_template_kwargs=template_kwargs, fallback="chatml")
    return tok.encode(text), "a ChatML rendering (the folder has no chat template)"
