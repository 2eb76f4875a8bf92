"""What the vLLM plugin's reasoning parser reads off a family's markers and its template.

- :func:`end_token_ids`: vLLM's ``reasoning_end_token_ids`` / ``implicit_reasoning_end_token_ids``
  (every single token that ends reasoning; tool-call starts are the implicit ones).
- :func:`may_hold_marker`: whether token ids can hold any of the family's markers at all
  (the "no marker found" answer of :meth:`ReasoningAdapter.is_reasoning_end`).
- :func:`honoured_switches`: the chat_template_kwargs with a thinking switch dropped when
  the chat template vLLM's tokenizer carries ignores it (GLM-5.3's template opens ``<think>``
  whatever ``enable_thinking`` says, and never reads it).
- :data:`GATE_FAMILIES`: the family whose markers say where the model's reasoning ends, for
  a family that reports reasoning as content (vLLM's grammar gate).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from reasonspan.runtime import ReasoningParser
from reasonspan.runtime.parser.registry import get_parser_class
from reasonspan.tokenizer.loader import LoadedTokenizer

log = logging.getLogger("reasonspan.integrations.vllm")

GATE_FAMILIES: dict[str, str] = {"minimax_m2_append_think": "minimax_m2"}
"""family -> the family whose markers end the model's reasoning, where the family reports
that reasoning as content. MiniMax-M2 "append think" labels every token content by design
(the client splits the text itself), but the model still thinks until ``</think>``: a
structured-output grammar must not constrain that thinking, so vLLM's grammar gate
(``is_reasoning_end``) reads M2's markers, as vLLM's own ``minimax_m2_append_think`` does."""


def _single(tok: LoadedTokenizer, markers: tuple[str, ...]) -> set[int] | None:
    """The ids of markers that are one token each, or None if one of them is not."""
    ids: set[int] = set()
    for marker in markers:
        tid = tok.tokenizer.token_to_id(marker)
        if tid is None:
            return None
        ids.add(tid)
    return ids


def end_token_ids(parser: ReasoningParser) -> tuple[frozenset[int], frozenset[int]]:
    """``(reasoning_end_token_ids, implicit_reasoning_end_token_ids)`` as vLLM defines them:
    every token that alone ends reasoning (the end markers, and the tool-call starts that
    end it, which are also content: the implicit ones), or both empty when reasoning can
    end another way (a marker of several tokens, a family without markers in its spec, or
    thinking off)."""
    spec = parser.machine.spec
    if not parser.thinking_enabled or not spec.end:
        return frozenset(), frozenset()
    ends = _single(parser.tokenizer, spec.end)
    tools = _single(parser.tokenizer, spec.tool)
    if ends is None or tools is None:
        return frozenset(), frozenset()
    return frozenset(ends | tools), frozenset(tools - ends)


def marker_pieces(parser: ReasoningParser) -> frozenset[int] | None:
    """Every token id of the family's markers as its vocabulary encodes them (a marker of
    several tokens contributes each of them), or None when the family keeps its markers
    elsewhere than its spec (a custom machine: nothing can be ruled out)."""
    spec = parser.machine.spec
    markers = (*spec.start, *spec.end, *spec.tool, *spec.turn, *spec.strip, *spec.cut)
    markers += spec.text_markers
    if not markers:
        return None
    cache = parser.tokenizer.cache.setdefault("vllm_marker_pieces", {})
    assert isinstance(cache, dict)
    got = cache.get(markers)
    if got is None:
        encode = parser.tokenizer.tokenizer.encode
        got = cache[markers] = frozenset(
            t for m in markers for t in encode(m, add_special_tokens=False).ids
        )
    assert isinstance(got, frozenset)
    return got


def may_hold_marker(parser: ReasoningParser, ids: list[int]) -> bool:
    """False only when none of ``ids`` can be part of a marker of the family: no marker was
    found, so the scan's answer is the turn's start state (which the plugin may know
    better than the family's documented default: :func:`is_reasoning_end`)."""
    pieces = marker_pieces(parser)
    return pieces is None or not pieces.isdisjoint(ids)


def _switch_keys(cls: type[ReasoningParser]) -> frozenset[str]:
    spec = cls.spec
    return frozenset((*spec.thinking_switches, *(k for k, _ in spec.thinking_off_when)))


def _reads_none_of(template: str, names: frozenset[str] | set[str]) -> bool:
    """Whether the template, parsed (not rendered), reads none of these variables: then
    the prompt is the same whatever they say. False when it does not parse (nothing is
    known) or ``names`` is empty."""
    if not names:
        return False
    try:
        from jinja2 import Environment, meta

        env = Environment(extensions=["jinja2.ext.loopcontrols"])
        read = meta.find_undeclared_variables(env.parse(template))
    except Exception:  # jinja2 missing, or a syntax it does not know: nothing is known
        return False
    return read.isdisjoint(names)


def honoured_switches(
    family: str, tok: LoadedTokenizer, kwargs: Mapping[str, Any], template: Any
) -> dict[str, Any]:
    """``kwargs`` without the thinking switches that the chat template ignores.

    A switch that turns thinking off is checked against the template vLLM's tokenizer
    carries (reasonspan's template profile renders it under these kwargs): a template that
    still opens a reasoning block has no such switch (GLM-5.3's), and obeying the switch
    would call the model's reasoning the answer. Such a switch is dropped (and logged), as
    vLLM's GLM parser does for that template. A template that does not render (a
    fragment, or one that needs messages the profile does not write) is parsed instead: a
    switch it never reads is dropped too, since the prompt is the same without it. Checked
    once per tokenizer, family, kwargs and template; without a template or with thinking
    on, nothing is rendered."""
    out = dict(kwargs)
    if not out or not isinstance(template, str) or not template:
        return out
    cls = get_parser_class(family)
    if cls.resolve_switches(out)[0]:
        return out
    cache = tok.cache.setdefault("vllm_ignored_switches", {})
    assert isinstance(cache, dict)
    key = (family, json.dumps(out, sort_keys=True, default=repr), hash(template))
    if key not in cache:
        from reasonspan.detection.profile import template_profile

        profile = template_profile(cls, tok, chat_template=template)
        setting = profile.setting(out)
        if profile.fallback or setting is None or setting.error:
            # Not rendered (a fragment, or a template that needs messages of its own):
            # a template that never reads the switch cannot obey it.
            cache[key] = _reads_none_of(template, _switch_keys(cls) & out.keys())
        else:
            cache[key] = setting.switch_ignored
        if cache[key]:
            log.warning(
                "%s: the chat template ignores %s (it opens reasoning anyway, or never "
                "reads it); the switch is dropped, so the model's reasoning is not read "
                "as the answer",
                family,
                json.dumps(out, default=repr),
            )
    if cache[key]:
        return {k: v for k, v in out.items() if k not in _switch_keys(cls)}
    return out
