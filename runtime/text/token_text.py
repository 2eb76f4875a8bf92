"""Per-token text pieces for the vectorized output path, built once per tokenizer.

A server writes every generated token as JSON text inside an SSE event. For a token
whose bytes are a complete UTF-8 text on their own (nearly every token of a byte-level
vocabulary), that JSON text is a fixed byte string: escaping a string is per character,
so the escaped text of a run of such tokens is the concatenation of their escaped
pieces. :class:`TokenText` holds those pieces (escaped by msgspec itself, so the bytes
are exactly what the chunk Structs encode to) and a mask of the tokens they are valid
for; the output path (``sse_path``) gathers them instead of decoding, building and
encoding per token. Tokens outside the mask (a multi-byte character split across tokens,
invalid UTF-8, an empty token) take the exact per-request path.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from reasonspan.tokenizer.loader import LoadedTokenizer

_CACHE_KEY = "reasonspan.token_text"


class TokenText:
    """``escaped[id]``: the JSON string body of token ``id``'s text (no quotes);
    ``whole[id]``: that text is the token's whole text (its bytes decode on their own).
    Only for byte-level tokenizers (text = concatenated token bytes, decoded as UTF-8)."""

    __slots__ = ("_ends_in", "_kept", "_splits", "_strings", "_token_bytes", "escaped", "whole")

    def __init__(self, token_bytes: list[bytes]) -> None:
        encode = msgspec.json.encode
        escaped: list[bytes] = []
        whole = np.zeros(len(token_bytes), np.bool_)
        for i, data in enumerate(token_bytes):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                escaped.append(b"")
                continue
            if text:
                escaped.append(encode(text)[1:-1])
                whole[i] = True
            else:
                escaped.append(b"")
        self.escaped = escaped
        self.whole = whole
        self._ends_in: dict[str, np.ndarray[Any, np.dtype[np.bool_]]] = {}
        self._kept: dict[tuple[frozenset[int], str], np.ndarray[Any, np.dtype[np.bool_]]] = {}
        self._splits: dict[tuple[frozenset[int], str], dict[int, tuple[str, str]]] = {}
        self._token_bytes = token_bytes
        self._strings: np.ndarray[Any, np.dtype[np.object_]] | None = None

    @classmethod
    def of(cls, tok: LoadedTokenizer) -> TokenText | None:
        """The tokenizer's table (built on first use, then cached on it); None for a
        tokenizer whose text is not its tokens' bytes (SentencePiece-style decoders)."""
        if not tok.byte_level:
            return None
        got = tok.cache.get(_CACHE_KEY)
        if got is None:
            got = cls(tok.token_bytes)
            tok.cache[_CACHE_KEY] = got
        assert isinstance(got, TokenText)
        return got

    def strings(self) -> np.ndarray[Any, np.dtype[np.object_]]:
        """``strings()[id]``: token ``id``'s text where :attr:`whole`, else ``""`` (an
        object array, built on first use: a step's plain texts are one gather from it)."""
        got = self._strings
        if got is None:
            got = np.empty(len(self._token_bytes), object)
            got[:] = [
                data.decode("utf-8") if ok else ""
                for data, ok in zip(self._token_bytes, self.whole.tolist(), strict=True)
            ]
            self._strings = got
        return got

    def plain(self, skip: frozenset[int], trail: str) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """Tokens a channel's text can take from ``escaped`` with no decoder or formatter
        in between, when both are idle: whole, not left out (``skip``), and not ending in
        a character its formatter might trim (``trail``: held until the next text tells)."""
        key = (skip, trail)
        got = self._kept.get(key)
        if got is None:
            got = self.whole.copy()
            if skip:
                ids = np.fromiter((i for i in skip if 0 <= i < got.shape[0]), np.int64)
                got[ids] = False
            if trail:
                got &= ~self._ending_in(trail)
            self._kept[key] = got
        return got

    def trail_splits(self, skip: frozenset[int], trail: str) -> dict[int, tuple[str, str]]:
        """The tokens :meth:`plain` leaves out only for how they end: whole, not left out,
        ending in a ``trail`` character; each with its text before its trailing run of
        those characters and the run (what an idle trim emits, and what it holds)."""
        key = (skip, trail)
        got = self._splits.get(key)
        if got is None:
            strings = self.strings()
            got = {}
            for i in np.flatnonzero(self.whole & self._ending_in(trail)).tolist():
                if i not in skip:
                    text: str = strings[i]
                    kept = text.rstrip(trail)
                    got[i] = (kept, text[len(kept) :])
            self._splits[key] = got
        return got

    def _ending_in(self, chars: str) -> np.ndarray[Any, np.dtype[np.bool_]]:
        got = self._ends_in.get(chars)
        if got is None:
            last = [c.encode("utf-8") for c in chars]
            got = np.fromiter(
                (any(b.endswith(s) for s in last) for b in self._token_bytes),
                np.bool_,
                len(self._token_bytes),
            )
            self._ends_in[chars] = got
        return got


class PlainTables:
    """Numbered plain-token masks (:meth:`TokenText.plain`), one per tokenizer table and
    channel state ``(skip, trail)``, for the paths that write plain rows batch-wide (the
    SSE output path, :class:`~reasonspan.runtime.batch.text.BatchText`): a slot keeps the
    number of each channel's mask, a step gathers ``stacked()[numbers, tokens]`` in one
    numpy call, and a scalar loop indexes :attr:`as_bytes`. Number 0 is no mask (nothing
    plain), the number of a channel that is not plain now."""

    __slots__ = ("_index", "_stack", "_width", "as_bytes", "masks")

    def __init__(self) -> None:
        self.masks: list[np.ndarray[Any, np.dtype[np.bool_]]] = [np.zeros(0, np.bool_)]
        self.as_bytes: list[bytes] = [b""]
        """``masks`` as bytes (one byte per token): a tenth of the cost of indexing an
        array with a Python int."""
        self._index: dict[tuple[int, frozenset[int], str], int] = {}
        self._stack: np.ndarray[Any, np.dtype[np.bool_]] | None = None
        self._width = 0
        """The largest vocabulary admitted: the stack is at least this wide, so every step
        token indexes it (row 0, all False, also for a token past the masks made so
        far)."""

    def widen(self, vocab: int) -> None:
        """A request of a vocabulary of ``vocab`` tokens is admitted."""
        if vocab > self._width:
            self._width = vocab
            self._stack = None

    def number(self, table: TokenText, skip: frozenset[int], trail: str) -> int:
        """The number of ``table.plain(skip, trail)``, made on first use."""
        key = (id(table), skip, trail)
        got = self._index.get(key)
        if got is None:
            got = len(self.masks)
            plain = table.plain(skip, trail)
            self.masks.append(plain)
            self.as_bytes.append(plain.tobytes())
            self._index[key] = got
            self._stack = None
        return got

    def stacked(self) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """Every mask as a row of one 2-D array (rebuilt when a mask was added)."""
        stack = self._stack
        if stack is None:
            width = max(self._width, *(m.shape[0] for m in self.masks))
            stack = np.zeros((len(self.masks), width), np.bool_)
            for i, m in enumerate(self.masks):
                stack[i, : m.shape[0]] = m
            self._stack = stack
        return stack
