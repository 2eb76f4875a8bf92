"""Section kinds read while their region is open (``partial.py``): Kimi K2's
``<|tool_call_begin|>ID<|tool_call_argument_begin|>{…}<|tool_call_end|>``, DeepSeek
V3.1's ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>`` and DeepSeek V3 /
R1's ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{…}\n```<｜tool▁call▁end｜>``;
and Mistral's v11 calls ``NAME[ARGS]{…}[TOOL_CALLS]NAME[ARGS]{…}``, a section whose calls
begin with ``[TOOL_CALLS]`` (the region's opener, read as the first call's) and have no
call-end marker.

A kind is its markers, a *head* reader (where a call's arguments begin, and its name) and
the closers between its arguments and its call-end marker (V3's closing fence).

The reading rules are :mod:`.sections`' (calls one after another; a call whose head names
no function, or whose arguments are not one object followed by its call-end marker, is
dropped and its siblings kept; text between calls is skipped for Kimi K2, and makes the
section malformed for DeepSeek), applied as the text arrives: a call's head is read once
its separator marker arrives, its arguments object is re-encoded event by event
(:mod:`.partial_args`), and it commits when the object's first member is whole. A call
dropped before it commits is simply never sent; one dropped after (text between its
arguments and its call-end marker) is broken, as is every committed call of a section
that turns out malformed.
"""

from __future__ import annotations

from collections.abc import Callable

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls import deepseek_calls, kimi_calls, mistral_calls
from reasonspan.runtime.toolcalls.json_stream import OPEN_OBJECT, Event, JsonTokens
from reasonspan.runtime.toolcalls.partial import PartialCall, opens_with, partial_kind
from reasonspan.runtime.toolcalls.partial_args import (
    CLOSED,
    FAILED,
    GOING,
    ArgumentWriter,
)
from reasonspan.runtime.toolcalls.sections import SPACE, plain_name, skip_space

BETWEEN, HEAD, ARGS, AFTER, SKIP = range(5)
HEAD_MAX = 1024
"""Characters a call's head may have here: a longer one is not followed (the calls go
whole), rather than searched again with every piece of text."""
_WINDOW = 4096

Head = Callable[[str, int], "tuple[int, str | None] | None"]
"""``(text, i)`` -> where the arguments of the call whose head starts at ``text[i]`` begin,
and its function's name (None: the call is dropped, read on to its call-end marker);
None: wait for more text."""
DROP = (-1, None)
MALFORMED = (-2, None)
"""A head that makes the whole section not this kind (every committed call is broken)."""


def sep_head(sep: str, end: str, name_of: Callable[[str], str | None]) -> Head:
    """A head that is a name (as ``name_of`` reads it) up to the separator marker ``sep``,
    the arguments right after it."""

    def head(text: str, i: int) -> tuple[int, str | None] | None:
        at = text.find(sep, i, i + HEAD_MAX)
        stop = text.find(end, i, i + HEAD_MAX)
        if stop >= 0 and (at < 0 or stop < at):
            return DROP  # no separator before its end
        if at < 0:
            return None
        name = name_of(text[i:at])
        return DROP if name is None else (at + len(sep), name)

    return head


def _v3_head(text: str, i: int) -> tuple[int, str | None] | None:
    """``function<｜tool▁sep｜>NAME\n```json`` (``json`` optional), as
    :func:`.deepseek_calls._v3_call` reads it."""
    sep, end = deepseek_calls.SEP, deepseek_calls.CALL_END
    at = text.find(sep, i, i + HEAD_MAX)
    stop = text.find(end, i, i + HEAD_MAX)
    if stop >= 0 and (at < 0 or stop < at):
        return DROP
    if at < 0:
        return None
    if text[i:at].strip() != "function":
        return DROP
    line_end = text.find("\n", at, i + HEAD_MAX)
    if stop >= 0 and (line_end < 0 or stop < line_end):
        return DROP
    if line_end < 0:
        return None
    name = plain_name(text[at + len(sep) : line_end])
    j = skip_space(text, line_end)
    if name is None:
        return DROP
    fence = deepseek_calls.FENCE
    if (fence + "json").startswith(text[j : j + len(fence) + 4]) and len(text) - j < len(fence) + 4:
        return None  # the fence and its tag may still come
    if not text.startswith(fence, j):
        return DROP
    j += len(fence)
    return (j + len("json") if text.startswith("json", j) else j), name


def skip_dropped(text: str, i: int, begin: str, end: str) -> tuple[int, bool | None]:
    """A dropped call read on from ``i`` to its call-end marker ``end`` (as the whole read
    skips it): ``(after the marker, True)``; ``(where to read on, None)``, not there yet
    (only what may begin a marker is read again); ``(i, False)``: a call's ``begin``
    comes first, the section is malformed (``partial_tagged`` skips the same way)."""
    stop = text.find(end, i)
    following = text.find(begin, i)
    if following >= 0 and (stop < 0 or following < stop):
        return i, False
    if stop < 0:
        return max(i, len(text) - max(len(end), len(begin)) + 1), None
    return stop + len(end), True


class SectionCallsReader:
    """The partial reader of one section kind (module doc)."""

    __slots__ = ("_begin", "_call", "_closers", "_end", "_head", "_i", "_k", "_noise", "_state",
                 "_text", "_tokens", "_writer", "calls", "done")  # fmt: skip

    def __init__(
        self, begin: str, head: Head, end: str, noise: bool, closers: tuple[str, ...] = ()
    ) -> None:
        """``closers``: what comes, after optional whitespace each, between a call's
        arguments and its call-end marker ``end``."""
        self.calls: list[PartialCall] = []
        self._begin, self._head, self._end = begin, head, end
        self._closers = (*closers, end)
        self._k = 0
        self._noise = noise
        self._text = ""
        self._i = 0
        self._state = BETWEEN
        self._call: PartialCall | None = None
        self._tokens = JsonTokens(one_value=True)
        self._writer: ArgumentWriter | None = None
        self.done = False

    def feed(self, text: str) -> None:
        if self.done:
            return
        if self._state == ARGS:
            self._arguments(text)
        else:
            self._text += text
        while not self.done and self._state != ARGS and self._step():
            pass
        if self._i > _WINDOW:  # drop the text read past
            self._text, self._i = self._text[self._i :], 0

    def _malformed(self) -> bool:
        """The whole section does not read: every committed call is broken."""
        for call in self.calls:
            call.broken = True
        self.done = True
        return False

    def _step(self) -> bool:
        """Read on in the text; False: wait for more (or done)."""
        text, i = self._text, self._i
        if self._state == BETWEEN:
            at = text.find(self._begin, i)
            gap = text[i:] if at < 0 else text[i:at]
            stray = gap.strip(SPACE) and not self._noise
            if stray and (at >= 0 or not self._begin.startswith(gap.lstrip(SPACE))):
                return self._malformed()
            if at < 0:
                # (text skipped between calls is read once: only a marker's start waits)
                self._i = max(i, len(text) - len(self._begin) + 1)
                return False
            self._i = at + len(self._begin)
            self._state = HEAD
            return True
        if self._state == HEAD:
            got = self._head(text, i)
            if got is None:
                if len(text) - i >= HEAD_MAX:
                    self.done = True  # a head this long is not followed: sent whole
                return False
            start, name = got
            if got == MALFORMED:
                return self._malformed()
            if name is None:
                self._state = SKIP  # no function named: dropped, siblings kept
                return True
            self._call = PartialCall(name=name)
            self._tokens = JsonTokens(one_value=True)
            self._writer = None
            self._state = ARGS
            rest, self._text, self._i = text[start:], "", 0
            self._arguments(rest)
            return True
        if self._state == AFTER:
            j = skip_space(text, i)
            want = self._closers[self._k]
            seen = text[j : j + len(want)]
            if seen == want:
                self._i = j + len(want)
                self._k += 1
                if self._k == len(self._closers):
                    self._k = 0
                    self._state = BETWEEN
                    self._call = None
                return True
            if want.startswith(seen):
                return False
            self._lost()
            self._k = 0
            self._state = SKIP
            return True
        # SKIP: a dropped call runs to its call-end marker (with none, to the next call's
        # begin); a call-begin first means the section is malformed.
        if not self._end:
            at = text.find(self._begin, i)
            if at < 0:
                self._i = max(i, len(text) - len(self._begin) + 1)
                return False
            self._i, self._state, self._call = at, BETWEEN, None
            return True
        self._i, past = skip_dropped(text, i, self._begin, self._end)
        if not past:
            return False if past is None else self._malformed()
        self._state = BETWEEN
        self._call = None
        return True

    def _lost(self) -> None:
        call = self._call
        if call is not None and call.committed:
            call.broken = True
        self._call = None

    def _arguments(self, text: str) -> None:
        """Text of the open call's arguments object (and, once it closed, what follows)."""
        call = self._call
        assert call is not None
        tokens = self._tokens
        if self._writer is not None and tokens.plain_string_text(text):
            call.arguments.append(text)
            return
        events: list[Event] = []
        tokens.feed(text, events)
        for kind, value in events:
            if self._writer is None:
                if kind != OPEN_OBJECT:
                    self._lost()  # arguments that are not an object: dropped
                    self._resume(SKIP, tokens)
                    return
                self._writer = ArgumentWriter(call.arguments)
            got = self._writer.event(kind, value)
            if got == GOING:
                continue
            if got == FAILED:
                self._lost()
                self._resume(SKIP, tokens)
                return
            call.commit(self.calls)  # its first member is whole, or it closed
            if got == CLOSED:
                call.complete = True
        if tokens.done and self._writer is not None and call.complete:
            self._resume(AFTER, tokens)

    def _resume(self, state: int, tokens: JsonTokens) -> None:
        """Back to reading markers, from the text the lexer did not read."""
        self._state = state
        self._writer = None
        self._text, self._i = tokens.rest, 0


def _kimi_accepts(body: str) -> bool | None:
    """Any body: Kimi K2's section skips text between calls."""
    return True


_deepseek_accepts = opens_with(deepseek_calls.CALL_BEGIN)
"""A DeepSeek section begins with a call (it makes text between calls malformed)."""


def _mistral_head(text: str, i: int) -> tuple[int, str | None] | None:
    """``NAME`` or ``NAME[CALL_ID]ID`` up to ``[ARGS]``, as :mod:`.mistral_calls` reads it."""
    at = text.find(mistral_calls.ARGS, i, i + HEAD_MAX)
    following = text.find(mistral_calls.TOOL_CALLS, i, i + HEAD_MAX)
    if following >= 0 and (at < 0 or following < at):
        return MALFORMED
    if at < 0:
        return None
    head = text[i:at]
    if not mistral_calls.head_ok(head):
        return MALFORMED
    return at + len(mistral_calls.ARGS), head.partition(mistral_calls.CALL_ID)[0].strip(SPACE)


def _mistral_accepts(body: str) -> bool | None:
    """The v11 form: a name first (a v3 JSON list is the ``json`` kind's)."""
    return None if not body else body[0] not in "[{"


@partial_kind("mistral", _mistral_accepts)
def _mistral_reader(tools: Tools) -> SectionCallsReader:
    reader = SectionCallsReader(
        mistral_calls.TOOL_CALLS, _mistral_head, "", noise=False, closers=()
    )
    reader.feed(mistral_calls.TOOL_CALLS)  # the region's opener begins its first call
    return reader


@partial_kind("kimi_k2", _kimi_accepts)
def _kimi_reader(tools: Tools) -> SectionCallsReader:
    end = kimi_calls.CALL_END
    head = sep_head(kimi_calls.ARGS_BEGIN, end, kimi_calls.name_from_id)
    return SectionCallsReader(kimi_calls.CALL_BEGIN, head, end, noise=True)


@partial_kind("deepseek_v31", _deepseek_accepts)
def _deepseek_reader(tools: Tools) -> SectionCallsReader:
    end = deepseek_calls.CALL_END
    head = sep_head(deepseek_calls.SEP, end, plain_name)
    return SectionCallsReader(deepseek_calls.CALL_BEGIN, head, end, noise=False)


@partial_kind("deepseek_v3", _deepseek_accepts)
def _deepseek_v3_reader(tools: Tools) -> SectionCallsReader:
    end = deepseek_calls.CALL_END
    return SectionCallsReader(
        deepseek_calls.CALL_BEGIN, _v3_head, end, noise=False, closers=(deepseek_calls.FENCE,)
    )
