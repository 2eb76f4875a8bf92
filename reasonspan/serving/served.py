"""A model the server answers for, how it is warmed before the server listens, and how a
protocol's thinking on/off becomes its family's switch.

What a model's first request would build with the GIL held (llguidance's tokenizer, the
runtime's per-tokenizer tables of the SSE path and of the family's tool calls) is built
by :func:`warm_model` when the server is made (``Server.warm_up``), so no request stalls
the event loop for it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from reasonspan.runtime.batch.grammar import prepare_tokenizer
from reasonspan.runtime.core.errors import ReasonspanError
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import build_parser_sync
from reasonspan.runtime.parser.switches import defaults, switch_effects
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.serving.templates import MINIMAL_CONVERSATION, Fallback
from reasonspan.serving.templates import render_prompt_ids as unbounded_prompt_ids
from reasonspan.tokenizer import LoadedTokenizer

log = logging.getLogger("reasonspan.serving")


@dataclass
class ServedModel:
    """One model the server answers for: its tokenizer, its reasoning parser (family
    name), and how its prompts are rendered."""

    name: str
    tokenizer: LoadedTokenizer
    parser: str
    chat_template: str | None = None
    """Overrides the folder's own template (None: the folder's)."""
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    """Defaults under the request's own ``chat_template_kwargs``."""
    fallback: Fallback = None
    """``"chatml"``: render plain ChatML when the folder has no template (opt-in)."""


_WARM_TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
"""A tool offered in the warm-up requests, so the family's tool-call tables are built."""


def warm_model(model: ServedModel) -> None:
    """llguidance's tokenizer, then a request of each output form (SSE and chunks, tools
    offered) admitted into a runtime of the model's own and dropped: the tables they build
    are kept per tokenizer (its cache), where the server's runtime finds them. Nothing is
    generated; nothing reaches the engine."""
    tok = model.tokenizer
    prepare_tokenizer(tok)
    try:
        parser = build_parser_sync(model.parser, tok, dict(model.chat_template_kwargs))
        prompt_ids = unbounded_prompt_ids(
            tok,
            MINIMAL_CONVERSATION,
            chat_template=model.chat_template,
            chat_template_kwargs=model.chat_template_kwargs,
            fallback=model.fallback,
            template_name=f"model {model.name!r}",
        )
    except ReasonspanError as exc:
        log.warning("model %r: left cold (no warm-up request): %s", model.name, exc)
        return
    runtime = ReasoningRuntime(model=model.name)
    try:
        for i, sse in enumerate((True, False)):
            key = f"warm-up-{i}"
            try:
                runtime.add(key, parser, prompt_ids, tools=_WARM_TOOLS, sse=sse)
            except ReasonspanError:  # tools refused (a family without calls): without them
                runtime.add(key, parser, prompt_ids, sse=sse)
            runtime.abort(key)
    except ReasonspanError as exc:
        log.warning("model %r: left cold (warm-up request refused): %s", model.name, exc)
    finally:
        runtime.close()


def thinking_kwargs(cls: type[ReasoningParser], on: bool) -> dict[str, Any]:
    """The ``chat_template_kwargs`` entry that turns the family's thinking on or off:
    nothing when its default already does, else the first switch its probe finds (the
    probe, :func:`switch_effects`, is what the docs table and detection read too)."""
    if defaults(cls)[0] == on:
        return {}
    for effect in switch_effects(cls):
        if effect.thinking == on:
            return {effect.key: effect.value}
    return {}
