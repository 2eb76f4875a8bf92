"""Swiss AI Apertus (2509): ``<|inner_prefix|>`` / ``<|inner_suffix|>``, single special tokens.

Facts and where they come from:

- Markers and tool span: llama.cpp's Apertus chat handler (``common_chat_params_init_
  apertus``: reasoning in ``<|inner_prefix|>…<|inner_suffix|>``, tool calls
  ``<|tools_prefix|>[{"name": {args}}]<|tools_suffix|>``) and the Apertus template's token
  list (``<|assistant_start|>`` / ``<|assistant_end|>`` frame an assistant message).
- Nothing is prefilled: the generation prompt ends with ``<|assistant_start|>`` and the
  model opens ``<|inner_prefix|>`` itself when it deliberates, so a turn starts in content
  and an ``<|inner_prefix|>`` after content opens a block. The template's
  ``enable_thinking`` only writes ``Deliberation: enabled/disabled`` into the developer
  message; it prefills nothing, so the parser has no switch (the markers are read
  either way, which is what the output needs).
- ``<think>`` / ``</think>`` are not Apertus markers: a generated ``<think>`` is content
  text, as in llama.cpp's handler.
- The tools span, choice: llama.cpp routes a ``<|tools_prefix|>`` that the model writes
  inside an open inner block out of reasoning into the content (its tool parser reads it
  there); vLLM's generic split leaves it in reasoning, where no tool parser sees it and the
  call is lost. This family follows llama.cpp: ``<|tools_prefix|>`` ends reasoning (an
  implicit end; the span is then read as calls), and the ``<|inner_suffix|>`` that then closes
  the block is dropped from the content. Text between the tools span and that late
  ``<|inner_suffix|>`` is therefore content; the spec cannot return to reasoning after a
  span, and a call reaching the tool parser matters more.
- Tool calls (:data:`APERTUS_TOOL_CALLS`): the Apertus template renders a turn's calls as
  ``<|tools_prefix|>[{"NAME": {ARGS}}, …]<|tools_suffix|>``, one JSON array of one-key
  objects (kind ``apertus``); vLLM's and SGLang's ``apertus`` parsers and llama.cpp's
  apertus handler read it. A span the output ends before its ``<|tools_suffix|>`` is not
  a call (SGLang's detector needs the suffix too).
- Stream order, where an engine reorders: the template may write a tools span inside the
  thoughts (a ``tool_calls`` block between ``thoughts`` blocks); llama.cpp's parser reads an
  output as reasoning, then content, then the calls, so a tools span written inside the
  reasoning comes out at the end of the content. Nothing is reordered here: the reasoning
  runs up to ``<|tools_prefix|>``, the calls are read where they are written, and the text
  after ``<|tools_suffix|>`` is content in the order written (the late
  ``<|inner_suffix|>`` dropped, as above).
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

INNER_PREFIX, INNER_SUFFIX = "<|inner_prefix|>", "<|inner_suffix|>"
TOOLS_PREFIX, TOOLS_SUFFIX = "<|tools_prefix|>", "<|tools_suffix|>"
ASSISTANT_START = "<|assistant_start|>"

APERTUS_TOOL_CALLS = ToolFormat(
    kinds=("apertus",),
    open=(TOOLS_PREFIX,),
    close=(TOOLS_SUFFIX,),
    json_strings=True,
    source="Apertus' chat template (swiss-ai Apertus-8B-Instruct-2509) writes a turn's calls as "
    "`<|tools_prefix|>[{\"NAME\": {ARGS}}, …]<|tools_suffix|>`; vLLM's and SGLang's `apertus` "
    "parsers and llama.cpp's apertus handler read that array of one-key objects",
)
"""One JSON array of ``{NAME: ARGUMENTS}`` objects between the two special tokens (kind
``apertus``)."""


@register
class ApertusParser(ReasoningParser):
    spec = ReasoningSpec(
        name="apertus",
        aliases=("apertus_2509", "swiss_ai_apertus"),
        start=(INNER_PREFIX,),
        end=(INNER_SUFFIX,),
        tool=(TOOLS_PREFIX,),
        turn=(ASSISTANT_START,),
        required=(INNER_PREFIX, INNER_SUFFIX),
        prompt_start=False,
        thinking_default=True,
        start_in_content="enter",
        end_in_content="drop",
        tool_calls=APERTUS_TOOL_CALLS,
        start_source=(
            "documented: Apertus' generation prompt ends with `<|assistant_start|>`; the model "
            "opens `<|inner_prefix|>` itself (llama.cpp's apertus handler)"
        ),
        notes="<think> is plain content; <|tools_prefix|> ends reasoning (also inside an open "
        "inner block, as llama.cpp routes it) and the late <|inner_suffix|> is dropped",
    )
    hint = DetectionHint(model_types=("apertus",))
