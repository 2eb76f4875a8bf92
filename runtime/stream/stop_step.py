"""One step of a request with stop strings, on the runtime's exact path.

Stop strings (``add(..., stop=...)``) are matched on the request's content text as it is
decoded, across tokens and steps: the text from the first match on is never sent, the
request is finished with finish_reason "stop" (usage counts every token the engine sent
for it), and its engine id comes out of ``take_aborted`` so the engine stops generating for
it. They are not matched inside reasoning: a model drafts and quotes freely while it
thinks (the prompt, the answer it is about to give, a blank line), so a stop string there
would end the request before its answer; a stop string means "the answer ends here". A
match never spans reasoning and content text. With several tokens in one step, the text
after the match is cut exactly, but a tool call completed in that step is not sent (the
runtime does not order calls and text within a step).
"""

from __future__ import annotations

from reasonspan.runtime.batch.types import Spill
from reasonspan.runtime.core.labels import TOOL_CALL
from reasonspan.runtime.stream.request import StreamRecord


def step_with_stop(
    rec: StreamRecord,
    alias: bool,
    room: int,
    ids: list[int],
    labels: bytes,
    spill: tuple[Spill, ...],
) -> bool:
    """One step of ``rec``: its tokens are decoded one at a time, so the text after a match
    is cut at the token that completed it. True: a stop string matched (the runtime ends
    the request with "stop")."""
    stop = rec.stop
    assert stop is not None
    calls = None
    if rec.call_writer is not None:
        ids, out_labels, out_spill, calls = rec.call_writer.feed(ids, labels, spill)
        labels, spill = bytes(out_labels), tuple(out_spill)
    r_parts: list[str] = []
    c_parts: list[str] = []
    hit = False
    dec = rec.text_decoder()
    if len(ids) == 1:
        r, c = dec.feed(ids, labels, spill)
        c, hit = stop.feed(c)
        r_parts.append(r)
        c_parts.append(c)
    else:
        at: dict[int, list[Spill]] = {}
        for i, data, channel, after in spill:
            at.setdefault(i, []).append((0, data, channel, after))
        for i, t in enumerate(ids):
            r, c = dec.feed([t], labels[i : i + 1], at.get(i, ()))
            c, hit = stop.feed(c)
            r_parts.append(r)
            c_parts.append(c)
            if hit:
                break
    if hit:
        calls = None
    elif rec.tools is not None and (TOOL_CALL in labels or rec.tools.reader.busy):
        calls = rec.message_calls(ids, labels)
    rec.emit_text(alias, room, "".join(r_parts), "".join(c_parts), calls)
    return hit
