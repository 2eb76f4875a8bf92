"""Kind ``xlam``: Salesforce xLAM's JSON list of calls, each ``{"name": …, "arguments": {…}}``.

The list is the Hermes-style JSON the ``json`` kind reads, with two differences vLLM's
``xlam`` parser makes and this kind keeps:

- a call needs both ``name`` and ``arguments`` (an object, or a JSON string holding one):
  xLAM answers in bare JSON, so a list the user asked for (``[{"name": "Ada", "age": 36}]``)
  must not turn into a call; an item without them is dropped, its siblings kept, and a
  body with no call at all goes back to the content;
- the list may follow a ``[TOOL_CALLS]`` tag (Mistral's, which vLLM's parser accepts):
  written first in the answer, the tag is part of the region a leading ``[`` opened, so
  the kind reads past it.
"""

from __future__ import annotations

import json
from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, checked_call
from reasonspan.runtime.toolcalls.json_calls import read_json_values

TAG = "[TOOL_CALLS]"


def _call(obj: object) -> ToolCall | None:
    if not isinstance(obj, dict) or "arguments" not in obj:
        return None
    name, args = obj.get("name"), obj["arguments"]
    if not isinstance(name, str) or not name:
        return None
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None
    return checked_call(name, args)


@body_kind("xlam", markers=(TAG,))
def parse_xlam(body: str, tools: Tools) -> list[ToolCall] | None:
    text = body.lstrip()
    if text.startswith(TAG):
        text = text[len(TAG) :]
    values: list[Any] | None = read_json_values(text)
    if not values:
        return None
    objs = [obj for value in values for obj in (value if isinstance(value, list) else [value])]
    calls = [call for call in map(_call, objs) if call is not None]
    return calls or None
