"""The message machine: formats whose turn is a run of messages, each routed by its header.

A message is ``<|start|>`` + header + ``<|message|>`` + body + a terminator (harmony's
``<|end|>``, or one that ends the turn). The prompt ends at ``<|start|>assistant``, so the
first header is the model's own output. A header cannot be decided by start/end markers:
its words may be one token or several (``analy`` + ``sis``), and a recipient may come before
the channel. So the machine holds header tokens until ``<|message|>`` and decides on the
bytes of its tokens. A header is bounded (no newline, at most ``MAX_HEADER_BYTES`` of
text; before the first structural token only a recipient may appear): text that cannot be
a header is content, so a prompt that prefilled the start of a message streams without
being held.

What is a family's own is given by its subclass of :class:`MessageMachine`: which token is
which structural class (``classes``), how a header routes its body (``read_header``) and
which function a tool-call header calls (``function_name``). Structural tokens and the
headers of messages that are not tool calls are DELIMITER; a tool call's header, arguments
and terminator are TOOL_CALL, and :class:`MessageToolCalls` reads them as calls.

``is_still_reasoning`` is True inside a reasoning body and stays True between a reasoning
message and the next body, so a grammar is switched on only once an answer (or tool-call)
body begins.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reasonspan.runtime.core.errors import MissingMarkerError
from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING, TOOL_CALL
from reasonspan.runtime.core.machine import Cursor, Machine, Spill
from reasonspan.runtime.core.markers import resolve_markers
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.wire.call_messages import ToolCallPiece
from reasonspan.tokenizer.loader import LoadedTokenizer

# Structural token classes in MessageMachine.codes (0 = ordinary text). A family maps its
# own tokens to them (MessageMachine.classes).
START, END, MESSAGE, CHANNEL, CONSTRAIN, RETURN, CALL = range(1, 8)
TERMINATORS = (END, RETURN, CALL)

MAX_HEADER_BYTES = 256
"""Text bytes a header may hold (role, recipient, channel, content type) before it is
taken for ordinary text."""

_MAX_HEADER_TOKENS = 64
"""The prompt scan reads at most this many tokens of a header."""

_RECIPIENT_PREFIX = re.compile(rb"[ \t]*(?:t|to|to=[^\s<]*[ \t]*)?")
"""What may precede the first structural token of a header that has no ``<|start|>`` (the
turn's first header, whose role is in the prompt): nothing, or a recipient being written."""

_FRESH, _HEADER, _BODY = 0, 1, 2

# MessageToolCalls states: idle, in a tool message's header, in a call's arguments, in the
# body of a tool message that calls no function. The body states are the highest.
_IDLE, _IN_HEADER, _ARGS, _OTHER = 0, 1, 2, 3


@dataclass(slots=True)
class MessageCursor(Cursor):
    """Per-request state: where in the message structure the output is, and the header
    tokens held until ``<|message|>`` decides what they open."""

    mode: int = _FRESH
    body: int = CONTENT
    """Label of body tokens (REASONING, CONTENT, or what the family's header rule gives)."""
    tool: bool = False
    """The current message is a tool call: its terminator is labelled TOOL_CALL."""
    flag: bool = False
    """While reading a header: the reasoning state carried from the message before it."""
    structural: bool = False
    """The held header holds a structural token, so it is a header even if cut short."""

    def clear(self) -> None:
        Cursor.clear(self)  # not super(): slots dataclasses break zero-argument super()
        self.mode = _FRESH
        self.body = CONTENT
        self.tool = False
        self.flag = False
        self.structural = False

    @property
    def reasoning(self) -> bool:
        return self.body == REASONING if self.mode == _BODY else self.flag


class MessageMachine(Machine):
    """Routes messages on token ids; header tokens are decided on their bytes. A family's
    subclass sets ``classes`` and ``read_header`` (and ``function_name`` if its headers
    call functions)."""

    vectorizable = False
    classes: tuple[tuple[str, int], ...] = ()
    """The family's structural tokens and their class (``START``, ``END``, …)."""

    def __init__(self, spec: ReasoningSpec, tokenizer: LoadedTokenizer) -> None:
        id_markers, _ = resolve_markers(spec, tokenizer)
        super().__init__(
            spec,
            tokenizer,
            thinking=True,
            prompt_start=spec.prompt_start,
            id_markers=id_markers,
            byte_markers={},
        )
        self.vectorizable = False
        codes = bytearray(self.vocab_size)
        for text, code in self.classes:
            tid = tokenizer.single_token_id(text)
            if tid is None and text in spec.required:
                pieces = tokenizer.encode(text)
                raise MissingMarkerError(
                    spec.name, text, tokenizer.source, f"it encodes as {len(pieces)} tokens"
                )
            if tid is not None:
                codes[tid] = code
        self.codes: bytes = bytes(codes)
        self.token_bytes = tokenizer.token_bytes
        boundary = np.frombuffer(self.codes, dtype=np.uint8)
        self._np_boundary = np.isin(boundary, (START, END, MESSAGE, RETURN, CALL))

    # ------------------------------------------------------------------ the family's rule

    def read_header(self, header: Sequence[int]) -> tuple[bool, int]:
        """``(is_tool_call, body_label)`` for a header (its tokens, ``<|message|>``
        included): the family's routing rule, usually over :meth:`header_words`."""
        raise NotImplementedError(f"{type(self).__name__} must define read_header")

    def function_name(self, header: Sequence[int]) -> str | None:
        """The function a tool-call header calls, or None (no function call)."""
        return None

    def header_words(self, header: Sequence[int]) -> tuple[bytes, bytes | None]:
        """``(channel name, recipient or None)`` of a header, from its tokens' bytes: the
        recipient is the ``to=`` word, in the role part or the channel part."""
        codes = self.codes
        tb = self.token_bytes
        role = bytearray()
        channel = bytearray()
        section: bytearray | None = role
        for t in header:
            k = codes[t]
            if not k:
                if section is not None:
                    section += tb[t]
            elif k == CHANNEL:
                section = channel
                channel += b" "
            elif k == CONSTRAIN:
                section = None  # the content type (json) decides nothing here
        words = role.split() + channel.split()
        recipient = next((w[3:] for w in words if w.startswith(b"to=")), None)
        name = bytes(next((w for w in channel.split() if not w.startswith(b"to=")), b""))
        return name, None if recipient is None else bytes(recipient)

    # ------------------------------------------------------------------ output routing

    def new_cursor(self) -> MessageCursor:
        return MessageCursor()

    def route_one(self, token: int, reasoning: bool, cursor: Cursor) -> tuple[int, bool] | None:
        """An ordinary token inside a message body: labelled like the body, as ``run``
        would, without the general path's queue."""
        cur = _message_cursor(cursor)
        if cur.mode != _BODY or self.codes[token]:
            return None
        _sync(cur, reasoning)
        return cur.body, cur.body == REASONING

    def run(
        self,
        tokens: Sequence[int],
        reasoning: bool,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None = None,
    ) -> bool:
        cur = _message_cursor(cursor)
        _sync(cur, reasoning)
        queue = list(tokens)
        queue.reverse()
        self._drain_messages(queue, cur, out_ids, out_labels)
        return cur.reasoning

    def flush(
        self,
        reasoning: bool,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None = None,
    ) -> bool:
        """End of output: a cut-short header is still a header if it holds a structural
        token (its tokens are delimiters, or TOOL_CALL for a tool call); plain text is content.
        Either way no body began, so the state the last ``run`` returned stands."""
        cur = _message_cursor(cursor)
        _sync(cur, reasoning)
        if cur.structural:
            self._settle_header(cur, out_ids, out_labels)
        elif cur.held:
            out_ids.extend(cur.held)
            out_labels.extend([CONTENT] * len(cur.held))
            self._drop_header(cur)
        return cur.reasoning

    def _drain_messages(
        self, queue: list[int], cur: MessageCursor, out_ids: list[int], out_labels: bytearray
    ) -> None:
        """Label the tokens of ``queue`` (reversed); the decision for each depends only on the
        tokens before it, never on how they were split into calls."""
        codes = self.codes
        tb = self.token_bytes
        held = cur.held
        while queue:
            t = queue.pop()
            k = codes[t]
            if cur.mode == _BODY:
                if not k:
                    out_ids.append(t)
                    out_labels.append(cur.body)
                elif k in TERMINATORS:
                    out_ids.append(t)
                    out_labels.append(TOOL_CALL if cur.tool else DELIMITER)
                    self._end_body(cur)
                elif k in (START, CHANNEL):
                    # A header without the <|end|> before it: the message ended implicitly.
                    self._end_body(cur)
                    held.append(t)
                    cur.structural = True
                else:  # a stray <|message|> or <|constrain|> inside a body
                    out_ids.append(t)
                    out_labels.append(DELIMITER)
                continue
            # Reading a header.
            if k == MESSAGE:
                held.append(t)
                tool, body = self.read_header(held)
                out_ids.extend(held)
                out_labels.extend([TOOL_CALL if tool else DELIMITER] * len(held))
                self._drop_header(cur)
                cur.mode = _BODY
                cur.body = body
                cur.tool = tool
            elif k in TERMINATORS or (k == START and held):
                # The header never reached <|message|>.
                if held and not cur.structural:
                    queue.append(t)  # decided after the held text, which is content
                    self._give_up(cur, queue, out_ids, out_labels)
                    continue
                if held:
                    self._settle_header(cur, out_ids, out_labels)
                if k == START:
                    held.append(t)
                    cur.structural = True
                else:
                    out_ids.append(t)
                    out_labels.append(DELIMITER)
            elif k:
                held.append(t)
                cur.structural = True
            else:
                held.append(t)
                text = cur.held_bytes + tb[t]
                cur.held_bytes = text
                if (
                    b"\n" in text
                    or len(text) > MAX_HEADER_BYTES
                    or (not cur.structural and not _RECIPIENT_PREFIX.fullmatch(text))
                ):
                    self._give_up(cur, queue, out_ids, out_labels)

    @staticmethod
    def _end_body(cur: MessageCursor) -> None:
        cur.mode = _HEADER
        cur.flag = cur.body == REASONING
        cur.tool = False

    def _settle_header(self, cur: MessageCursor, out_ids: list[int], out_labels: bytearray) -> None:
        """A header cut short by a terminator, a new ``<|start|>`` or the end of output: its
        tokens are labelled as its ``<|message|>`` would have; no body began."""
        tool, _ = self.read_header(cur.held)
        out_ids.extend(cur.held)
        out_labels.extend([TOOL_CALL if tool else DELIMITER] * len(cur.held))
        self._drop_header(cur)

    def _give_up(
        self, cur: MessageCursor, queue: list[int], out_ids: list[int], out_labels: bytearray
    ) -> None:
        """The held tokens cannot be a header: they are content. The first is decided here;
        the rest go back to the queue, where a ``<|start|>`` or ``<|channel|>`` among them
        may begin a real header."""
        first, rest = cur.held[0], cur.held[1:]
        out_ids.append(first)
        out_labels.append(DELIMITER if self.codes[first] else CONTENT)
        queue.extend(reversed(rest))
        self._drop_header(cur)
        cur.mode = _BODY
        cur.body = CONTENT
        cur.tool = False

    @staticmethod
    def _drop_header(cur: MessageCursor) -> None:
        cur.held.clear()
        cur.held_bytes = b""
        cur.structural = False

    # ------------------------------------------------------------------ prompt scan

    def prompt_in_reasoning(self, prompt: Sequence[int] | np.ndarray) -> bool:
        """Reasoning only when the prompt ends inside a reasoning message (or inside a
        header that already routes to reasoning, such as one after
        ``<|channel|>analysis``). Only the last message is looked at, so old reasoning
        messages in the history never decide it; only the ids read are validated."""
        n = len(prompt)
        i = self.last_boundary(prompt, n)  # validates prompt[i:]
        codes = self.codes
        if i >= 0 and codes[int(prompt[i])] == MESSAGE:
            # Inside a body: its header runs back to the previous boundary.
            lo = max(0, i - _MAX_HEADER_TOKENS - 1)
            window = _ints(prompt[lo:i])
            self.validate(window, lo, "prompt_token_ids")
            j = len(window)
            while j > 0:
                k = codes[window[j - 1]]
                if k in TERMINATORS or k == MESSAGE:
                    break
                j -= 1
                if k == START:
                    break
            else:
                if lo > 0:
                    return False  # longer than any header: not one
            return self.read_header(window[j:])[1] == REASONING
        # Inside a header (or no message structure at all): the model writes <|message|>
        # next, so a header that already names the reasoning channel opens reasoning.
        if n - i > _MAX_HEADER_TOKENS:
            return False
        header = _ints(prompt[i + 1 :])
        if not any(codes[t] == CHANNEL for t in header):
            return False
        tool, body = self.read_header(header)
        return not tool and body == REASONING

    def last_boundary(self, prompt: Sequence[int] | np.ndarray, n: int) -> int:
        """Index of the last ``<|start|>``, ``<|message|>`` or terminator, or -1; every id
        from there to the end is validated."""
        codes = self.codes
        tail_start = max(0, n - 64)
        tail = _ints(prompt[tail_start:])
        self.validate(tail, tail_start, "prompt_token_ids")
        for j in range(len(tail) - 1, -1, -1):
            k = codes[tail[j]]
            if k and k != CHANNEL and k != CONSTRAIN:
                return tail_start + j
        for begin, part, _top in self.chunks_backward(prompt, tail_start):
            hits = np.flatnonzero(self._np_boundary[part])
            if hits.size:
                return begin + int(hits[-1])
        return -1

    def ends_in_body(self, prompt: Sequence[int] | np.ndarray) -> bool:
        """The prompt's last boundary is a ``<|message|>``: it ends inside a body."""
        n = len(prompt)
        i = self.last_boundary(prompt, n) if n else -1
        return i >= 0 and self.codes[int(prompt[i])] == MESSAGE


class MessageToolCalls:
    """Splits a request's TOOL_CALL tokens into calls (a ``ToolCallReader``).

    A tool-call message is labelled TOOL_CALL as a whole: header, arguments, terminator.
    The header's tokens are held until its ``<|message|>``, then read on their bytes for
    the function name (the machine's ``function_name``); the ordinary tokens after it are
    the arguments, until a terminator or the next header's ``<|start|>`` / ``<|channel|>``.
    Only the header is read, never the whole output.

    The reader is a small state machine over the labelled tokens, so its state after a
    run of tokens is the same however they were cut into feeds: idle, in a header, in a
    call's arguments, or in the body of a tool message that is no function call (a
    built-in tool's, or a recipient without a name: its tokens are nobody's arguments and
    never a header). ``in_call`` is only the arguments state: a call whose arguments are
    followed by another header was closed by it, even when that header is cut short by
    the end of the output."""

    __slots__ = ("_header", "_machine", "_mode", "busy", "in_call")

    def __init__(self, machine: MessageMachine) -> None:
        self._machine = machine
        self._header: list[int] = []
        self._mode = _IDLE
        self.busy = False
        """Not idle (a plain attribute: read once per token): ``feed`` must see the next
        tokens even when none of them is TOOL_CALL, since they may end the message."""
        self.in_call = False
        """Reading the arguments of the last call opened: the end of the output cuts it."""

    def feed(self, token_ids: Sequence[int], labels: bytes | bytearray) -> list[ToolCallPiece]:
        codes = self._machine.codes
        header = self._header
        mode = self._mode
        out: list[ToolCallPiece] = []
        args: list[int] | None = None  # the argument list of this feed's piece
        for t, lab in zip(token_ids, labels, strict=True):
            k = codes[t]
            if lab != TOOL_CALL:
                # Another message: a header or body the machine did not make a tool call.
                # A stray <|message|> / <|constrain|> inside a tool message's body is a
                # delimiter and leaves the message open.
                if mode >= _ARGS and lab == DELIMITER and k in (MESSAGE, CONSTRAIN):
                    continue
                mode = _IDLE
                header.clear()
                continue
            if mode >= _ARGS:
                if not k:
                    if mode == _ARGS:
                        if args is None:
                            args = []
                            out.append(ToolCallPiece(None, args))
                        args.append(t)
                    continue
                # A terminator, or the <|start|> / <|channel|> of the next tool header (a
                # stray <|message|> or <|constrain|> in a body is a delimiter, above).
                mode = _IDLE
                args = None
                if k in (START, CHANNEL):
                    header.append(t)
                    mode = _IN_HEADER
                continue
            if k == MESSAGE:
                header.append(t)
                name = self._machine.function_name(header)
                header.clear()
                if name is None:
                    mode = _OTHER
                else:
                    mode = _ARGS
                    args = []
                    out.append(ToolCallPiece(name, args))
            elif k in TERMINATORS:
                header.clear()  # a header cut short: no call began
                mode = _IDLE
            else:
                if k == START and header:
                    header.clear()  # a new header after one cut short
                header.append(t)
                mode = _IN_HEADER
        self._mode = mode
        self.busy = mode != _IDLE
        self.in_call = mode == _ARGS
        return out


def _ints(ids: Sequence[int] | np.ndarray) -> list[int]:
    """A plain list, not yet validated (``Machine.validate`` names a bad id's position)."""
    return ids.tolist() if isinstance(ids, np.ndarray) else list(ids)


def _message_cursor(cursor: Cursor) -> MessageCursor:
    if not isinstance(cursor, MessageCursor):
        raise TypeError(f"MessageMachine needs a MessageCursor, not {type(cursor).__name__}")
    return cursor


def _sync(cur: MessageCursor, reasoning: bool) -> None:
    """Take the caller's reasoning flag. At the first call it comes from the prompt scan:
    reasoning means a prefilled reasoning body, else the model writes a header first. Later
    it is the value the previous call returned, unless the caller overrides it."""
    if cur.mode == _FRESH:
        if reasoning:
            cur.mode = _BODY
            cur.body = REASONING
        else:
            cur.mode = _HEADER
            cur.flag = False
    elif cur.mode == _BODY:
        if reasoning != (cur.body == REASONING):
            cur.body = REASONING if reasoning else CONTENT
            cur.tool = False
    else:
        cur.flag = reasoning
