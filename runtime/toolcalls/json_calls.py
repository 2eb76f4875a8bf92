"""Kind ``json``: each call is one JSON object naming the function and its arguments.

Hermes / Qwen3 (``<tool_call>{"name": …, "arguments": {…}}</tool_call>``), Llama 3.x
(``{"name": …, "parameters": {…}}``, bare or after ``<|python_tag|>``), Mistral's
``[TOOL_CALLS][{…}, …]`` list. A body may hold one object, a list of them, or several
objects separated by ``;`` or whitespace (Llama 3's parallel form). Arguments written as a
JSON string that holds an object are unwrapped.

A body that is not JSON values throughout is not this kind (nothing in it tells where one
call ends). In a body that is, a value that is not a call (no ``name``, arguments that
are not an object, a number JSON cannot hold: ``1e999``) is dropped and the other calls
are kept, as vLLM and SGLang keep the well-formed calls beside a malformed one;
a body none of whose values is a call goes back to the content (``{"a": 1}``).
"""

from __future__ import annotations

import json
from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, checked_call
from reasonspan.runtime.toolcalls.sections import SPACE

_decoder = json.JSONDecoder()


def _call(obj: object) -> ToolCall | None:
    if not isinstance(obj, dict):
        return None
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        fn = obj.get("function")
        if isinstance(fn, dict):
            return _call(fn)
        return None
    args: Any = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return None
    return checked_call(name, {} if args is None else args)


def read_json_values(text: str, separators: str = SPACE + ";,") -> list[Any] | None:
    """Every JSON value in ``text``, in order, allowing ``separators`` between them; None
    when anything else is there (the body is not this kind)."""
    out: list[Any] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in separators:
            i += 1
        if i >= n:
            return out
        try:
            value, i = _decoder.raw_decode(text, i)
        except ValueError:
            return None
        out.append(value)


@body_kind("json")
def parse_json(body: str, tools: Tools) -> list[ToolCall] | None:
    values = read_json_values(body)
    if not values:
        return None
    objs = [obj for value in values for obj in (value if isinstance(value, list) else [value])]
    calls = [call for call in map(_call, objs) if call is not None]
    return calls or None


_CLOSERS = {"{": "}", "[": "]"}


def is_json_prefix(text: str) -> bool:
    """Is ``text`` the beginning of a JSON object or array that the end of the output cut
    (brackets or a string still open, every closer matching its opener)? Characters
    between tokens are not validated: this tells a call cut by ``max_tokens`` (dropped)
    from a finished one, not a well-formed body from a malformed one."""
    s = text.lstrip()
    if s[:1] not in _CLOSERS:
        return False
    stack: list[str] = []
    inside = escaped = False
    for ch in s:
        if inside:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                inside = False
        elif ch == '"':
            inside = True
        elif ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return False
            if not stack:
                return False  # the value is complete: not a cut one
    return True
