"""Rendering a conversation into prompt token ids, for the demo and the benchmark.

With jinja2 installed (optional; it comes with the test extra) and a chat template in the
model folder, the model's own template is rendered, so prompt seeding sees exactly what a
server would send. Otherwise a ChatML-style rendering is used and said so.
"""

from __future__ import annotations

from typing import Any

from .tokenizer import LoadedTokenizer
from .transcripts import Transcript


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
    """Return ``(prompt_token_ids, how)`` where ``how`` names the renderer used."""
    template = tok.chat_template
    if template:
        try:
            import jinja2
        except ImportError:
            jinja2 = None  # type: ignore[assignment]
        if jinja2 is not None:
            try:
                env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
                text = env.from_string(template).render(
                    messages=messages,
                    add_generation_prompt=True,
                    bos_token="",
                    eos_token="",
                    **template_kwargs,
                )
                return tok.encode(text), "the model's chat template"
            except jinja2.TemplateError:
                pass
    parts = []
    for m in messages:
        content = m["content"]
        if m["role"] == "assistant" and m.get("reasoning_content"):
            content = f"<think>\n{m['reasoning_content']}\n</think>\n\n{content}"
        parts.append(f"<|im_start|>{m['role']}\n{content}<|im_end|>\n")
    parts.append("<|im_start|>assistant\n")
    return tok.encode("".join(parts)), "a ChatML rendering (no template or no jinja2)"
