"""Kind ``kimi_k2``: Kimi K2's tool-call section.

Inside ``<|tool_calls_section_begin|>`` … ``<|tool_calls_section_end|>`` (the format's
region), each call is ``<|tool_call_begin|>ID<|tool_call_argument_begin|>{…}<|tool_call_end|>``
(Kimi K2's chat template; K2-Instruct, K2-Thinking, K2.5, K2.6). The function name lives in
the call id ``functions.NAME:IDX`` (IDX a counter over the conversation): the name is the id
without its ``functions.`` prefix and ``:IDX`` suffix, and an id without the prefix
(``NAME:IDX``) reads the same, as vLLM's ``kimi_k2`` parser reads it.

Text inside the section but outside a call is skipped, never content (vLLM's parser skips
it too); arguments are read JSON-aware, so a marker inside an argument string is text
(:mod:`.sections`).
"""

from __future__ import annotations

from .format import body_kind
from .sections import head_then_json, plain_name, read_section
from .types import ToolCall, Tools

CALL_BEGIN = "<|tool_call_begin|>"
ARGS_BEGIN = "<|tool_call_argument_begin|>"
CALL_END = "<|tool_call_end|>"


def name_from_id(call_id: str) -> str | None:
    """``functions.get_weather:0`` (or ``get_weather:0``) → ``get_weather``."""
    head = plain_name(call_id)
    if head is None:
        return None
    base, colon, idx = head.rpartition(":")
    if colon and idx.isdigit():
        head = base
    return plain_name(head.removeprefix("functions."))


_call = head_then_json(ARGS_BEGIN, name_from_id)
"""``functions.NAME:IDX<|tool_call_argument_begin|>{…}``."""


@body_kind("kimi_k2")
def parse_kimi_k2(body: str, tools: Tools) -> list[ToolCall] | None:
    return read_section(body, CALL_BEGIN, CALL_END, _call, noise=True)
