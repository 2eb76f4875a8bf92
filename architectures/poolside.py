"""poolside Laguna (``poolside_v1``).

Facts and where they come from (vLLM's ``vllm/parser/poolside.py`` and
``vllm/frontend/processing/reasoning/poolside_v1_reasoning_parser.py``; SGLang's
``_PoolsideV1Detector`` in ``python/sglang/srt/parser/reasoning_parser.py``):

- ``<think>``/``</think>`` and GLM-4.7-style tool calls
  (``<tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>``):
  ``<tool_call>`` ends reasoning and stays in content. With thinking on the output starts
  in reasoning (the template prefills the start); a ``<think>`` after content opens a block
  (vLLM's CONTENT→REASONING transition), and a stray ``</think>`` in content is dropped
  (its CONTENT→CONTENT transition emits nothing).
- Switches ``thinking`` / ``enable_thinking``: on when either given one is true
  (:func:`~reasonspan.runtime.shared.switches.either_switch`, as vLLM reads them).
- The default differs by checkpoint: SGLang documents that Laguna-XS.2's template defaults
  ``enable_thinking`` to false (reasoning is opt-in there), while vLLM's newer parser
  assumes thinking on when neither switch is given. Decided here: off, as the published
  XS.2 template; a parser built on a model folder takes the start state from that folder's
  own template instead, so a checkpoint that defaults on is read correctly. Off only moves
  the turn start to content: markers stay matched, so a block the model writes anyway is
  still split off.
- The prompt scan stops at ``<assistant>`` (one token; vLLM refuses a vocabulary without
  it): a ``</think>`` in an earlier turn, a few-shot example or a tool description never
  decides where this turn starts.

Tool calls (:data:`POOLSIDE_V1_TOOL_CALLS`): GLM-4.7's key/value shape inside
``<tool_call>`` … ``</tool_call>`` (kind ``kv``): the function name, then
``<arg_key>K</arg_key><arg_value>V</arg_value>`` pairs, string values raw and others JSON
(typed here from the offered tool's schema). No chat template of a Laguna checkpoint is in
the public corpus this was checked against; the format is what both engines' parsers
document as Laguna-XS.2's wire format: SGLang's ``PoolsideV1Detector``
(``<tool_call>NAME\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value>\\n…</tool_call>``;
"string values are emitted as raw text; non-strings are JSON-encoded by the chat
template"), vLLM's ``poolside_v1`` parser and tool parser (the name directly followed by
the first ``<arg_key>``, or by a newline; calls with no argument; its tests say the models
"emit XML tool calls … per the chat template").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.switches import either_switch
from reasonspan.runtime.toolcalls import ToolFormat

POOLSIDE_V1_TOOL_CALLS = ToolFormat(
    kinds=("kv",),
    open=("<tool_call>",),
    close=("</tool_call>",),
    source="SGLang's PoolsideV1Detector (Laguna-XS.2's wire format: `<tool_call>NAME\\n"
    "<arg_key>K</arg_key>\\n<arg_value>V</arg_value>\\n</tool_call>`, strings raw, other "
    "values JSON) and vLLM's poolside_v1 parser (GLM-4.7's shape, the name followed directly "
    "by `<arg_key>` or by a newline); no Laguna chat template in the corpus checked",
)
"""Laguna's calls: GLM-4.7 key/value pairs inside ``<tool_call>`` (module doc)."""


@register
class PoolsideV1Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="poolside_v1",
        aliases=("laguna", "poolside"),
        start=("<think>",),
        end=("</think>",),
        tool=("<tool_call>",),
        turn=("<assistant>",),
        required=("<think>", "</think>", "<assistant>"),
        prompt_start=True,
        thinking_default=False,
        thinking_switches=("thinking", "enable_thinking"),
        start_in_content="enter",
        end_in_content="drop",
        tool_calls=POOLSIDE_V1_TOOL_CALLS,
        start_source=(
            "documented: Laguna-XS.2's template defaults enable_thinking to false (SGLang's "
            "poolside_v1); with thinking on it prefills `<think>`"
        ),
        notes="thinking/enable_thinking: on when either is true (default off); prompt scan "
        "stops at <assistant>",
    )

    @classmethod
    def resolve_switches(cls, kwargs: Mapping[str, Any]) -> tuple[bool, bool]:
        """Thinking off starts the turn in content but keeps the markers (module doc)."""
        _, on = either_switch(kwargs, cls.spec.thinking_switches, cls.spec.thinking_default)
        return True, on and cls.spec.prompt_start
