"""Tencent Hunyuan V4 (``hy_v4``).

Facts and where they come from (vLLM's
``vllm/frontend/processing/reasoning/hy_v4_reasoning_parser.py``; SGLang's ``hunyuan``
detector in ``python/sglang/srt/parser/reasoning_parser.py``; the V4 chat template is not in
the public corpus this was checked against):

- Structural tokens carry a per-checkpoint suffix: ``<think:SUFFIX>``/``</think:SUFFIX>``.
  vLLM reads it from the first vocabulary entry that matches
  ``<(think|tool_calls|tool_call|arg_key|arg_value)(:SUFFIX)?>``. A vocabulary has no
  order to speak of, so here (:func:`hy_v4_suffix`) the suffixes of all such entries are
  collected: one suffix wins over none (a base vocabulary's bare ``<think>`` is then
  ordinary text), and several different ones are an error that names them, rather than a
  choice that depends on dict order.
- The template prefills the start; a start the model echoes anyway is consumed.
- ``reasoning_effort``: ``no_think`` turns thinking off (the whole output is content, no
  marker matched, as in vLLM); anything else, and an absent or empty value, is thinking on
  (the template's default is ``high``). A top-level ``reasoning_effort`` reaches the parser
  only where ``chat_template_kwargs`` has none (the server's request model does
  ``setdefault``), so ``chat_template_kwargs`` wins, as in vLLM. A value that is not a
  string is refused.
- Decided here: ``<tool_calls:SUFFIX>`` ends reasoning and stays in content. vLLM's parser
  does not (a call written inside reasoning would stay reasoning, out of the tool parser's
  reach); SGLang's hunyuan detector does (its ``tool_start_token`` is the resolved
  ``tool_calls`` token). The template writes tool calls after ``</think:SUFFIX>``, so a
  well-formed output splits the same either way; only a call the model starts before
  closing its reasoning differs, and there the call reaching the tool parser is the useful
  reading.
- Tool calls (:func:`hy_v4_tool_calls`): ``<tool_calls:SUFFIX>``, per call
  ``<tool_call:SUFFIX>NAME``, ``<arg_key:SUFFIX>KEY</arg_key:SUFFIX>``
  ``<arg_value:SUFFIX>VALUE</arg_value:SUFFIX>`` pairs, ``</tool_call:SUFFIX>``, then
  ``</tool_calls:SUFFIX>`` (kind ``hunyuan``: Hy3's shape without ``<tool_sep>``), values typed
  from the schema, as vLLM's ``hy_v4`` tool parser and its tests read them (no whitespace
  between the parts).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

from reasonspan.runtime.core.errors import InvalidOptionError, MissingMarkerError
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.toolcalls import ToolFormat
from reasonspan.tokenizer.loader import LoadedTokenizer

_STRUCTURAL = re.compile(r"<(?:think|tool_calls|tool_call|arg_key|arg_value)(:[^\s>]+)?>")


def hy_v4_suffix(spec: ReasoningSpec, tokenizer: LoadedTokenizer) -> str:
    """This vocabulary's structural-token suffix, ``":SUFFIX"`` or ``""`` (module doc)."""
    key = ("hy_v4_suffix",)
    cached = tokenizer.cache.get(key)
    if isinstance(cached, str):
        return cached
    added = (a.content for a in tokenizer.tokenizer.get_added_tokens_decoder().values())
    found = sorted({m.group(1) for t in added if (m := _STRUCTURAL.fullmatch(t)) and m.group(1)})
    if len(found) > 1:
        raise MissingMarkerError(
            spec.name,
            "<think:SUFFIX>",
            tokenizer.source,
            f"structural tokens with several suffixes {found}; expected one per checkpoint",
        )
    suffix = found[0] if found else ""
    tokenizer.cache[key] = suffix
    return suffix


def hy_v4_tool_calls(suffix: str) -> ToolFormat:
    """Hy4's call section with the checkpoint's token ``suffix`` (module doc)."""
    return ToolFormat(
        kinds=("hunyuan",),
        open=(f"<tool_calls{suffix}>",),
        close=(f"</tool_calls{suffix}>",),
        call_close=(f"</tool_call{suffix}>",),
        source="vLLM's hy_v4 tool parser (and its tests) reads `<tool_calls:SUFFIX>`, per call "
        "`<tool_call:SUFFIX>NAME` then `<arg_key:SUFFIX>K</arg_key:SUFFIX><arg_value:SUFFIX>V"
        "</arg_value:SUFFIX>` pairs and `</tool_call:SUFFIX>`; the V4 chat template is not in "
        "the corpus checked",
    )


@register
class HyV4Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="hy_v4",
        aliases=("hunyuan_v4", "hy4"),
        start=("<think>",),
        end=("</think>",),
        tool=("<tool_calls>",),
        required=("<think>", "</think>"),
        prompt_start=True,
        thinking_default=True,
        tool_calls=hy_v4_tool_calls(""),
        start_source=(
            'documented: vLLM\'s hy_v4 parser defaults reasoning_effort to "high", as the '
            "template does, and the template opens the think block"
        ),
        notes='markers carry the checkpoint\'s suffix; reasoning_effort "no_think" → all '
        "content; <tool_calls:SUFFIX> ends reasoning",
    )

    @classmethod
    def resolve_switches(cls, kwargs: Mapping[str, Any]) -> tuple[bool, bool]:
        effort = kwargs.get("reasoning_effort")
        if effort is not None and not isinstance(effort, str):
            raise InvalidOptionError("reasoning_effort", effort, 'a string such as "no_think"')
        return effort != "no_think", cls.spec.prompt_start

    @classmethod
    def resolve_spec(cls, tokenizer: LoadedTokenizer) -> ReasoningSpec:
        suffix = hy_v4_suffix(cls.spec, tokenizer)
        if not suffix:
            return cls.spec
        start, end = f"<think{suffix}>", f"</think{suffix}>"
        return msgspec.structs.replace(
            cls.spec,
            start=(start,),
            end=(end,),
            tool=(f"<tool_calls{suffix}>",),
            required=(start, end),
            tool_calls=hy_v4_tool_calls(suffix),
        )
