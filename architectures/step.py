"""StepFun Step-3 and Step-3.5.

Both prefill ``<think>``. The prompt scan looks only at the current assistant turn (a
``</think>`` anywhere in the history is a known bug elsewhere). Step-3.5 trims one newline
on each side of ``</think>``.

Tool calls. Step-3 (:data:`STEP3_TOOL_CALLS`): a section
``<｜tool_calls_begin｜>`` … ``<｜tool_calls_end｜>`` holding calls
``<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="NAME">``
``<steptml:parameter name="KEY">VALUE</steptml:parameter>…</steptml:invoke><｜tool_call_end｜>``
(kind ``steptml``), as vLLM's ``step3`` tool parser and SGLang's ``Step3Detector`` read it;
values are stripped and typed from the tool's schema. Step-3's own chat template is not in
the corpus checked.

Step-3.5 (:data:`STEP3P5_TOOL_CALLS`): Qwen3-Coder's XML functions inside ``<tool_call>``:
``<tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE\\n</parameter>\\n</function>\\n``
``</tool_call>`` (kind ``xml``), as vLLM's ``step3p5`` tool parser reads it and as the
StepFun 3.7 Flash chat template in llama.cpp's ``models/templates`` (the same line's
template) writes it (mappings and lists as JSON, other values with ``string``).
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec, Trim
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

_THINK = ("<think>",)
_END = ("</think>",)
_TURNS = ("<|BOT|>", "<|im_start|>")

STEP3_TOOL_CALLS = ToolFormat(
    kinds=("steptml",),
    open=("<｜tool_calls_begin｜>",),
    close=("<｜tool_calls_end｜>",),
    call_close=("<｜tool_call_end｜>",),
    source="vLLM's step3 tool parser and SGLang's Step3Detector read `<｜tool_calls_begin｜>` "
    "then per call `<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=NAME>` "
    "`<steptml:parameter name=KEY>VALUE</steptml:parameter>` "
    "`</steptml:invoke><｜tool_call_end｜>`, then `<｜tool_calls_end｜>` (values stripped, "
    "typed from the schema); Step-3's chat template is not in the corpus checked",
)
"""StepTML invocations (kind ``steptml``) in a ``<｜tool_calls_begin｜>`` section."""

STEP3P5_TOOL_CALLS = ToolFormat(
    kinds=("xml",),
    open=("<tool_call>",),
    close=("</tool_call>",),
    source="vLLM's step3p5 tool parser reads `<tool_call>` / `<function=NAME>` / "
    "`<parameter=KEY>`; the StepFun 3.7 Flash chat template (llama.cpp models/templates) writes "
    "`<tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE\\n</parameter>\\n</function>\\n"
    "</tool_call>`",
)
"""XML functions (kind ``xml``) inside ``<tool_call>`` … ``</tool_call>``."""


@register
class Step3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="step3",
        start=_THINK,
        end=_END,
        turn=_TURNS,
        required=_THINK + _END,
        prompt_start=True,
        tool_calls=STEP3_TOOL_CALLS,
        start_source="documented: Step 3's template opens the reasoning block",
        notes="prompt scan scoped to the current assistant turn",
    )
    hint = DetectionHint(tokens=("<|BOT|>",), needs_evidence=True)


@register
class Step3p5Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="step3p5",
        aliases=("step3_5", "step35"),
        start=_THINK,
        end=_END,
        turn=_TURNS,
        required=_THINK + _END,
        prompt_start=True,
        reasoning_trim=Trim(trail="\n", trail_max=1),
        content_trim=Trim(lead="\n", lead_max=1),
        tool_calls=STEP3P5_TOOL_CALLS,
        start_source="documented: Step 3.5's template opens the reasoning block (as deepseek_r1)",
        notes="one newline trimmed on each side of </think>",
    )
    hint = DetectionHint(tokens=("<|BOT|>",), needs_evidence=True)
