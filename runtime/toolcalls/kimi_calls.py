r"""Kind ``kimi_k2``: Kimi K2's tool-call section.

Inside ``<|tool_calls_section_begin|>`` … ``<|tool_calls_section_end|>`` (the format's
region), each call is ``<|tool_call_begin|>ID<|tool_call_argument_begin|>{…}<|tool_call_end|>``
(Kimi K2's chat template; K2-Instruct, K2-Thinking, K2.5, K2.6). The function name lives in
the call id ``functions.NAME:IDX`` (IDX a counter over the conversation): the name is the id
without its ``functions.`` prefix and ``:IDX`` suffix. What is accepted is exactly
``(functions.)?NAME:IDX``, NAME word characters and hyphens in dot-separated non-empty
parts and IDX one or more digits: vLLM's ``kimi_k2`` parser finds calls whose id matches
``[^<]+:\d+`` and reads the name with ``^(?:functions\.)?(?P<name>[\w\.]+):(?P<index>\d+)$``
(hyphens are added here: OpenAI function names may hold them, ``search-docs``). An id
without the prefix (``NAME:IDX``) reads as vLLM reads it. Any other id
(``functions.invalid.0``, a bare ``0``, ``functions.:0``) names no function: the call is
invalid and never sent (never a call named ``invalid.0`` or ``0``; :mod:`.sections` drops
it and keeps its siblings).

Text inside the section but outside a call is skipped, never content (vLLM's parser skips
it too); arguments are read JSON-aware, so a marker inside an argument string is text
(:mod:`.sections`).
"""

from __future__ import annotations

import re

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools
from reasonspan.runtime.toolcalls.sections import head_then_json, read_section

CALL_BEGIN = "<|tool_call_begin|>"
ARGS_BEGIN = "<|tool_call_argument_begin|>"
CALL_END = "<|tool_call_end|>"


_ID = re.compile(r"(?:functions\.)?([\w\-]+(?:\.[\w\-]+)*):\d+")
"""A call id (module doc): the function name is the group."""


def name_from_id(call_id: str) -> str | None:
    """``functions.get_weather:0`` (or ``get_weather:0``) → ``get_weather``; None for an
    id of any other shape (the call is invalid)."""
    m = _ID.fullmatch(call_id.strip())
    return None if m is None else m.group(1)


_call = head_then_json(ARGS_BEGIN, name_from_id)
"""``functions.NAME:IDX<|tool_call_argument_begin|>{…}``."""


@body_kind("kimi_k2", markers=(CALL_BEGIN, ARGS_BEGIN, CALL_END))
def parse_kimi_k2(body: str, tools: Tools) -> list[ToolCall] | None:
    return read_section(body, CALL_BEGIN, CALL_END, _call, noise=True)
