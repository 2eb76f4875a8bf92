"""inclusionAI Ling 3 / Ring 3 (``ling3``).

Facts and where they come from (vLLM's ``vllm/parser/ling3.py``, re-exported as
``vllm/frontend/processing/parser/ling3.py``; the Ling 3 chat template itself is not in the
public corpus this was checked against, so the start state is marked ``documented``):

- ``<think>``/``</think>`` as in GLM-4.7 (the parser reuses ``glm47_moe_config``), and the
  template prefills the start: the engine config starts in reasoning with thinking on.
- ``<tool_call>`` (GLM-4.7's XML tool calls) ends reasoning and stays in content.
- Switches: ``thinking`` and ``enable_thinking``. Neither given: thinking on. Either given:
  on when *either* is true (``bool(thinking) or bool(enable_thinking)``), which the
  runtime's ``either_switch`` reproduces; a later key does not override an earlier one.
- Thinking off: the engine returns the whole output as content; here the turn starts in
  content and the markers stay matched, so a block the model writes anyway is split off
  instead of leaking ``</think>`` into the answer (as qwen3's ``mimo`` and ``nemotron_v3``).

Not followed: vLLM's non-streaming ``extract_reasoning`` returns reasoning as content when
no content and no ``<tool_call>`` follows; its streaming path does not, and a parse here is
the same as its stream, so reasoning stays reasoning (``reasoning_as_content_if`` exists
only for switches that ask for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.shared.switches import either_switch


@register
class Ling3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="ling3",
        aliases=("ring3", "ling_3", "ring_3"),
        start=("<think>",),
        end=("</think>",),
        tool=("<tool_call>",),
        required=("<think>", "</think>"),
        prompt_start=True,
        thinking_default=True,
        thinking_switches=("thinking", "enable_thinking"),
        start_in_content="enter",
        start_source=(
            "documented: vLLM's ling3 parser (vllm/parser/ling3.py) starts in reasoning with "
            "thinking on (GLM-4.7's config: the template prefills `<think>`)"
        ),
        notes="thinking/enable_thinking: on when either is true; <tool_call> ends reasoning",
    )
    # Ling 3 writes GLM's <think> tokens: config.json must name it.
    hint = DetectionHint(needs_evidence=True)

    @classmethod
    def resolve_switches(cls, kwargs: Mapping[str, Any]) -> tuple[bool, bool]:
        """Thinking off starts the turn in content but keeps the markers (module doc)."""
        _, on = either_switch(kwargs, cls.spec.thinking_switches, cls.spec.thinking_default)
        return True, on and cls.spec.prompt_start
