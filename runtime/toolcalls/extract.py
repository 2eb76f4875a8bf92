"""One request's tool-call regions, found in the labelled token stream.

The reasoning machine labels every token first; this extractor then reads the tokens it
decided, in order, and takes call regions out of the answer:

- a region opens at an ``open`` marker (a token id, or the bytes of a run of tokens: such
  a run is held back until it is decided) or, for a format with ``leading`` characters, at
  the first non-space text of the answer;
- it closes at a ``close`` marker, or at the end of the output when the format has none
  (or says its close marker may be left out: ``close_optional``), or when the engine
  says the model stopped (finish reason ``"stop"``) with the region still open;
- its tokens are held until then, and only then decoded (its bytes, markers included) and
  read by the format's body kinds: well-formed calls label the region ``TOOL_CALL`` and
  become :class:`ToolCall` s; a region read at the end of the output that does not read
  whole gives the calls up to its last complete top-level value, the text after them
  content (``{"name": "f", …} I used f.``); anything else (a malformed body, a region
  ``max_tokens`` cut) never becomes a call: a malformed body goes back to the content
  verbatim, labelled ``TOOL`` (kept in the text, never skipped), and a call cut by the
  end of the output is dropped (labelled ``TOOL_CALL``, no call, no text), so no half
  call, and no half-written markup, is ever sent;
- a close marker met while the kind reads the body as an unfinished argument
  (:meth:`ToolFormat.could_end`) is argument text, unless the output ends right after it;
  a region an ``open_in_body`` marker opened that never closes is read at the finish
  (calls, or verbatim content).

Everything after a held token is held too, so the tokens come out in order and every
split of the output into deltas gives the same labels, text and calls (property-tested).
Tokens outside a region cost one set lookup each.
"""

from __future__ import annotations

from reasonspan.runtime.core.holdback import Spill
from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING, TOOL, TOOL_CALL
from reasonspan.runtime.core.tool_format import CompiledToolFormat
from reasonspan.runtime.core.tool_types import ToolCall, Tools
from reasonspan.runtime.toolcalls.held import BODY, HeldRegion, Item
from reasonspan.runtime.toolcalls.region_bytes import (
    WS,
    completed_calls,
    first_marker,
    strip_closer,
    value_ends,
)

_OUT, _FRESH, _IN = 0, 1, 2


def _answer_part(item: Item) -> bool:
    """Does a token the reasoning machine split carry answer bytes (spill parts)?"""
    parts = item[2]
    return parts is not None and any(ch in (CONTENT, TOOL) for _, ch, _ in parts)


class ToolCallExtractor(HeldRegion):
    """Per request: feed decided ``(ids, labels, spill)``, get them back with call regions
    relabelled (or held), plus the calls completed."""

    __slots__ = ("_mode", "_tools", "count", "regions", "settled")

    def __init__(self, fmt: CompiledToolFormat, tools: Tools) -> None:
        super().__init__(fmt)
        self._tools = tools
        self._mode = _FRESH if fmt.leading else _OUT
        self.count = 0
        """Calls completed so far."""
        self.regions = 0
        """Regions opened so far: the open region's number (:meth:`open_bytes`)."""
        self.settled: list[tuple[int, int]] | None = None
        """When a caller sets it to a list (a stream that sends arguments as written:
        ``runtime/wire/region_calls.py``): each region decided, as ``(its number, how
        many of the calls handed out it gave)``, in the order of those calls."""

    @property
    def tools(self) -> Tools:
        return self._tools

    @property
    def kinds(self) -> tuple[str, ...]:
        return self._fmt.fmt.kinds

    @property
    def held_count(self) -> int:
        """Tokens held now (the open region's, and any undecided after it)."""
        return len(self._held)

    def open_bytes(self) -> bytearray | None:
        """While a region is open: its bytes so far (grown in place as tokens come, never
        rewritten; its body begins at :meth:`body_start`); None outside a region."""
        if self._mode != _IN or not self._held:
            return None
        return self._grown()

    def body_start(self) -> int:
        """Where the open region's body begins in :meth:`open_bytes` (after its opener,
        unless the kind reads the opener too)."""
        at, start, in_body = self._opener(self._grown())
        return at if in_body or self._fmt.fmt.keep_open_text else start

    @property
    def trims_gaps(self) -> bool:
        """The format trims the whitespace between the answer and a call
        (:attr:`ToolFormat.trim_gaps`): decode the content with ``call_gaps``."""
        return self._fmt.fmt.trim_gaps

    @property
    def busy(self) -> bool:
        """Tokens are held (a region is open or a marker may be starting)."""
        return bool(self._held)

    def passthrough_ids(self) -> frozenset[int] | None:
        """The opener ids, while :meth:`feed` hands every other answer token back as it
        is (nothing held, outside a region, openers matched on ids only); None otherwise.
        The runtime's output path writes such tokens without calling :meth:`feed`."""
        fmt = self._fmt
        if self._held or self._mode != _OUT or fmt.open_bytes:
            return None
        return fmt.open_ids

    # ------------------------------------------------------------------ feeding

    def feed(
        self, ids: list[int], labels: bytes | bytearray, spill: tuple[Spill, ...] | list[Spill]
    ) -> tuple[list[int], bytearray, list[Spill], list[ToolCall]]:
        fmt = self._fmt
        if (
            not self._held
            and self._mode == _OUT
            and not fmt.open_bytes
            and fmt.open_ids.isdisjoint(ids)
        ):
            return ids, bytearray(labels), list(spill), []
        out_ids: list[int] = []
        out_labels = bytearray()
        out_spill: list[Spill] = []
        calls: list[ToolCall] = []
        parts: dict[int, list[tuple[bytes, int, int]]] = {}
        for idx, data, channel, after in spill:
            parts.setdefault(idx, []).append((data, channel, after))
        for i, t in enumerate(ids):
            self._one((t, labels[i], parts.get(i)), out_ids, out_labels, out_spill, calls)
        return out_ids, out_labels, out_spill, calls

    def finish(
        self, finish_reason: str | None = None
    ) -> tuple[list[int], bytearray, list[Spill], list[ToolCall]]:
        """End of output: a region that runs to the end is read now (calls, with any text
        after the last complete one as content; or back to the content when it does not
        read). Any other open region is a call cut by ``max_tokens``, dropped (module
        doc), unless ``finish_reason`` is ``"stop"``: the model ended its turn with the
        block unclosed, so it is read as one that runs to the end (the calls it holds, or
        its text as content, as the engines return it). Without a finish reason the cut
        rule holds: no half call is ever sent."""
        out_ids: list[int] = []
        out_labels = bytearray()
        out_spill: list[Spill] = []
        calls: list[ToolCall] = []
        fmt = self._fmt
        to_end = (
            fmt.fmt.close_optional
            or not (fmt.close_ids or fmt.close_bytes)
            or finish_reason == "stop"
        )
        while self._mode == _IN:
            # (Reading a region re-feeds the tokens held after it, which may open another.)
            if self._pending is not None and self._pending_reads():
                n, after = self._pending
                self._close(n, after, out_ids, out_labels, out_spill, calls)
            elif to_end or self._opener(self._region_bytes())[2]:
                self._read_to_end(out_ids, out_labels, out_spill, calls)
            else:
                self._cut(out_ids, out_labels, out_spill, calls)
        self._release(len(self._held), out_ids, out_labels, out_spill)
        return out_ids, out_labels, out_spill, calls

    # ------------------------------------------------------------------ one token

    def _one(
        self,
        item: Item,
        ids: list[int],
        labels: bytearray,
        spill: list[Spill],
        calls: list[ToolCall],
    ) -> None:
        t, lab, _ = item
        fmt = self._fmt
        answer = lab in (CONTENT, TOOL)
        if self._mode == _IN:
            self._held.append(item)
            if (
                not answer
                and not (lab == DELIMITER and t in fmt.close_ids)
                and not (fmt.close_bytes and _answer_part(item))
            ):
                # (A close marker the reasoning machine consumes, such as Inkling's
                # ``<|end_message|>`` framing, still closes the region; so may a token the
                # machine split, with the answer bytes before a marker of its own: A13B's
                # ``>\n``, ``>`` ending ``</tool_calls>``, ``\n`` beginning ``\n</answer>``.)
                return
            if t in fmt.close_ids:
                region = self._region_bytes(-1)
                if self._in_argument(region):
                    return  # the marker is text of a string argument
                if not self._could_end(region):
                    if self._pending is None:
                        self._pending = (len(self._held), b"")
                    return  # the marker is text of an unfinished argument, so far
                self._close(len(self._held), b"", ids, labels, spill, calls)
            elif fmt.close_bytes:
                self._find_close(ids, labels, spill, calls)
            return
        if not answer:
            # A marker never spans a token of another channel: what was held is content
            # after all. (A token the reasoning machine split between reasoning and the
            # answer, such as ``.<`` before a text marker that ends reasoning, takes part
            # with its answer bytes only: :meth:`_bytes`.)
            self._release(len(self._held), ids, labels, spill)
            if fmt.open_bytes and _answer_part(item):
                # A token the machine split, a marker of its own then answer bytes (``><``:
                # ``>`` ends ``</think>``, ``<`` may begin ``<function_calls>``): those
                # bytes may begin a byte opener.
                self._held.append(item)
                self._find_open(ids, labels, spill, calls)
                return
            self._emit(item, ids, labels, spill)
            if answer and self._mode == _FRESH:
                self._mode = _OUT
            return
        if t in fmt.open_ids:
            self._release(len(self._held), ids, labels, spill)
            self._enter()
            self._held.append(item)
            return
        if self._mode == _FRESH:
            self._held.append(item)
            data = self._bytes(item).lstrip(WS)
            if not data:
                return  # only space so far: the answer has not begun
            if data[:1] in fmt.leading:
                self._enter()
                return
            self._mode = _OUT
            if not fmt.open_bytes:
                self._release(len(self._held), ids, labels, spill)
                return
            # fall through: the held run may still begin a byte marker
        else:
            self._held.append(item)
        if fmt.open_bytes:
            self._find_open(ids, labels, spill, calls)
        else:
            self._release(len(self._held), ids, labels, spill)

    # ------------------------------------------------------------------ markers on bytes

    def _find_open(
        self, ids: list[int], labels: bytearray, spill: list[Spill], calls: list[ToolCall]
    ) -> None:
        """Outside, with byte open markers: open a region where one is complete, else keep
        only the tokens that may still begin one."""
        fmt = self._fmt
        chunks = [self._bytes(item) for item in self._held]
        buf = b"".join(chunks)
        at, _ = first_marker(buf, fmt.open_bytes)
        if at < 0:
            # Keep the shortest tail of tokens whose bytes may begin a marker.
            at = len(buf)
            for k in range(max(0, len(buf) - fmt.max_marker + 1), len(buf)):
                tail = buf[k:]
                if any(m.startswith(tail) for m in fmt.open_bytes):
                    at = k
                    break
            opened = False
        else:
            opened = True
        j, pos = 0, 0
        while j < len(chunks) and pos + len(chunks[j]) <= at:
            pos += len(chunks[j])
            j += 1
        self._release(j, ids, labels, spill)
        if opened:
            self._enter()
            # The rest of the run may already hold the whole call.
            if fmt.close_bytes:
                self._find_close(ids, labels, spill, calls)

    def _enter(self) -> None:
        """A region opens: its held tokens from here on are its own (:attr:`_buf`)."""
        self._mode = _IN
        self.regions += 1
        self._buf = bytearray()
        self._buf_n = 0
        self._close_from = 0

    def _find_close(
        self, ids: list[int], labels: bytearray, spill: list[Spill], calls: list[ToolCall]
    ) -> None:
        """Inside, with byte close markers: close where one is complete, after the opener.
        Only the bytes from :attr:`_close_from` on are searched."""
        fmt = self._fmt
        buf = self._grown()
        _, start, _ = self._opener(buf)
        at, size = first_marker(buf, fmt.close_bytes, max(start, self._close_from))
        while at >= 0:
            if self._in_argument(buf[:at]):
                pass  # text of a string argument
            elif self._could_end(buf[:at]):
                break
            elif self._pending is None:
                self._pending = self._through(buf, at + size)
            at, size = first_marker(buf, fmt.close_bytes, at + 1)
        if at < 0:
            # A closer may still end in the next token's bytes.
            self._close_from = max(start, len(buf) - fmt.max_marker + 1)
            return
        n, after = self._through(buf, at + size)
        self._close(n, after, ids, labels, spill, calls)

    # ------------------------------------------------------------------ deciding a region

    def _read(self, n: int, after: bytes) -> tuple[bytes, list[ToolCall] | None]:
        """The text before the opener in the region ``_held[:n]`` (less ``after``, the
        bytes of its last token past its end), and the calls its body reads as."""
        fmt = self._fmt
        buf = self._region_bytes(n)
        if after:
            buf = buf[: len(buf) - len(after)]
        before, body = self._body(buf)
        return before, fmt.fmt.parse(
            strip_closer(fmt, body).decode("utf-8", "replace"), self._tools
        )

    def _read_to_end(
        self, ids: list[int], labels: bytearray, spill: list[Spill], calls: list[ToolCall]
    ) -> None:
        """The output ended in a region read as it is: its calls; or, when the whole does
        not read, the calls of the shortest prefix ending a top-level value
        (:func:`value_ends`) that gives the most calls, the text after it content
        (``{"name": "f", …} I used f.``, as both engines return it); or, when none
        reads, content verbatim."""
        n = len(self._held)
        before, got = self._read(n, b"")
        if got is None:
            buf = self._region_bytes()
            _, body = self._body(buf)
            skip = len(buf) - len(body)
            best: tuple[int, bytes, bytes, list[ToolCall]] | None = None
            for end in value_ends(body):
                if not body[end:].strip(WS):
                    continue  # the whole, less trailing space: read already
                n_end, after = self._through(buf, skip + end)
                head, calls_at = self._read(n_end, after)
                # The shortest prefix with the most calls: a value after the calls that
                # is not one (``{"a": 1}`` in the prose) stays text, not a dropped call.
                if calls_at and (best is None or len(calls_at) >= len(best[3])):
                    best = (n_end, after, head, calls_at)
            if best is not None:
                self._settle(*best, ids, labels, spill, calls)
                return
        self._settle(n, b"", before, got, ids, labels, spill, calls)

    def _close(
        self,
        n: int,
        after: bytes,
        ids: list[int],
        labels: bytearray,
        spill: list[Spill],
        calls: list[ToolCall],
    ) -> None:
        """The region is ``_held[:n]`` (a region always begins the held run): read it;
        its calls, or back to content."""
        before, got = self._read(n, after)
        self._settle(n, after, before, got, ids, labels, spill, calls)

    def _settle(
        self,
        n: int,
        after: bytes,
        before: bytes,
        got: list[ToolCall] | None,
        ids: list[int],
        labels: bytearray,
        spill: list[Spill],
        calls: list[ToolCall],
    ) -> None:
        """Label the region ``_held[:n]`` by what it read as (``got``: its calls, or None:
        content verbatim), and decide the tokens held after it afresh."""
        region = self._held[:n]
        rest = self._held[n:]
        if got is not None and len(region) > 1 and self._opens_after(region[-1], after):
            # The closer's last token begins the next region (``></`` … ``><``: ``>`` ends
            # ``</function_calls>``, ``<`` begins ``<function_calls>``): it is decided
            # afresh as a split token, its closer's bytes consumed, the rest answer bytes.
            t = region[-1][0]
            region = region[:-1]
            rest = [(t, DELIMITER, [(after, CONTENT, 1)]), *rest]
            after = b""
        if got is None:
            for item in region:
                self._emit(item, ids, labels, spill, TOOL)
        else:
            first = len(ids)
            emit = self._emit
            for item in region:
                if item[2] is None:  # the common case, inlined: a region may be long
                    ids.append(item[0])
                    labels.append(TOOL_CALL if item[1] in BODY else item[1])
                else:
                    emit(item, ids, labels, spill, TOOL_CALL)
            if before.strip(WS):
                spill.append((first, before, CONTENT, 0))
            if after.strip(WS):
                spill.append((len(ids) - 1, after, CONTENT, 0))
            calls.extend(got)
            self.count += len(got)
        if self.settled is not None:
            self.settled.append((self.regions, len(got or ())))
        self._held = []
        self._mode = _OUT
        self._pending = None
        # Tokens held after the region are decided afresh.
        for item in rest:
            self._one(item, ids, labels, spill, calls)

    def _opens_after(self, last: Item, after: bytes) -> bool:
        """Do the bytes ``after`` a closer in the region's ``last`` token (a whole answer
        token) hold or begin a byte opener?"""
        data = after.lstrip(WS)
        if not data or last[2] is not None or last[1] not in (CONTENT, TOOL):
            return False
        return any(m.startswith(data[: len(m)]) or m in data for m in self._fmt.open_bytes)

    def _cut(
        self, ids: list[int], labels: bytearray, spill: list[Spill], calls: list[ToolCall]
    ) -> None:
        """The output ended inside a closable region: no half call is sent. The calls it
        completed before the cut are kept where the format marks where one call ends
        (:attr:`ToolFormat.call_close`); text before the opener in its first token stays
        content; the rest of the region is dropped (``TOOL_CALL``, no text)."""
        fmt = self._fmt
        buf = self._region_bytes()
        before, body = self._body(buf)
        text = body.decode("utf-8", "replace")
        got = completed_calls(fmt.fmt, text, self._tools) if fmt.fmt.call_close else []
        first = len(ids)
        for item in self._held:
            self._emit(item, ids, labels, spill, TOOL_CALL)
        if before.strip(WS) and len(ids) > first:
            spill.append((first, before, CONTENT, 0))
        calls.extend(got)
        self.count += len(got)
        if self.settled is not None:
            self.settled.append((self.regions, len(got)))
        self._held.clear()
        self._mode = _OUT

    # ------------------------------------------------------------------ output

    def _release(self, n: int, ids: list[int], labels: bytearray, spill: list[Spill]) -> None:
        """The first ``n`` held tokens are decided as they were labelled."""
        if n <= 0:
            return
        for item in self._held[:n]:
            self._emit(item, ids, labels, spill)
        del self._held[:n]

    @staticmethod
    def _emit(
        item: Item,
        ids: list[int],
        labels: bytearray,
        spill: list[Spill],
        relabel: int = -1,
    ) -> None:
        t, lab, parts = item
        if (relabel >= 0 and lab in (CONTENT, TOOL)) or (relabel == TOOL_CALL and lab in BODY):
            lab = relabel
            if parts and relabel == TOOL_CALL:
                # its answer bytes are the call's; only its reasoning text stays text
                parts = [p for p in parts if p[1] == REASONING]
        if parts:
            at = len(ids)
            spill.extend((at, data, channel, after) for data, channel, after in parts)
        ids.append(t)
        labels.append(lab)
