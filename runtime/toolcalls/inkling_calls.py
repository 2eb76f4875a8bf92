"""Kind ``inkling``: Inkling's JSON tool-invocation block.

An Inkling model message that calls a tool is ``<|message_model|>``, an optional header
(the tool's name), ``<|content_invoke_tool_json|>``, one JSON object and
``<|end_message|>`` (or ``<|content_model_end_sampling|>`` when sampling stops there)::

    <|message_model|>get_weather<|content_invoke_tool_json|>{"name":"get_weather","args":{"city":"SF"}}<|end_message|>

The object names the function (``name``) and holds its arguments under ``args`` (vLLM's
Inkling parser carves ``args`` out of the wrapper and also takes ``arguments`` or
``parameters``; SGLang's ``InklingDetector`` reads the same object). Arguments written as
a JSON string holding an object are unwrapped. The body is exactly one object: anything
else, or an object with no name or arguments that are not an object, is not a call (the
block goes back to the content verbatim).

The raw-text block ``<|content_invoke_tool_text|>`` is not read here: vLLM renders it as
visible text, SGLang as a call whose arguments are ``{"text": body}``; with the engines
disagreeing, it stays content.
"""

from __future__ import annotations

import json
from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, checked_call
from reasonspan.runtime.toolcalls.json_calls import read_json_values
from reasonspan.runtime.toolcalls.sections import SPACE

ARGUMENT_KEYS = ("args", "arguments", "parameters")


def _arguments(obj: dict[str, Any]) -> object:
    args: object = next((obj[k] for k in ARGUMENT_KEYS if k in obj), {})
    if isinstance(args, str):
        try:
            return json.loads(args) if args.strip() else {}
        except ValueError:
            return None
    return {} if args is None else args


@body_kind("inkling")
def parse_inkling(body: str, tools: Tools) -> list[ToolCall] | None:
    values = read_json_values(body, SPACE)
    if values is None or len(values) != 1 or not isinstance(values[0], dict):
        return None
    obj = values[0]
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    call = checked_call(name, _arguments(obj))
    return None if call is None else [call]
