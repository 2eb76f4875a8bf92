"""Tencent Hunyuan: Hy3 (``hy_v3``) and Hunyuan-A13B.

Hy3 spells every special token with a checkpoint-specific suffix: the released model's
are ``<think:opensource>``, ``</think:opensource>``, ``<｜hy_Assistant:opensource｜>``; the
preview's have none. The suffix is resolved once per tokenizer (:meth:`resolve_spec`):
``token_suffix`` from tokenizer_config.json when its think pair is in the vocabulary, else
the one ``<think…>``/``</think…>`` pair among the added tokens (a suffixed pair wins over a
bare one, whose text is then ordinary). ``reasoning_effort`` defaults to ``no_think`` (the
template prefills an empty block): all content. ``low``/``high`` prefill the start.

Hunyuan-A13B's markers are plain text: ``<think>\\n`` … ``\\n</think>\\n<answer>\\n`` …
``\\n</answer>``, and fast-think ``<think>\\n\\n</think>\\n<answer>``. The model opens the
block itself; the ``<answer>`` wrapper is consumed; a fast-think block is consumed whole.

Tool calls. Hy3 (:func:`hy_v3_tool_calls`): ``<tool_calls>`` then per call
``<tool_call>NAME<tool_sep>``, ``<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>`` pairs
and ``</tool_call>``, then ``</tool_calls>``, every tag with the checkpoint's suffix (kind
``hunyuan``, values typed from the schema), as vLLM's ``hy_v3`` tool parser and SGLang's
``HunyuanDetector`` read it; Hy3's chat template is not in the corpus checked.

Hunyuan-A13B (:data:`A13B_TOOL_CALLS`): its tool chat template (vLLM's
``examples/tool_chat_template_hunyuan_a13b.jinja``) asks for, and writes back,
``<tool_calls>[{"name": …, "arguments": {…}}, …]</tool_calls>``: one JSON list (kind
``json``) between plain-text markers, as vLLM's ``hunyuan_a13b`` tool parser reads it.
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
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat
from reasonspan.tokenizer.loader import LoadedTokenizer

_THINK_RE = re.compile(r"<think(.*)>")


def _hy_suffix(spec: ReasoningSpec, tokenizer: LoadedTokenizer) -> str:
    """The suffix of this vocabulary's think markers (see module doc); cached per tokenizer."""
    key = ("hy_v3_suffix",)
    cached = tokenizer.cache.get(key)
    if isinstance(cached, str):
        return cached

    def has_pair(suffix: str) -> bool:
        return all(
            tokenizer.single_token_id(f"<{t}{suffix}>") is not None for t in ("think", "/think")
        )

    configured = tokenizer.config.get("token_suffix")
    if isinstance(configured, str) and has_pair(configured):
        suffix = configured
    else:
        added = {a.content for a in tokenizer.tokenizer.get_added_tokens_decoder().values()}
        found = sorted(
            m.group(1)
            for text in added
            if (m := _THINK_RE.fullmatch(text)) and f"</think{m.group(1)}>" in added
        )
        suffixed = [s for s in found if s]
        if len(suffixed) > 1:
            raise MissingMarkerError(
                spec.name,
                "<think…>",
                tokenizer.source,
                f"several suffixed think markers {suffixed}; set token_suffix in "
                "tokenizer_config.json to choose one",
            )
        suffix = suffixed[0] if suffixed else ""
    tokenizer.cache[key] = suffix
    return suffix


def hy_v3_tool_calls(suffix: str) -> ToolFormat:
    """Hy3's call section with the checkpoint's token ``suffix`` (module doc)."""
    return ToolFormat(
        kinds=("hunyuan",),
        open=(f"<tool_calls{suffix}>",),
        close=(f"</tool_calls{suffix}>",),
        call_close=(f"</tool_call{suffix}>",),
        source="vLLM's hy_v3 tool parser and SGLang's HunyuanDetector read `<tool_calls>`, "
        "per call `<tool_call>NAME<tool_sep>` then `<arg_key>K</arg_key><arg_value>V</arg_value>` "
        "pairs and `</tool_call>`, then `</tool_calls>`, each tag with the checkpoint's token "
        "suffix; Hy3's chat template is not in the corpus checked",
    )


@register
class HyV3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="hy_v3",
        aliases=("hy3", "hunyuan_v3"),
        start=("<think>",),
        end=("</think>",),
        turn=("<｜hy_Assistant｜>",),
        required=("<think>", "</think>"),
        prompt_start=True,
        thinking_default=False,
        tool_calls=hy_v3_tool_calls(""),
        start_source=(
            'documented: Hy3 defaults to reasoning_effort "no_think"; with thinking on the '
            "template opens the block"
        ),
        notes='markers carry the checkpoint\'s token suffix; reasoning_effort "no_think" '
        "(the default) → all content",
    )

    @classmethod
    def resolve_switches(cls, kwargs: Mapping[str, Any]) -> tuple[bool, bool]:
        effort = kwargs.get("reasoning_effort") or "no_think"
        if not isinstance(effort, str):
            raise InvalidOptionError("reasoning_effort", effort, '"no_think", "low" or "high"')
        return effort != "no_think", cls.spec.prompt_start

    @classmethod
    def resolve_spec(cls, tokenizer: LoadedTokenizer) -> ReasoningSpec:
        suffix = _hy_suffix(cls.spec, tokenizer)
        if not suffix:
            return cls.spec
        start, end = f"<think{suffix}>", f"</think{suffix}>"
        return msgspec.structs.replace(
            cls.spec,
            start=(start,),
            end=(end,),
            turn=(f"<｜hy_Assistant{suffix}｜>",),
            required=(start, end),
            tool_calls=hy_v3_tool_calls(suffix),
        )


A13B_TOOL_CALLS = ToolFormat(
    kinds=("json",),
    open=("<tool_calls>",),
    close=("</tool_calls>",),
    json_strings=True,
    source="Hunyuan-A13B's tool chat template "
    "(vLLM examples/tool_chat_template_hunyuan_a13b.jinja) writes "
    '`<tool_calls>[{"name": …, "arguments": {…}}, …]</tool_calls>`; vLLM\'s hunyuan_a13b '
    "tool parser reads that JSON list",
)
"""One JSON list (kind ``json``) between plain-text ``<tool_calls>`` markers."""

_A13B_START = "<think>\n"
_A13B_END = ("\n</think>\n<answer>\n", "\n</think>\n<answer>")
_A13B_FAST = ("<think>\n\n</think>\n<answer>\n", "<think>\n\n</think>\n<answer>")
_A13B_STRIP = ("<answer>\n", "<answer>", "\n</answer>", "</answer>")


@register
class HunyuanA13BParser(ReasoningParser):
    spec = ReasoningSpec(
        name="hunyuan_a13b",
        aliases=("hunyuan",),
        start=(_A13B_START,),
        # A fast-think block is an end marker; after content it is dropped (end_in_content).
        end=_A13B_END + _A13B_FAST,
        strip=_A13B_STRIP,
        turn=("<|extra_0|>",),
        text_markers=(_A13B_START, *_A13B_END, *_A13B_FAST, *_A13B_STRIP),
        prompt_start=False,
        start_in_content="enter",
        end_in_content="drop",
        tool_calls=A13B_TOOL_CALLS,
        start_source="documented: Hunyuan-A13B opens `<think>\\n` itself (no prefill)",
        notes="multi-token text markers; <answer> wrapper stripped; fast-think block consumed",
    )
    hint = DetectionHint(model_types=("hunyuan_v1_moe",))
