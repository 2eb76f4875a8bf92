"""NVIDIA Llama-Nemotron v1 (Nano 8B, Super 49B, Ultra 253B): plain-text ``<think>``.

Facts and where they come from:

- Reasoning is switched by the *system prompt*, not by chat_template_kwargs: the model
  cards and the Llama-Nemotron report (§3: reasoning samples carry the system
  instruction ``detailed thinking on``, the others ``detailed thinking off``) say so, and
  the template passes the system message through unchanged.
- The markers ``<think>`` / ``</think>`` are ordinary text in the Llama 3 vocabulary
  (several tokens), so they are text markers matched on token bytes with hold-back.
- Nothing is prefilled: the template ends with
  ``<|start_header_id|>assistant<|end_header_id|>\\n\\n`` and the model writes
  ``<think>`` itself (vLLM and SGLang serve these checkpoints with the R1-style parser,
  which consumes it).

Start state, seeded from the prompt: when the first message of the prompt is a system
message saying ``detailed thinking on``, the turn starts in reasoning (the model's own
``<think>`` is consumed, and an output cut short before ``</think>`` is reasoning);
``detailed thinking off`` or no such instruction starts it in content. Either way a
``<think>`` the model writes opens a block, so nothing depends on the seed but where a
block with a missing ``<think>`` is routed. Without a prompt the default is content.
The system message is read up to its ``<|eot_id|>`` (at most ``SYSTEM_SCAN_TOKENS``
tokens); the rest of the scan is the usual one, bounded by the last ``<|eot_id|>``.

Tool calls (:data:`NEMOTRON_V1_TOOL_CALLS`): one JSON list of ``{"name": …, "arguments":
{…}}`` objects between ``<TOOLCALL>`` and ``</TOOLCALL>`` (kind ``json``), in the content.
The facts: the Llama-Nemotron checkpoint repositories ship their own vLLM tool parser
plug-in (``llama_nemotron_toolcall_parser_no_streaming.py``; Nano 8B's
``llama_nemotron_nano_toolcall_parser.py`` with a ``llama_nemotron_nano_generic_tool_calling
.jinja`` template), served as ``--tool-call-parser llama_nemotron_json``, which reads the
JSON list between those markers (a lone object is read as a list of one); the
Llama-Nemotron Super v1.5 template (llama.cpp's ``models/templates``) asks for
``<TOOLCALL>[{"name": "tool_name1", "arguments": "tool_args1"}, …]</TOOLCALL>`` and writes a
past call that way (arguments as JSON, ``, `` between calls). vLLM's built-in
``nemotron_json`` parser reads the same markers and body. Both markers are plain text in
the Llama 3 vocabulary (several tokens), so they are matched on token bytes; a
``</TOOLCALL>`` inside a JSON string of the list is argument text. The same plug-in's
``llama_nemotron_pythonic`` variant (``<TOOLCALL>f(a=1)</TOOLCALL>``, one call a line) is
an alternative a server opts into, not the templates' format, and is not read here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.core.markers import resolve_markers
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat
from reasonspan.tokenizer.loader import LoadedTokenizer

THINK, END_THINK = "<think>", "</think>"
EOT = "<|eot_id|>"
SYSTEM_SCAN_TOKENS = 4096
"""How far into the prompt the system message is looked for."""

NEMOTRON_V1_TOOL_CALLS = ToolFormat(
    kinds=("json",),
    open=("<TOOLCALL>",),
    close=("</TOOLCALL>",),
    json_strings=True,
    source="the llama_nemotron_json vLLM tool parser shipped with the Llama-Nemotron "
    'checkpoints, and vLLM\'s nemotron_json parser: `<TOOLCALL>[{"name": …, "arguments": '
    "{…}}, …]</TOOLCALL>`, as Llama-Nemotron Super v1.5's template (llama.cpp's "
    "models/templates) asks for and writes past calls",
)
"""Llama-Nemotron's calls: a JSON list between plain-text ``<TOOLCALL>`` markers."""

_SWITCH = re.compile(rb"detailed thinking (on|off)\b", re.IGNORECASE)
_SYSTEM_HEADER = re.compile(rb"^\s*(?:<\|begin_of_text\|>)?\s*<\|start_header_id\|>\s*system\s*<")


class SystemSeededMachine(Machine):
    """A base machine whose prompt scan starts the turn in reasoning when the system
    prompt says ``detailed thinking on`` (module doc). Routing is the base machine's."""

    def __init__(self, spec: ReasoningSpec, tokenizer: LoadedTokenizer, *, thinking: bool) -> None:
        id_markers, byte_markers = resolve_markers(spec, tokenizer)
        super().__init__(
            spec,
            tokenizer,
            thinking=thinking,
            prompt_start=False,
            id_markers=id_markers,
            byte_markers=byte_markers,
        )
        self._seeded_on = Machine(
            spec,
            tokenizer,
            thinking=thinking,
            prompt_start=True,
            id_markers=id_markers,
            byte_markers=byte_markers,
        )
        self._eot = tokenizer.single_token_id(EOT)

    def system_switch(self, prompt: Sequence[int] | np.ndarray) -> bool | None:
        """``detailed thinking on`` → True, ``off`` → False, read from the first message of
        the prompt if it is a system message; None when there is no such instruction."""
        if self._eot is None:
            return None
        head = prompt[:SYSTEM_SCAN_TOKENS]
        ids = head.tolist() if isinstance(head, np.ndarray) else list(head)
        self.validate(ids, 0, "prompt_token_ids")
        try:
            end = ids.index(self._eot)
        except ValueError:
            return None
        tb = self.tokenizer.token_bytes
        text = b"".join(tb[t] for t in ids[:end])
        if not _SYSTEM_HEADER.match(text):
            return None
        found = _SWITCH.findall(text)
        return None if not found else found[-1].lower() == b"on"

    def prompt_in_reasoning(self, prompt: Sequence[int] | np.ndarray) -> bool:
        if self.system_switch(prompt):
            return self._seeded_on.prompt_in_reasoning(prompt)
        return super().prompt_in_reasoning(prompt)


@register
class NemotronV1Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="nemotron_v1",
        aliases=("llama_nemotron", "nemotron_nas", "llama_nemotron_v1"),
        start=(THINK,),
        end=(END_THINK,),
        turn=(EOT,),
        text_markers=(THINK, END_THINK),
        prompt_start=False,
        thinking_default=True,
        start_in_content="enter",
        tool_calls=NEMOTRON_V1_TOOL_CALLS,
        start_source=(
            "documented: seeded from the system prompt (`detailed thinking on` → reasoning, "
            "else content); the template prefills nothing"
        ),
        notes="plain-text markers; start state from the system prompt's detailed thinking "
        "on/off, not from chat_template_kwargs",
    )
    # Llama-Nemotron Super/Ultra (DeciLM "nemotron-nas"); Nano 8B says plain "llama".
    hint = DetectionHint(model_types=("nemotron-nas", "deci"), plain_text_markers=True)

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        """The base routing with a prompt scan that reads the system prompt (module doc)."""
        thinking, _ = cls.resolve_switches(kwargs)
        key = ("nemotron_v1", cls.spec, thinking)
        cached = tokenizer.cache.get(key)
        if isinstance(cached, SystemSeededMachine):
            return cached
        machine = SystemSeededMachine(cls.spec, tokenizer, thinking=thinking)
        tokenizer.cache[key] = machine
        return machine
