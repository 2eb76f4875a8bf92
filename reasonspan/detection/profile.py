"""The template profile: where a turn starts, as the model's own chat template renders it.

The most common reasoning-parser bug is a wrong start state: the template prefills
``<think>`` (so the model never writes it) while the parser waits for one, and the answer
lands in the wrong field. A family's documented default is a guess about its templates;
the template in the model folder is the fact. So, once per tokenizer and switches, this
renders a short multi-turn conversation (old reasoning in the history) with
``add_generation_prompt=True`` under each thinking setting the family knows (the
chat_template_kwargs its ``resolve_switches`` reads, probed by
:mod:`reasonspan.runtime.parser.switches`), and asks the family's own
:meth:`~reasonspan.ReasoningParser.is_prompt_in_reasoning` whether the rendered prompt
leaves the model inside reasoning: one mechanism for prompts and templates, no second
parser.

Rendering is :func:`reasonspan.serving.templates.render_chat` (jinja2, optional), within
its render budget, so a hostile template cannot hang ``create_parser`` or ``detect``.
Without jinja2, without a template, or when the template raises or spends past its budget,
the profile says so and the family's documented default applies
(:attr:`ReasoningSpec.start_source`); a parser built meanwhile logs the budget case, since
nothing else would show it.

:func:`install` plugs :func:`template_start_state` into the runtime, so every parser built
on a folder with a template (``create_parser``, ``Parser.from_tokenizer``, ``reasonspan
split``) takes its start state from the template when no prompt is given.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import msgspec

from reasonspan.runtime.core.errors import ReasonspanError
from reasonspan.runtime.core.markers import compile_machine
from reasonspan.runtime.parser.contract import ReasoningParser, set_start_state_source
from reasonspan.runtime.parser.registry import get_parser_class
from reasonspan.runtime.parser.switches import switch_effects
from reasonspan.serving.templates import (
    ChatTemplateError,
    TemplateBudgetError,
    chat_template_of,
    render_chat,
    template_from_config,
)
from reasonspan.tokenizer.files import read_json_file, read_text_file
from reasonspan.tokenizer.loader import LoadedTokenizer

log = logging.getLogger("reasonspan.detection")

CONVERSATION: tuple[dict[str, str], ...] = (
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "4", "reasoning": "Two and two make four."},
    {"role": "user", "content": "And 3+3?"},
)
"""Old reasoning in the history, so a template that replays it (with its ``</think>``)
tests that the scan stops at the current turn."""

TAIL_CHARS = 48


class SettingProfile(msgspec.Struct, frozen=True):
    """One thinking setting: its chat_template_kwargs and where the turn starts under it."""

    kwargs: dict[str, Any]
    thinking: bool
    """The family's thinking switch for these kwargs (off: the whole response is content)."""
    starts_in_reasoning: bool
    """The generation prompt leaves the model inside reasoning (the family's prompt scan of
    the rendered ids; a prompt without a marker in its last turn gets the documented
    default)."""
    prompt_tail: str
    """The end of the rendered prompt, for display."""
    error: str = ""
    """Why this setting could not be rendered (then ``starts_in_reasoning`` is the
    documented default)."""
    switch_ignored: bool = False
    """The switch turns the family's thinking off, yet the rendered prompt opens a
    reasoning block: the template does not read this switch, so the model will think while
    the parser calls everything content (use the switch the template reads)."""


class TemplateProfile(msgspec.Struct, frozen=True):
    """What the model's chat template does to a family's start state, per setting."""

    parser: str
    template_source: str | None
    """The file the template came from, or None when there is none."""
    settings: tuple[SettingProfile, ...]
    fallback: str = ""
    """Non-empty when the template could not be used at all (no template, no jinja2, the
    template raised): the reason; every setting then holds the documented default."""

    def setting(self, kwargs: Mapping[str, Any] | None = None) -> SettingProfile | None:
        """The profiled setting for exactly these kwargs, if it was profiled."""
        want = dict(kwargs or {})
        return next((s for s in self.settings if s.kwargs == want), None)

    def describe(self) -> list[str]:
        """Lines for ``reasonspan detect``."""
        if self.fallback:
            return [f"start state: {self.fallback}; the family's documented default applies"]
        lines = [f"start state from the chat template ({self.template_source}):"]
        for s in self.settings:
            what = json.dumps(s.kwargs) if s.kwargs else "default"
            if s.error:
                state = f"not rendered ({s.error})"
            elif s.switch_ignored:
                state = (
                    "the parser turns thinking off, but the template ignores this switch "
                    "and opens reasoning: use the switch the template reads"
                )
            elif not s.thinking:
                state = "thinking off: the whole response is content"
            else:
                state = "starts in reasoning" if s.starts_in_reasoning else "starts in content"
            lines.append(f"  {what}: {state}; the prompt ends {s.prompt_tail!r}")
        return lines


def _settings(cls: type[ReasoningParser]) -> list[dict[str, Any]]:
    """``{}`` (the defaults), then each probed switch value that changes the start."""
    out: list[dict[str, Any]] = [{}]
    for effect in switch_effects(cls):
        kw = {effect.key: effect.value}
        if kw not in out:
            out.append(kw)
    return out


def _template_source(tok: LoadedTokenizer) -> str:
    folder = Path(tok.source).parent
    jinja = folder / "chat_template.jinja"
    return str(jinja if jinja.is_file() else folder / "tokenizer_config.json")


def _profile_one(
    cls: type[ReasoningParser],
    tok: LoadedTokenizer,
    kwargs: Mapping[str, Any],
    template: str,
    *,
    warn: bool = False,
) -> SettingProfile:
    parser = cls.create(tok, kwargs, default_reasoning=False)  # explicit: no recursion
    try:
        text = render_chat(tok, CONVERSATION, chat_template=template, chat_template_kwargs=kwargs)
    except ChatTemplateError as exc:
        if warn and isinstance(exc, TemplateBudgetError):
            log.warning(
                "%s; %s parsers with chat_template_kwargs %s start as the family documents",
                exc,
                cls.spec.name,
                json.dumps(dict(kwargs), default=repr),
            )
        return SettingProfile(
            dict(kwargs),
            parser.thinking_enabled,
            parser.machine.turn_start_reasoning,
            "",
            error=str(exc),
        )
    ids = tok.encode(text)
    start = parser.is_prompt_in_reasoning(ids) and parser.thinking_enabled
    ignored = not parser.thinking_enabled and _opens_reasoning(cls, tok, ids)
    return SettingProfile(
        dict(kwargs), parser.thinking_enabled, start, text[-TAIL_CHARS:], switch_ignored=ignored
    )


def _opens_reasoning(cls: type[ReasoningParser], tok: LoadedTokenizer, ids: list[int]) -> bool:
    """Does the prompt's last turn end inside an open block (a start marker, no end after
    it), whatever the switches say? The family's markers, compiled with thinking on."""
    try:
        on = compile_machine(cls.resolve_spec(tok), tok, thinking=True, prompt_start=False)
    except ReasonspanError:
        return False
    return on.prompt_in_reasoning(ids)


def template_profile(
    parser: str | type[ReasoningParser],
    tok: LoadedTokenizer,
    *,
    chat_template: str | None = None,
) -> TemplateProfile:
    """Render the template under each setting the family knows and scan each prompt.

    ``chat_template`` overrides the folder's template (as in :func:`render_chat`)."""
    cls = get_parser_class(parser) if isinstance(parser, str) else parser
    template = chat_template if chat_template is not None else chat_template_of(tok)
    name = cls.spec.name
    if not template:
        return _documented(cls, tok, f"no chat template in {Path(tok.source).parent}")
    source = "<given>" if chat_template is not None else _template_source(tok)
    try:
        from jinja2 import __version__  # noqa: F401  (only to say why, if it is missing)
    except ImportError:
        why = "jinja2 is not installed (pip install -e '.[demo]' in the clone)"
        return _documented(cls, tok, why)
    settings = tuple(_profile_one(cls, tok, kw, template) for kw in _settings(cls))
    if settings[0].error:
        return _documented(cls, tok, f"the chat template did not render: {settings[0].error}")
    return TemplateProfile(name, source, settings)


def _documented(cls: type[ReasoningParser], tok: LoadedTokenizer, why: str) -> TemplateProfile:
    settings = []
    for kw in _settings(cls):
        p = cls.create(tok, kw, default_reasoning=False)
        settings.append(SettingProfile(kw, p.thinking_enabled, p.machine.turn_start_reasoning, ""))
    return TemplateProfile(cls.spec.name, None, tuple(settings), fallback=why)


# ---------------------------------------------------------------------- the runtime's source


def _kwargs_key(kwargs: Mapping[str, Any]) -> object:
    try:
        return frozenset(kwargs.items())
    except TypeError:  # unhashable values (lists, dicts): rare, so JSON is fine
        return json.dumps(kwargs, sort_keys=True, default=repr)


START_CACHE_SIZE = 256
"""Distinct (family, chat_template_kwargs, template) start states kept per tokenizer."""


def template_start_state(
    cls: type[ReasoningParser],
    tok: LoadedTokenizer,
    kwargs: Mapping[str, Any],
    *,
    chat_template: str | None = None,
) -> bool | None:
    """The start state the template gives these switches, or None (no template, no jinja2,
    the template raised: the family's documented default applies).

    Cached on the tokenizer per family, switches and template, so that creating a parser
    per request renders nothing after the first one. The cache keeps the newest
    :data:`START_CACHE_SIZE` entries: requests may carry any chat_template_kwargs, and a
    server must not grow without bound on them."""
    template = chat_template if chat_template is not None else chat_template_of(tok)
    if not template:
        return None
    key = (cls, _kwargs_key(kwargs), hash(template))
    cache = tok.cache.setdefault("template_start", {})
    assert isinstance(cache, dict)
    if key in cache:
        got = cache[key]
        return got if isinstance(got, bool) else None
    setting = _profile_one(cls, tok, kwargs, template, warn=True)
    start = None if setting.error else setting.starts_in_reasoning
    if len(cache) >= START_CACHE_SIZE:
        del cache[next(iter(cache))]  # the oldest entry
    cache[key] = start
    return start


def install() -> None:
    """Make the template profile the runtime's source of default start states."""
    set_start_state_source(template_start_state)


@lru_cache(maxsize=64)
def folder_chat_template(path: str) -> str | None:
    """The chat template of a model folder (or of the folder holding a tokenizer.json):
    ``chat_template.jinja``, else ``tokenizer_config.json``'s ``chat_template``. Cached by
    path, so ``create_parser(..., model_path=...)`` per request reads the folder once. Read
    as the loader reads them (bounded in size and nesting): a file it would refuse is a
    :class:`TokenizerLoadError` naming it."""
    p = Path(path)
    folder = p if p.is_dir() else p.parent
    jinja = read_text_file(folder / "chat_template.jinja")
    if jinja is not None:
        return jinja
    data = read_json_file(folder / "tokenizer_config.json")
    return template_from_config(data) if data is not None else None
