"""What the runtime sets up for a new request besides its batch slot: its key, and the
per-request machinery of its record (call extractor, stop matcher, citations, tool-call
reader, log probabilities), so ``ReasoningRuntime.add`` reads as the order of admission.

It must not know the batch or the output path: it sees one record and its parser.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reasonspan.runtime.core.errors import InvalidOptionError
from reasonspan.runtime.core.ids import is_id
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.stream.errors import RequestKey
from reasonspan.runtime.stream.logprobs import MAX_TOP_LOGPROBS, RequestLogprobs
from reasonspan.runtime.stream.request import StreamRecord
from reasonspan.runtime.stream.stops import StopMatcher
from reasonspan.runtime.toolcalls import Tools
from reasonspan.runtime.wire.call_messages import ToolCallStream
from reasonspan.runtime.wire.region_calls import RegionCalls


def request_key(request_id: object) -> RequestKey:
    """A request id that is not a ``str``: an int (a numpy integer as its int), else a
    TypeError naming its type (``bool`` is not an id)."""
    if not (isinstance(request_id, str) or is_id(request_id)):
        raise TypeError(f"add(): request ids are str or int, not {type(request_id).__name__}")
    return request_id if isinstance(request_id, str) else int(request_id)  # type: ignore[call-overload]


def completion_id_of(key: RequestKey) -> str:
    """The chunks' ``id`` when the server gives none: a string id itself, else
    ``chatcmpl-<id>``."""
    return key if isinstance(key, str) else f"chatcmpl-{key}"


def new_logprobs(parser: ReasoningParser, top: object) -> RequestLogprobs | None:
    """The request's log-probability carrier (``top``: how many likeliest tokens per
    position, 0 to 20; None: it asked for none)."""
    if top is None:
        return None
    if isinstance(top, bool) or not isinstance(top, int) or not 0 <= top <= MAX_TOP_LOGPROBS:
        raise InvalidOptionError("logprobs", top, f"None or an int from 0 to {MAX_TOP_LOGPROBS}")
    return RequestLogprobs(top, parser.tokenizer.token_bytes)


def equip(
    rec: StreamRecord,
    parser: ReasoningParser,
    tools: Tools | Sequence[Mapping[str, Any]] | None,
    stops: Sequence[str],
    include_usage: bool,
    argument_step: int,
) -> None:
    """A new record's per-request machinery: its call extractor (``tools`` offered and
    not turned off by ``tool_choice``), stop matcher, citations flag and, for a family
    whose calls are messages (harmony), its tool-call reader. ``argument_step``: a
    call's arguments are sent as they are written, the open region read every that many
    tokens; 0: each call whole (``runtime/wire/region_calls.py``)."""
    extractor = parser.tool_call_extractor(tools) if tools is not None else None
    rec.calls = extractor
    rec.call_writer = None if extractor is None else RegionCalls(extractor, argument_step)
    rec.stop = StopMatcher(stops) if stops else None
    rec.include_usage = include_usage
    rec.cites = parser.machine.spec.citations != "none"
    reader = parser.tool_call_reader() if extractor is None else None
    if reader is not None:
        rec.tools = ToolCallStream(reader, parser.tokenizer, argument_step)
