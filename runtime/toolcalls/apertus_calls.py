"""Kind ``apertus``: a JSON list of one-key objects, ``[{"get_weather": {"city": "Bern"}}]``.

Apertus (Swiss AI, 2509) writes the calls of a turn between ``<|tools_prefix|>`` and
``<|tools_suffix|>`` as one JSON array whose items each map a function's name to its
arguments object: the Apertus chat template renders ``'{"' + name + '": ' + arguments
+ '}'`` per call, joined by ``, `` inside ``[`` … ``]``; vLLM's and SGLang's ``apertus``
parsers and llama.cpp's apertus handler (its grammar: an array of objects with the
function name as their one required property) read the same shape.

A body that is not one JSON array (or one such object, which vLLM also reads) is not this
kind: the region goes back to the content verbatim. In an array that is, an item that is
not a call (not an object, an empty object ``{}``, arguments that are neither an object
nor ``null``, a number JSON cannot hold) is dropped and the other calls are kept, as
SGLang's detector skips ``{}`` (its unit tests); ``null`` arguments are an empty object,
as there. An object with several keys is read by its first, as both vLLM's and SGLang's
parsers read it. An array none of whose items is a call is not a call either. Arguments
written as a JSON string (the template writes a string's text as it is) are read as the
JSON text they hold.
"""

from __future__ import annotations

import json
from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, checked_call

_decoder = json.JSONDecoder()


def _call(item: object) -> ToolCall | None:
    if not isinstance(item, dict) or not item:
        return None
    name, args = next(iter(item.items()))
    if not name:
        return None
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return None
    return checked_call(name, {} if args is None else args)


def _one_value(text: str) -> Any:
    """The one JSON value ``text`` holds (whitespace around it allowed); ValueError else."""
    start = len(text) - len(text.lstrip())
    value, end = _decoder.raw_decode(text, start)
    if text[end:].strip():
        raise ValueError("text after the JSON value")
    return value


@body_kind("apertus")
def parse_apertus(body: str, tools: Tools) -> list[ToolCall] | None:
    try:
        value = _one_value(body)
    except ValueError:
        return None
    items = value if isinstance(value, list) else [value]
    calls = [call for call in map(_call, items) if call is not None]
    return calls or None
