"""Kind ``cohere``: Cohere Command's action, a JSON list of
``{"tool_call_id": "0", "tool_name": NAME, "parameters": {…}}``.

Command R7B, Command A (Reasoning) and Command A Plus write every call of a step as one
JSON list between ``<|START_ACTION|>`` and ``<|END_ACTION|>`` (their chat templates render
an assistant's ``tool_calls`` so; Cohere's melody templates ``cmd3`` / ``cmd4`` the same).
llama.cpp's Command R7B handler reads ``tool_name`` as the function's name and
``parameters`` as its arguments (``tool_call_id`` is the model's own numbering, not an
OpenAI call id: servers make their own), and so does this kind. A body may also be one
object or several JSON values (read as :mod:`.json_calls` reads its bodies). An element
with no ``tool_name`` string, or whose ``parameters`` are not an object (a JSON string
holding one is unwrapped), is dropped and its siblings are kept; a body with no call at
all goes back to the content.
"""

from __future__ import annotations

import json
from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, checked_call
from reasonspan.runtime.toolcalls.json_calls import read_json_values


def _call(obj: object) -> ToolCall | None:
    if not isinstance(obj, dict):
        return None
    name = obj.get("tool_name")
    if not isinstance(name, str) or not name:
        return None
    args: Any = obj.get("parameters", {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return None
    return checked_call(name, {} if args is None else args)


@body_kind("cohere")
def parse_cohere(body: str, tools: Tools) -> list[ToolCall] | None:
    values = read_json_values(body)
    if not values:
        return None
    objs = [obj for value in values for obj in (value if isinstance(value, list) else [value])]
    calls = [call for call in map(_call, objs) if call is not None]
    return calls or None
