"""Mistral reasoning models (Magistral, Mistral Small/Medium with reasoning).

Current models write ``[THINK]`` … ``[/THINK]`` as control tokens. Nothing is prefilled:
a turn starts in content, a ``[THINK]`` opens reasoning (text before it stays content), an
output with no marker is all content and one that stops after ``[THINK]`` is reasoning.
Only ``[/THINK]`` ends reasoning: a ``[TOOL_CALLS]`` inside ``[THINK]`` … ``[/THINK]`` is
reasoning text (vLLM's ``mistral`` reasoning parser ends reasoning only at ``[/THINK]``, and
llama.cpp's Ministral 3 tests and the CanIToolCall corpus expect the marker kept in the
reasoning), so a call is read only in the answer, after ``[/THINK]``. The prompt scan
looks only behind the last ``[/INST]`` or ``[/TOOL_RESULTS]``: Magistral's default system
prompt spells out ``[THINK]``/``[/THINK]``, and those must never decide it.

A stray ``[/THINK]`` after content (no ``[THINK]`` open) is dropped
(``end_in_content="drop"``): vLLM's ``mistral`` reasoning parser removes an end token
that no start token precedes (``extract_reasoning``, case 3.a: ``prev_eot + post_eot``;
``extract_content_ids`` case 4 leaves the end token out), and its streaming path skips a
lone ``[/THINK]`` delta, so a server never shows it.

Older Magistral (Small/Medium 2506) has no ``[THINK]`` token and writes plain-text
``<think>``/``</think>``. Those are matched on token bytes, but only for a tokenizer that
lacks ``[THINK]``: in a current vocabulary ``<think>`` is ordinary text the model may write
in an answer, and byte markers would also take every request off the vectorized batch path.

Tool calls (facts: mistral-common's tokenizer versions, as rendered into the CanIToolCall
fixtures with mistral-common 1.12.0, and vLLM's ``mistral`` tool parser): ``[TOOL_CALLS]``
opens a region that runs to the end of the output. v3 (Mistral-7B-Instruct-v0.3) writes one
JSON list ``[{"name": …, "arguments": {…}}, …]`` (kind ``json``); v11 and later (Mistral
Small 3.2, Devstral, Magistral 2509, Ministral 3) write ``NAME[ARGS]{…}`` per call, each
after its own ``[TOOL_CALLS]``, sometimes with ``[CALL_ID]ID`` before ``[ARGS]`` (kind
``mistral``). Every checkpoint is served by this one family, so both kinds are tried.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.core.markers import compile_machine
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.toolcalls import ToolFormat
from reasonspan.tokenizer.loader import LoadedTokenizer

THINK, END_THINK = "[THINK]", "[/THINK]"
TOOL_CALLS = "[TOOL_CALLS]"

MISTRAL_TOOL_CALLS = ToolFormat(
    kinds=("json", "mistral"),
    open=(TOOL_CALLS,),
    close=(),
    source='mistral-common\'s tokenizer versions (v3: `[TOOL_CALLS][{"name": …, '
    '"arguments": {…}}]`; v11+: `[TOOL_CALLS]NAME[ARGS]{…}` per call, optional '
    "`[CALL_ID]ID`), as rendered into the CanIToolCall fixtures; vLLM's `mistral` parser",
)
TEXT_THINK, TEXT_END_THINK = "<think>", "</think>"

_SPEC = ReasoningSpec(
    name="mistral",
    aliases=("magistral",),
    start=(THINK, TEXT_THINK),
    end=(END_THINK, TEXT_END_THINK),
    tool_calls=MISTRAL_TOOL_CALLS,
    turn=("[/INST]", "[/TOOL_RESULTS]"),
    text_markers=(TEXT_THINK, TEXT_END_THINK),
    prompt_start=False,
    start_in_content="enter",
    end_in_content="drop",
    start_source=(
        "documented: Magistral starts in content and opens `[THINK]` itself (its system prompt "
        "asks for it)"
    ),
    notes="[THINK] after content opens reasoning; only [/THINK] ends it ([TOOL_CALLS] "
    "inside is reasoning text); plain-text <think> only where the tokenizer has no [THINK] "
    "(Magistral 2506)",
)

# The same row for a tokenizer that has the control tokens: no text markers at all.
_CONTROL_TOKENS = msgspec.structs.replace(
    _SPEC,
    start=(THINK,),
    end=(END_THINK,),
    text_markers=(),
    required=(THINK, END_THINK),
)


@register
class MistralParser(ReasoningParser):
    spec = _SPEC

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        thinking, prompt_start = cls.resolve_switches(kwargs)
        spec = cls.spec if tokenizer.single_token_id(THINK) is None else _CONTROL_TOKENS
        return compile_machine(spec, tokenizer, thinking=thinking, prompt_start=prompt_start)
