"""AllenAI OLMo 3 (Think).

``<think>``/``</think>`` are plain text, several ordinary tokens that merge with their
neighbours (``</`` ``think`` ``>``, or `` </`` after a space), so both are text markers
matched on token bytes. Some OLMo 3 templates prefill ``<think>`` and some let the model
write it; a turn starts in reasoning and a leading ``<think>`` is consumed, which serves
both (and matches "truncated = reasoning"). A ``<think>`` after the answer is text.

Tool calls (:data:`OLMO3_TOOL_CALLS`, kind ``olmo3``): ``<function_calls>`` … ``</function_calls>``
around Python calls with keyword arguments, one per line, values Python literals or JSON's
``true`` / ``false`` / ``null``: ``<function_calls>get_weather(city="Paris")\nnote(text=
"x", done=true)</function_calls>``. Facts: Olmo 3's chat template writes an assistant's
``function_calls`` between those markers (special tokens of the Instruct tokenizer, allenai's
olmo-3-tokenizer-instruct-dev README; text here, where the Think tokenizer may not have
them: matched on token bytes either way), and vLLM's ``olmo3`` tool parser (its tool
calling docs name Olmo-3-7B-Instruct and Olmo-3-32B-Think) reads the body so, dropping a
call that does not read and keeping its siblings. A ``</function_calls>`` written inside a
string argument ends the block (the body is not JSON: nothing marks its strings), so that
call reads as malformed and its markup stays content.
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

_THINK, _END = "<think>", "</think>"

OLMO3_TOOL_CALLS = ToolFormat(
    kinds=("olmo3",),
    open=("<function_calls>",),
    close=("</function_calls>",),
    source="Olmo 3's chat template writes an assistant's calls between `<function_calls>` and "
    "`</function_calls>` (special tokens of allenai's olmo-3-tokenizer-instruct-dev); vLLM's "
    "olmo3 tool parser reads them as Python calls with keyword arguments, one per line, "
    "values Python literals or JSON true/false/null",
)


@register
class Olmo3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="olmo3",
        start=(_THINK,),
        end=(_END,),
        turn=("<|im_start|>",),
        text_markers=(_THINK, _END),
        prompt_start=True,
        start_source=(
            "documented: Olmo 3 Think's generation prompt is `<|im_start|>assistant\\n<think>`"
        ),
        tool_calls=OLMO3_TOOL_CALLS,
        notes="markers are plain text (several tokens)",
    )
    hint = DetectionHint(model_types=("olmo3",), plain_text_markers=True)
