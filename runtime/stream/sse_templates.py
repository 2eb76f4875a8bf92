"""The SSE output path's event templates: a request's text events as fixed bytes around
the token's escaped text, cut from msgspec encodings of its chunk Structs, so the bytes
the path writes are exactly the encoding of the chunk (``runtime/stream/sse_path.py``).

Owns the cutting only (a sentinel written where the text goes, and another where the
request id goes, for templates shared by the requests of one model and second). It must
not know slots or steps: it sees one request's chunk maker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import msgspec

from reasonspan.runtime.wire.openai import ChatCompletionChunk, ChoiceDelta
from reasonspan.runtime.wire.sse import sse_event


class ChunkMaker(Protocol):
    """What the templates are cut from: a request's record (``StreamRecord``), which makes
    its chunks."""

    def chunk(self, delta: ChoiceDelta) -> ChatCompletionChunk: ...


SENTINEL = "\ue000reasonspan\ue001"
"""Text written into a template chunk where a token's escaped text goes (private-use
characters: msgspec writes them as raw UTF-8, and no id or model name holds them)."""
SENT = SENTINEL.encode("utf-8")
ID = "\ue002reasonspan-id\ue003"
"""Written where the request id goes in the templates shared by requests of one model
and second (:meth:`SSEPath.admit`); replaced by each request's escaped id."""
ID_B = ID.encode("utf-8")


def templates(
    chunk: Callable[[ChoiceDelta], ChatCompletionChunk], alias: bool
) -> tuple[bytes, bytes, bytes, bytes] | None:
    """``(content prefix, reasoning prefix, alias middle, suffix)`` of a request's text
    events, cut from encoded chunks (``chunk``: the request's chunk of a delta); None when
    they cannot be cut unambiguously."""
    content = sse_event(chunk(ChoiceDelta(content=SENTINEL))).split(SENT)
    if alias:
        delta = ChoiceDelta(reasoning=SENTINEL, reasoning_content=SENTINEL)
        reasoning = sse_event(chunk(delta)).split(SENT)
        if len(content) != 2 or len(reasoning) != 3 or reasoning[2] != content[1]:
            return None
        return content[0], reasoning[0], reasoning[1], content[1]
    reasoning = sse_event(chunk(ChoiceDelta(reasoning=SENTINEL))).split(SENT)
    if len(content) != 2 or len(reasoning) != 2 or reasoning[1] != content[1]:
        return None
    return content[0], reasoning[0], b"", content[1]


SharedTemplates = tuple[bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes]
"""The templates of one model and second, each prefix split where the id goes:
``(content prefix before the id, after it, reasoning prefix before, after, alias middle,
suffix, role event before the id, after it)``."""


def role_delta() -> ChoiceDelta:
    """The delta of a request's first chunk (``ReasoningRuntime.add`` queues it; its role
    event template is cut from it). A new one each call: a queued chunk's delta may be
    merged into."""
    return ChoiceDelta(role="assistant", content="")


def shared_templates(rec: ChunkMaker, alias: bool) -> SharedTemplates | None:
    """The request's templates with :data:`ID` for its id, split there, or None unless
    that id sits once in each prefix and in the role event, and nowhere else (then every
    request of the same model and ``created`` second has these templates but for its
    JSON-escaped id)."""

    def chunk(d: ChoiceDelta) -> ChatCompletionChunk:
        return msgspec.structs.replace(rec.chunk(d), id=ID)

    cut = templates(chunk, alias)
    if cut is None:
        return None
    pre_c, pre_r, mid, suf = cut
    role = sse_event(chunk(role_delta()))
    if any(part.count(ID_B) != 1 for part in (pre_c, pre_r, role)):
        return None
    if ID_B in mid or ID_B in suf:
        return None
    c_head, c_tail = pre_c.split(ID_B)
    r_head, r_tail = pre_r.split(ID_B)
    role_head, role_tail = role.split(ID_B)
    return c_head, c_tail, r_head, r_tail, mid, suf, role_head, role_tail
