"""Kind ``cohere`` (Cohere Command's action, ``[{"tool_call_id": "0", "tool_name": NAME,
"parameters": {…}}, …]``) read while its region is open (``partial.py``).

The body is the json kind's (one list, one object or several values; :mod:`.cohere_calls`
reads it with :func:`.json_calls.read_json_values`), its calls named by ``tool_name`` and
their arguments in ``parameters``: the json kind's reader (:class:`.JsonCallsReader`) reads
it with those keys. At a call object's own level, ``tool_name`` is read as the json kind's
``name``; ``name`` and ``arguments``, which the whole read ignores here, are read as keys
of no meaning. A call written any other way (``parameters`` as a JSON string, no
``tool_name`` before them) is sent whole when its region closes, and so is every call
after it; a repeated ``tool_name`` or ``parameters`` breaks a committed call.
"""

from __future__ import annotations

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls.json_stream import KEY
from reasonspan.runtime.toolcalls.partial import partial_kind
from reasonspan.runtime.toolcalls.partial_json import JsonCallsReader, accepts_json

_KEYS = {"tool_name": "name", "name": "\0name", "arguments": "\0arguments"}
"""Keys outside the arguments as the json kind's reader is to take them."""


class CohereCallsReader(JsonCallsReader):
    """The json kind's reader with Cohere's keys (module doc)."""

    __slots__ = ()

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, ("parameters",))

    def _outside(self, kind: str, value: str) -> None:
        super()._outside(kind, _KEYS.get(value, value) if kind == KEY else value)


@partial_kind("cohere", accepts_json)
def _reader(tools: Tools) -> CohereCallsReader:
    return CohereCallsReader(tools)
