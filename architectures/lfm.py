"""Liquid AI LFM2 / LFM2.5 (thinking checkpoints): ``<think>`` / ``</think>``, when the model
chooses; Pythonic tool calls between ``<|tool_call_start|>`` and ``<|tool_call_end|>``.

Facts and where they come from:

- LFM2's tokenizer has ``<think>``, ``</think>``, ``<|im_start|>`` and
  ``<|tool_call_start|>`` / ``<|tool_call_end|>`` as special tokens; its ChatML template
  ends the generation prompt with ``<|im_start|>assistant\\n`` and prefills nothing: the
  model writes ``<think>`` itself when it decides to think, so a turn starts in content
  and a ``<think>`` opens a block (also after content).
- Switch: ``think`` (chat_template_kwargs), as the serving engines surveyed read it;
  default on. Off, the markers are not read and the whole response is content.
- Implicit end: ``<|tool_call_start|>`` ends reasoning (llama.cpp's lfm2 handler reads
  the calls after the reasoning).
- Tool calls (:data:`LFM2_TOOL_CALLS`): the LFM2.5 chat template (LFM2.5-8B-A1B, in
  llama.cpp's ``models/templates``) renders the calls of a turn as one Python list
  ``<|tool_call_start|>[f(a='x', n=1), g()]<|tool_call_end|>``, keyword arguments only,
  strings in single quotes as written, mappings as JSON (``tojson``); vLLM's ``lfm2`` tool
  parser and llama.cpp's lfm2 handler (``common_chat_params_init_lfm2``:
  ``python_style_tool_calls`` between the two markers) read that form. Kind ``lfm2`` reads
  the list as vLLM's parser does, JSON's ``true`` / ``false`` / ``null``, sets, leading
  zeros, raw newlines and unescaped inner quotes in strings included (its module doc).
  Liquid's tool-use documentation says the models write Pythonic calls by default and a
  JSON list (``[{"name": …, "arguments": {…}}]``, the form llama.cpp's own
  ``llama-cpp-lfm2.jinja`` renders and its earlier JSON handler read) when the system
  prompt asks for JSON: kind ``json`` after it. Text after ``<|tool_call_end|>`` is content.
- Not read (a difference from vLLM's parser): the echo of a call body that LFM2 sometimes
  writes after the first ``<|tool_call_end|>`` stays in the content (vLLM drops the text
  up to a second ``<|tool_call_end|>``).
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

TOOL_CALL_START = "<|tool_call_start|>"
TOOL_CALL_END = "<|tool_call_end|>"

LFM2_TOOL_CALLS = ToolFormat(
    kinds=("lfm2", "json"),
    open=(TOOL_CALL_START,),
    close=(TOOL_CALL_END,),
    source="LFM2.5's chat template (LFM2.5-8B-A1B, llama.cpp models/templates) writes a "
    "turn's calls as `<|tool_call_start|>[f(a='x'), g()]<|tool_call_end|>`; vLLM's `lfm2` "
    "tool parser and llama.cpp's lfm2 handler read that Python list; Liquid's tool-use docs: "
    "Pythonic by default, a JSON list when the system prompt asks for JSON",
)
"""One Python list of keyword calls (kind ``lfm2``) or a JSON list of
``{"name", "arguments"}`` objects (kind ``json``) between the two special tokens."""


@register
class Lfm2Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="lfm2",
        aliases=("lfm2_thinking", "lfm2_5", "liquid_lfm2"),
        start=("<think>",),
        end=("</think>",),
        tool=(TOOL_CALL_START,),
        turn=("<|im_start|>",),
        required=("<think>", "</think>"),
        prompt_start=False,
        thinking_default=True,
        thinking_switches=("think",),
        start_in_content="enter",
        end_in_content="drop",
        tool_calls=LFM2_TOOL_CALLS,
        start_source=(
            "documented: LFM2's template ends with `<|im_start|>assistant\\n`; the model writes "
            "`<think>` only when it chooses to think"
        ),
        notes="<think> opens a block wherever it comes; <|tool_call_start|> ends reasoning",
    )
    # It writes Qwen's <think> pair; its own tool-call token tells it apart.
    hint = DetectionHint(model_types=("lfm2", "lfm2_moe"), tokens=("<|tool_call_start|>",))
