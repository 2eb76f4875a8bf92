"""inclusionAI Ling 3 / Ring 3 (``ling3``).

Facts and where they come from (vLLM's ``vllm/parser/ling3.py``, re-exported as
``vllm/frontend/processing/parser/ling3.py``; the Ling 3 chat template itself is not in the
public corpus this was checked against, so the start state is marked ``documented``):

- ``<think>``/``</think>`` as in GLM-4.7 (the parser reuses ``glm47_moe_config``), and the
  template prefills the start: the engine config starts in reasoning with thinking on.
- ``<tool_call>`` ends reasoning and stays in content.
- Switches: ``thinking`` and ``enable_thinking``. Neither given: thinking on. Either given:
  on when *either* is true (``bool(thinking) or bool(enable_thinking)``), which the
  runtime's ``either_switch`` reproduces; a later key does not override an earlier one.
- Thinking off: the engine returns the whole output as content, as written
  (``extract_reasoning`` returns ``None, model_output``; vLLM's
  ``tests/parser/engine/test_ling3.py``: ``<think>reason</think>answer`` is all content).
  Here too: the machine is built without its markers, so a ``<think>…</think>`` the model
  writes anyway stays in the content with its markers.

Tool calls (kind ``kv``): GLM-4.7's format, ``<tool_call>NAME<arg_key>K</arg_key>
<arg_value>V</arg_value>…</tool_call>`` (vLLM's ``ling3`` tool parser is the GLM-4.7 one:
``structural_tag_model = "glm_4_7"``; its tests read ``<tool_call>get_weather<arg_key>city
</arg_key><arg_value>Beijing</arg_value></tool_call>`` and ``<tool_call>ping</tool_call>``).
Values are raw text typed from the offered tool's schema, as GLM's.

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
from reasonspan.runtime.toolcalls import ToolFormat

LING3_TOOL_CALLS = ToolFormat(
    kinds=("kv",),
    open=("<tool_call>",),
    close=("</tool_call>",),
    source="vLLM's ling3 parser (vllm/frontend/processing/parser/ling3.py) is GLM-4.7's "
    "(glm47_moe_config; tool parser structural_tag_model glm_4_7): `<tool_call>NAME` then "
    "`<arg_key>K</arg_key><arg_value>V</arg_value>` pairs and `</tool_call>`, strings raw, "
    "other values JSON",
)


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
        tool_calls=LING3_TOOL_CALLS,
        notes="thinking/enable_thinking: on when either is true (off: all content, markers "
        "included); <tool_call> ends reasoning",
    )
    # Ling 3 writes GLM's <think> tokens: config.json must name it.
    hint = DetectionHint(needs_evidence=True)

    @classmethod
    def resolve_switches(cls, kwargs: Mapping[str, Any]) -> tuple[bool, bool]:
        """On when either switch is true; off, the output is all content (module doc)."""
        _, on = either_switch(kwargs, cls.spec.thinking_switches, cls.spec.thinking_default)
        return on, on and cls.spec.prompt_start
