"""Preferred Networks PLaMo 3 (``plamo3``): multi-token text markers.

Facts and where they come from (vLLM's ``vllm/parser/plamo3.py``, adapters
``vllm/reasoning/plamo3_reasoning_parser.py`` and ``plamo3_engine_reasoning_parser.py``):

- Reasoning sits between ``<|plamo:begin_think:plamo|>`` and ``<|plamo:end_think:plamo|>``.
  They are not single tokens: the vocabulary's ``<|plamo:begin_``, ``<|plamo:end_`` and
  ``:plamo|>`` pieces (special tokens, vLLM's ``PLAMO_MARKER_TOKENS``) with the name
  between them as ordinary text, so they are matched on token bytes with hold-back.
- ``enable_thinking`` defaults on; the template prefills the start with thinking on (vLLM
  starts in reasoning), and a start the model repeats inside reasoning is consumed.
  Thinking off: vLLM drops the think markers from its grammar and the output is content;
  here too (the machine is built without them).
- ``<|plamo:begin_tool_requests:plamo|>`` ends reasoning and stays in content.
- ``<|plamo:tag|>`` (one token) ends a turn. In reasoning it ends the reasoning, and in
  content it is consumed (vLLM's ``EOT`` transitions). It is normally the stop token
  (``generation_config.json`` lists it in ``eos_token_id``), so nothing follows it; when
  an engine keeps generating anyway, the text after it is not part of the turn: vLLM's
  ``plamo3`` tool parser (``vllm/tool_parsers/plamo3_tool_parser.py``) moves to its
  ``DONE`` phase at ``EOT_TAG`` and emits nothing more. So here it is a cut marker
  (``ReasoningSpec.cut``): consumed, and every token after it is a DELIMITER -- decided,
  counted in neither reasoning nor content tokens, never text -- with thinking on or off.
- The prompt scan reads right to left; vLLM's ``is_reasoning_end`` stops at
  ``<|plamo:tag|>``; here the prompt scan reads a cut marker as an end, so a prompt whose
  current turn primes nothing after the last message's tag starts in content, and one
  ending with the begin marker starts in reasoning.
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
from reasonspan.tokenizer.loader import LoadedTokenizer

BEGIN_THINK = "<|plamo:begin_think:plamo|>"
END_THINK = "<|plamo:end_think:plamo|>"
BEGIN_TOOL_REQUESTS = "<|plamo:begin_tool_requests:plamo|>"
EOT = "<|plamo:tag|>"


@register
class Plamo3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="plamo3",
        aliases=("plamo_3", "plamo"),
        start=(BEGIN_THINK,),
        end=(END_THINK,),
        tool=(BEGIN_TOOL_REQUESTS,),
        cut=(EOT,),
        text_markers=(BEGIN_THINK, END_THINK, BEGIN_TOOL_REQUESTS),
        required=(EOT,),
        prompt_start=True,
        thinking_default=True,
        thinking_switches=("enable_thinking",),
        end_in_content="drop",
        start_source=(
            "documented: vLLM's plamo3 parser starts in reasoning with enable_thinking on "
            "(the template prefills the begin marker)"
        ),
        notes="multi-token text markers matched on bytes; <|plamo:tag|> ends the output "
        "(it and everything after it dropped)",
    )

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        """Thinking off, every token up to ``<|plamo:tag|>`` is content (vLLM's grammar
        without the think markers): the machine is built without the text markers, so no
        token is held back for them; the batch routes it by table up to the cut."""
        thinking, prompt_start = cls.resolve_switches(kwargs)
        spec = cls.spec
        if not thinking:
            spec = msgspec.structs.replace(spec, start=(), end=(), tool=(), text_markers=())
        return compile_machine(spec, tokenizer, thinking=thinking, prompt_start=prompt_start)
