"""Kinds ``deepseek_v3`` and ``deepseek_v31``: DeepSeek's tool-call sections.

Both sit inside ``<｜tool▁calls▁begin｜>`` … ``<｜tool▁calls▁end｜>`` (the format's region)
and write each call between ``<｜tool▁call▁begin｜>`` and ``<｜tool▁call▁end｜>``, with
only whitespace between calls (:mod:`.sections` reads the section):

- ``deepseek_v3`` (DeepSeek-V3, V3-0324, R1; their chat template in
  tokenizer_config.json): ``TYPE<｜tool▁sep｜>NAME\\n```json\\n{…}\\n```` , the type being
  ``function``;
- ``deepseek_v31`` (DeepSeek-V3.1; its chat template): ``NAME<｜tool▁sep｜>{…}``.

Arguments are a JSON object, read JSON-aware (a marker inside an argument string is text).
"""

from __future__ import annotations

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools
from reasonspan.runtime.toolcalls.sections import (
    call_from,
    head_then_json,
    json_object_at,
    plain_name,
    read_section,
    skip_space,
)

CALL_BEGIN = "<｜tool▁call▁begin｜>"
CALL_END = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
FENCE = "```"


def _v3_call(text: str, i: int) -> tuple[ToolCall, int] | None:
    sep = text.find(SEP, i)
    if sep < 0 or text[i:sep].strip() != "function":
        return None
    line_end = text.find("\n", sep)
    if line_end < 0:
        return None
    name = plain_name(text[sep + len(SEP) : line_end])
    j = skip_space(text, line_end)
    if name is None or not text.startswith(FENCE, j):
        return None
    j += len(FENCE)
    if text.startswith("json", j):
        j += len("json")
    got = json_object_at(text, j)
    if got is None:
        return None
    args, j = got
    j = skip_space(text, j)
    if not text.startswith(FENCE, j):
        return None
    return call_from(name, args), j + len(FENCE)


_v31_call = head_then_json(SEP, plain_name)
"""``NAME<｜tool▁sep｜>{…}``."""


@body_kind("deepseek_v3", markers=(CALL_BEGIN, CALL_END, SEP))
def parse_deepseek_v3(body: str, tools: Tools) -> list[ToolCall] | None:
    return read_section(body, CALL_BEGIN, CALL_END, _v3_call)


@body_kind("deepseek_v31", markers=(CALL_BEGIN, CALL_END, SEP))
def parse_deepseek_v31(body: str, tools: Tools) -> list[ToolCall] | None:
    return read_section(body, CALL_BEGIN, CALL_END, _v31_call)
