"""LG AI EXAONE 4.0: ``<think>`` / ``</think>``, thinking off by default.

Facts and where they come from:

- EXAONE 4.0's chat template (tokenizer_config.json) opens an assistant turn with
  ``[|assistant|]`` (a special token) and, only with ``enable_thinking: true``, writes
  ``<think>\\n`` after it; ``enable_thinking`` defaults to false (the model card serves
  reasoning with ``enable_thinking=True`` and vLLM's ``--reasoning-parser deepseek_r1``).
  So thinking is off unless asked for; on, the turn starts in reasoning.
- No implicit end: EXAONE 4's tool calls (``<tool_call>``) come after ``</think>``.
- Tool calls (:data:`EXAONE4_TOOL_CALLS`): the template asks for, and renders each call of
  the history as, ``<tool_call>{"name": NAME, "arguments": {…}}</tool_call>``, one after
  another separated by a newline (Hermes JSON, kind ``json``); LG's vLLM PR #22617 serves it
  with ``--tool-call-parser hermes``, and BFCL's ``Exaone4FCHandler`` reads the same
  ``<tool_call>\\s*{…}\\s*</tool_call>`` shape.
- A ``</think>`` repeated after the answer is kept as content text, as the R1-style
  reference parser keeps everything after the first one.
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

EXAONE4_TOOL_CALLS = ToolFormat(
    kinds=("json",),
    open=("<tool_call>",),
    close=("</tool_call>",),
    json_strings=True,
    source="EXAONE 4.0's chat template (tokenizer_config.json, as BFCL's Exaone4FCHandler "
    'quotes it) writes each call as `<tool_call>{"name": NAME, "arguments": {…}}</tool_call>`, '
    "calls separated by a newline; LG's vLLM PR #22617 serves it with `--tool-call-parser hermes`",
)


@register
class Exaone4Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="exaone4",
        aliases=("exaone_4", "exaone4_0", "exaone"),
        start=("<think>",),
        end=("</think>",),
        turn=("[|assistant|]",),
        required=("<think>", "</think>"),
        prompt_start=True,
        thinking_default=False,
        thinking_switches=("enable_thinking",),
        tool_calls=EXAONE4_TOOL_CALLS,
        start_source=(
            "template: EXAONE 4.0's tokenizer_config.json writes `[|assistant|]<think>\\n` only "
            "with enable_thinking (default false)"
        ),
        notes="thinking off by default: the whole response is content",
    )
    # It writes Qwen's <think> pair; its own turn token tells it apart.
    hint = DetectionHint(model_types=("exaone4",), tokens=("[|assistant|]",))
