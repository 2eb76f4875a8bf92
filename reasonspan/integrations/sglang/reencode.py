"""Streamed text back to token ids, as encoding the whole text gives them.

SGLang hands its detectors text only, a delta at a time. Encoding each delta on its own
does not give the ids of the whole text (``"</th"`` + ``"ink>"`` is not ``</think>``; a
word cut in two is two other tokens), so a delta's ids cannot be fed to reasonspan as they
come. :class:`Reencoder` keeps the text, re-encodes a window at its end and hands over only
ids that later text can no longer change:

- the window starts :data:`OVERLAP` tokens before the end of what was handed over, and
  its first tokens must be those same ids ending at the same character (else the window
  cut a word or a marker differently: the whole text is encoded instead, and counted in
  :attr:`Reencoder.whole_encodes`);
- the last :data:`HOLD` tokens of the window are held back until more text comes (or
  :meth:`Reencoder.finish`): the end of the text may still merge with what follows; so is
  any token that reaches into a tail of the text that begins an added token (``<｜tool▁``
  of DeepSeek's ``<｜tool▁calls▁begin｜>``, many tokens until the marker is whole).

The cost, per delta: one ``tokenizers`` encode of the window, about ``OVERLAP + HOLD`` tokens
plus the delta (linear in the output overall), and a latency of ``HOLD`` tokens. A
tokenizer whose encoding of a window never agrees with the whole (a SentencePiece one that
prepends ``▁`` to any text it starts) falls back to the whole text every delta: quadratic.
If the whole text no longer starts with the ids handed over (a word longer than the hold
that re-tokenized as it grew), the ids go on from the same character, so the text is never
lost or repeated, and :attr:`Reencoder.diverged` counts it; the split can then differ from
``parse()`` of the whole text at that word.
"""

from __future__ import annotations

from tokenizers import Encoding, Tokenizer

from reasonspan.tokenizer.loader import LoadedTokenizer

OVERLAP = 4
"""Tokens already handed over that each window encodes again, to check it agrees."""

HOLD = 4
"""Tokens at the end of the text held back until more text comes."""


def added_prefixes(tok: LoadedTokenizer) -> frozenset[str]:
    """Every proper prefix of the vocabulary's added tokens (cached on the tokenizer)."""
    key = ("sglang.added_prefixes",)
    found = tok.cache.get(key)
    if not isinstance(found, frozenset):
        found = frozenset(_prefixes(tok.tokenizer))
        tok.cache[key] = found
    return found


def _prefixes(tok: Tokenizer) -> set[str]:
    out: set[str] = set()
    for added in tok.get_added_tokens_decoder().values():
        text = added.content
        out.update(text[:i] for i in range(1, len(text)))
    return out


class Reencoder:
    """One request's text deltas -> the token ids of the whole text, incrementally."""

    def __init__(self, tok: LoadedTokenizer, *, hold: int = HOLD, overlap: int = OVERLAP) -> None:
        self._tok = tok.tokenizer
        self._prefixes = added_prefixes(tok)
        self._longest = max(map(len, self._prefixes), default=0)
        self._hold = hold
        self._overlap = overlap
        self._text = ""
        self._ids: list[int] = []
        self._starts: list[int] = []
        """The character each handed-over id starts at."""
        self._end = 0
        """The character where the handed-over ids end."""
        self.whole_encodes = 0
        """Deltas whose window disagreed with what was handed over (the whole text was
        encoded)."""
        self.diverged = 0
        """Times the whole text's ids no longer started with those handed over."""

    @property
    def ids(self) -> list[int]:
        """The ids handed over so far."""
        return list(self._ids)

    def feed(self, text: str) -> list[int]:
        """The new ids that this much more text settles (none while it is all held)."""
        self._text += text
        return self._advance(self._hold)

    def finish(self) -> list[int]:
        """The ids still held: the text is complete."""
        return self._advance(0)

    def _encode(self, start: int) -> Encoding:
        return self._tok.encode(self._text[start:], add_special_tokens=False)

    def _advance(self, hold: int) -> list[int]:
        if self._end == len(self._text) and hold:
            return []
        n = min(self._overlap, len(self._ids))
        base = self._starts[-n] if n else 0
        at = self._resume(self._encode(base), base, n)
        if at is None:
            self.whole_encodes += 1
            base = 0
            at = self._resume(self._encode(0), 0, len(self._ids))
        if at is None:
            self.diverged += 1
            base = self._end
            enc, first = self._encode(base), 0
        else:
            enc, first = at
        ids, offsets = enc.ids, enc.offsets
        stop = max(first, len(ids) - hold)
        if hold:
            cut = len(self._text) - self._partial_marker() - base
            while stop > first and offsets[stop - 1][1] > cut:
                stop -= 1
        new = list(ids[first:stop])
        for i in range(first, stop):
            self._starts.append(base + offsets[i][0])
        if stop > first:
            self._end = base + offsets[stop - 1][1]
        self._ids += new
        return new

    def _partial_marker(self) -> int:
        """The length of the longest tail of the text that an added token begins with."""
        text = self._text
        for n in range(min(self._longest, len(text)), 0, -1):
            if text[-n:] in self._prefixes:
                return n
        return 0

    def _resume(self, enc: Encoding, base: int, n: int) -> tuple[Encoding, int] | None:
        """Where the window ``enc`` (of the text from ``base``) goes on: after its first
        ``n`` tokens, if they are the last ``n`` handed over and end where those ended."""
        if n > len(enc.ids) or enc.ids[:n] != self._ids[len(self._ids) - n :]:
            return None
        if n and base + enc.offsets[n - 1][1] != self._end:
            return None
        return enc, n
