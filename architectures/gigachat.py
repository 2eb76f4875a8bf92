"""Sber GigaChat 3.5: ``<think>`` / ``</think>``.

Facts and where they come from:

- Markers: ``<think>`` / ``</think>``; the GigaChat 3.5 (chatml v5) template renders every
  assistant turn as a think block followed by the text and tool calls, and its generation
  prompt opens the block (``…assistant<|role_sep|>\\n<think>``), so the model never writes
  the start marker: a turn starts in reasoning (a ``<think>`` it echoes is consumed).
- Switch: ``reasoning`` (chat_template_kwargs), as the serving engines surveyed read it; the
  block is prefilled when ``reasoning`` is true, which is the released -Reasoning
  checkpoint's default (its template always opens the block), so thinking is on unless
  ``reasoning: false``. Off, the whole response is content.
- The turn bound is ``<|role_sep|>``, the separator after every role name in GigaChat's
  templates: the prompt scan reads only what follows the last one (the assistant's).
- No implicit end: GigaChat's tool calls follow the text after the think block, never
  inside it, and no engine ends reasoning on them.
- Tool calls (:data:`GIGACHAT35_TOOL_CALLS`, kind ``gcml``): the chatml v5 template
  (llama.cpp's ``models/templates/GigaChat3.5.jinja``, ``render_gcml_tool_calls``) joins the
  think block, the text and a GCML block with blank lines; the block is
  ``<｜GCML｜tool_calls>`` then one ``<｜GCML｜invoke name="NAME">`` per line, each holding
  ``<｜GCML｜parameter name="K" string="true|false">V</｜GCML｜parameter>`` lines (raw strings,
  JSON otherwise), then ``</｜GCML｜tool_calls>``. vLLM's ``gigachat35`` tool parser and
  SGLang's GigaChat detector read it. The markers are text here (several tokens of the
  stand-in vocabulary), matched on bytes. GigaChat 3 (not 3.5) wrote a ``function call``
  role message instead; that older format is not this family's.
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

GIGACHAT35_TOOL_CALLS = ToolFormat(
    kinds=("gcml",),
    open=("<｜GCML｜tool_calls>",),
    close=("</｜GCML｜tool_calls>",),
    call_close=("</｜GCML｜invoke>",),
    source="GigaChat 3.5's chat template (llama.cpp models/templates/GigaChat3.5.jinja: "
    'render_gcml_tool_calls) writes `<｜GCML｜tool_calls>` with one `<｜GCML｜invoke name="NAME">` '
    'of `<｜GCML｜parameter name="K" string="true|false">V</｜GCML｜parameter>` per call; vLLM\'s '
    "gigachat35 tool parser and SGLang's GigaChat detector read it",
)


@register
class GigaChat35Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="gigachat35",
        aliases=("gigachat3_5", "gigachat_35", "gigachat"),
        start=("<think>",),
        end=("</think>",),
        turn=("<|role_sep|>",),
        required=("<think>", "</think>"),
        prompt_start=True,
        thinking_default=True,
        thinking_switches=("reasoning",),
        tool_calls=GIGACHAT35_TOOL_CALLS,
        end_in_content="drop",
        start_source=(
            "documented: GigaChat 3.5's template opens `<think>` in the generation prompt when "
            "`reasoning` is true (the -Reasoning checkpoint always does)"
        ),
        notes="reasoning: false → the whole response is content",
    )
    # It writes Qwen's <think> pair; its own turn token tells it apart.
    hint = DetectionHint(model_types=("gigachat3_5",), tokens=("<|role_sep|>",))
