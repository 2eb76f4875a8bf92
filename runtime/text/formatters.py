"""Text formatters: per-channel trimming that must agree between streaming and parse().

A formatter sees one channel's decoded text in order, plus a ``marker()`` call wherever a
delimiter token passed. Its output depends only on that sequence, never on how the text
was chunked, so split labels (gemma4's ``thought\\n``) and trimmed newlines (step3p5,
ernie45) come out identically however the stream was cut.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from reasonspan.runtime.core.spec import Trim


class TextFormatter(Protocol):
    def text(self, s: str) -> str: ...
    def marker(self) -> str: ...
    def finish(self) -> str: ...
    def idle_trail(self) -> str | None:
        """None while the formatter holds or owes something (the next text must go
        through :meth:`text`); else the characters it would hold back at the end of a
        text. Text not ending in one of them passes unchanged, so the vectorized output
        path (``sse_path``) may write it without calling the formatter."""
        ...


TextFormatterFactory = Callable[[], TextFormatter]

WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""Every character ``str.strip()`` strips (``str.isspace``; checked by a test)."""


class IdentityFormatter:
    """Passes text through; the formatter of every channel with nothing to trim."""

    __slots__ = ()

    def text(self, s: str) -> str:
        return s

    def marker(self) -> str:
        return ""

    def finish(self) -> str:
        return ""

    def idle_trail(self) -> str | None:
        return ""


class TrimFormatter:
    """Applies a :class:`Trim`: a prefix before the first text, a label and leading
    characters after a marker, trailing characters before one. Text that may still turn
    out to be trimmed is held until it is decided; ``finish()`` releases it."""

    __slots__ = (
        "_armed",
        "_join",
        "_label_buf",
        "_lead_left",
        "_prefix",
        "_quiet",
        "_tail",
        "_trail",
        "_trim",
        "_unseen",
    )

    def __init__(self, trim: Trim) -> None:
        self._trim = trim
        self._armed = False
        self._label_buf = ""
        self._lead_left = 0
        self._tail = ""
        self._prefix = trim.prefix
        self._join = False
        """A marker passed after text: ``trim.join`` goes before the next text."""
        self._unseen = bool(trim.join)
        """No text emitted yet, and a join depends on that (keeps ``text`` off its fast
        path until the first text)."""
        self._trail = trim.trail
        self._quiet = self._idle()
        """Nothing pending (:meth:`_idle`), kept up to date by every method that changes
        the state: ``text``'s fast path reads this one flag."""

    def _idle(self) -> bool:
        return not (
            self._armed
            or self._lead_left
            or self._tail
            or self._prefix
            or self._unseen
            or self._join
        )

    def _emit(self, out: str) -> str:
        """Put the prefix (once) in front of the first non-empty output, and the join in
        front of the first output of a later block."""
        if out:
            if self._prefix:
                out = self._prefix + out
                self._prefix = ""
            if self._join:
                out = self._trim.join + out
                self._join = False
            self._unseen = False
        return out

    def text(self, s: str) -> str:
        if self._quiet and (not s or s[-1] not in self._trail):
            # Mid-text with nothing pending (almost every token): only a trailing
            # trimmable character needs the slow path.
            return s
        out = self._text(s)
        self._quiet = self._idle()
        return out

    def _text(self, s: str) -> str:
        trim = self._trim
        if self._armed and trim.label:
            buf = self._label_buf + s
            if len(buf) < len(trim.label) and trim.label.startswith(buf):
                self._label_buf = buf
                return ""
            self._label_buf = ""
            self._armed = False
            s = buf[len(trim.label) :] if buf.startswith(trim.label) else buf
        elif self._armed:
            self._armed = False
        if self._lead_left and s:
            stripped = s.lstrip(trim.lead)
            cut = len(s) - len(stripped)
            if self._lead_left > 0:
                cut = min(cut, self._lead_left)
                self._lead_left -= cut
            s = s[cut:]
            if s:
                self._lead_left = 0
        if not trim.trail:
            return self._emit(s)
        s = self._tail + s
        kept = s.rstrip(trim.trail)
        self._tail = s[len(kept) :]
        return self._emit(kept)

    def idle_trail(self) -> str | None:
        # ``_quiet`` is :meth:`_idle`, kept up to date; a label is only ever being matched
        # (``_label_buf``) while the formatter is armed, which ``_idle`` covers.
        return self._trail if self._quiet else None

    def marker(self) -> str:
        trim = self._trim
        out = self._label_buf
        self._label_buf = ""
        tail = self._tail
        self._tail = ""
        if tail:
            n = len(tail) if trim.trail_max == 0 else min(trim.trail_max, len(tail))
            out += tail[: len(tail) - n]
        out = self._emit(out)
        self._armed = True
        self._lead_left = (-1 if trim.lead_max == 0 else trim.lead_max) if trim.lead else 0
        if trim.join and not self._unseen:
            self._join = True
        self._quiet = self._idle()
        return out

    def take_held_space(self) -> str:
        """The trailing whitespace held (a run of trail characters that may still be
        trimmed at a marker), given up: a tool call follows it, so it is the call's gap
        (:meth:`CallGapFormatter.call`), not this channel's to trim or release. Held text
        that is not all whitespace stays held."""
        tail = self._tail
        if not tail or tail.strip():
            return ""
        self._tail = ""
        self._quiet = self._idle()
        return tail

    def finish(self) -> str:
        out = self._label_buf + self._tail
        self._label_buf = ""
        self._tail = ""
        out = self._emit(out)
        if self._prefix and self._trim.prefix_always:  # no text came: the prefix alone
            out, self._prefix = self._prefix, ""
        self._quiet = self._idle()
        return out


class CallGapFormatter:
    """Content around tool calls: the whitespace between the answer and a call (the
    template's ``\n`` before ``<tool_call>``, the blank line before a DSML block) is layout,
    not answer. Trailing whitespace is held until more text shows it is inside the answer;
    :meth:`call` takes it off the content, and the whitespace that follows the call too.
    Wraps the family's own content formatter, so its trimming applies first.

    Text on both sides of removed calls keeps one separator, so the two sides are not
    glued (``Before.\n\n<tool_call>…</tool_call>\n\nAfter.`` gives ``Before.\n\nAfter.``):
    the whitespace the model wrote before the first call of the run, or, when it wrote
    none there, the whitespace after the last one; whitespace between two calls is layout
    and never kept. Why the run before: vLLM's Hermes parser (``hermes_tool_parser.py``,
    ``extract_tool_calls`` and the streaming ``_extract_content``) returns the content up
    to the first ``<tool_call>`` verbatim, so its content ends with exactly that run (the
    text after the call it drops; SGLang's ``Qwen25Detector.detect_and_parse`` strips the
    text before the call and drops the text after it too). reasonspan keeps the text after
    the call, and joins it to the text before with what vLLM's content already ends with.
    A call with no answer text on one side (at the very start or end of the content) keeps
    no whitespace at all, as before.

    Until answer text has come out (``_seen``), :meth:`idle_trail` is None: whether a
    call has text before it is known only to a formatter that saw that text, so the first
    answer text of a request goes through :meth:`text` (one row of the output path); the
    rest passes by as before."""

    __slots__ = ("_after", "_inner", "_lead", "_seen", "_sep", "_ws")

    def __init__(self, inner: TextFormatter) -> None:
        self._inner = inner
        self._ws = ""
        """Trailing whitespace of the text so far, held until text follows it (answer) or
        a call does (layout)."""
        self._after = False
        """Calls passed and no answer text since: leading whitespace is not answer."""
        self._seen = False
        """Answer text has come out: a call now has text before it."""
        self._sep = ""
        """After calls with text before them: the whitespace run before the first one."""
        self._lead: list[str] = []
        """After calls: the whitespace since the last one, in pieces (the separator when
        ``_sep`` is empty; a list, so a long run costs each piece once)."""

    def _through(self, s: str) -> str:
        if not s:
            return ""
        if self._after:
            body = s.lstrip()
            if not body:
                self._lead.append(s)
                return ""
            # Text after calls: one separator in front of it, if text came before them.
            if self._seen:
                self._ws = self._sep or "".join(self._lead) + s[: len(s) - len(body)]
            self._sep = ""
            self._lead = []
            self._after = False
            s = body
        kept = s.rstrip()
        if len(kept) == len(s):
            if self._ws:
                s = self._ws + s
                self._ws = ""
            self._seen = True
            return s
        if not kept:
            self._ws += s
            return ""
        out = self._ws + kept
        self._ws = s[len(kept) :]
        self._seen = True
        return out

    def text(self, s: str) -> str:
        return self._through(self._inner.text(s))

    def marker(self) -> str:
        return self._through(self._inner.marker())

    def idle_trail(self) -> str | None:
        if self._ws or self._after or not self._seen:
            return None
        inner = self._inner.idle_trail()
        return None if inner is None else inner + WHITESPACE

    def call(self, text: str = "") -> None:
        """A tool call passed (``text``: what its tokens decode to, marker included): the
        whitespace on either side of it is not answer, but for one separator (the class's
        rule). Whitespace that shares a token with a call marker (DeepSeek's `` <`` before
        ``｜DSML｜``, a ``>\n`` closing one) decodes inside the call's text, so the runs
        are read from its edges too; a call fed token by token (``parse()``) gives the
        same runs as the same call fed at once.

        Whitespace the inner formatter still holds (ERNIE's content Trim keeps the newlines
        before a marker back, to trim one of them there) was written before the call: it is
        taken into this formatter's run first, or it would come out after the call, a
        second separator beside the one kept here."""
        inner = self._inner
        if type(inner) is TrimFormatter:
            held = inner.take_held_space()
            if held:
                self._through(held)  # whitespace only: held here, nothing comes out
        body = text.lstrip()
        if not self._after:
            # The first call of a run: the whitespace before it is the separator.
            self._sep = self._ws + text[: len(text) - len(body)] if self._seen else ""
        self._ws = ""
        if body:
            # The whitespace since the last call starts over (between two calls: layout).
            self._lead = [body[len(body.rstrip()) :]]
        elif self._after:
            self._lead.append(text)
        else:
            self._lead = [text]
        self._after = True

    def finish(self) -> str:
        out = self._through(self._inner.finish()) + self._ws
        self._ws = self._sep = ""
        self._lead = []
        return out


def formatter_factory(trim: Trim) -> TextFormatterFactory | None:
    """None for a channel with nothing to trim (the common case costs nothing)."""
    if trim.is_identity:
        return None
    return lambda: TrimFormatter(trim)
