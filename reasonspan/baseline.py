"""The text-based approach most servers use today, kept here as the benchmark's baseline.

Incremental detokenization (tokenizers' ``DecodeStream``) plus a string search for the
markers, holding back a text suffix that could still become a marker. It is a fair,
efficient version of that approach, not a straw man: it searches only new text.
"""

from __future__ import annotations

from tokenizers import Tokenizer
from tokenizers.decoders import DecodeStream


class TextBaseline:
    """Splits one request's stream into reasoning/content text by searching decoded text."""

    __slots__ = ("_buf", "_dec", "_end", "_start", "_tok", "in_reasoning")

    def __init__(
        self,
        tokenizer: Tokenizer,
        start: str = "<think>",
        end: str = "</think>",
        *,
        in_reasoning: bool = True,
    ) -> None:
        self._tok = tokenizer
        self._dec = DecodeStream(skip_special_tokens=False)
        self._start = start
        self._end = end
        self._buf = ""
        self.in_reasoning = in_reasoning

    def feed(self, token_ids: list[int]) -> tuple[str, str]:
        tok = self._tok
        dec = self._dec
        for t in token_ids:
            s = dec.step(tok, t)
            if s:
                self._buf += s
        reasoning: list[str] = []
        content: list[str] = []
        buf = self._buf
        while buf:
            marker = self._end if self.in_reasoning else self._start
            out = reasoning if self.in_reasoning else content
            i = buf.find(marker)
            if i >= 0:
                out.append(buf[:i])
                buf = buf[i + len(marker) :]
                self.in_reasoning = not self.in_reasoning
                continue
            keep = 0
            for k in range(min(len(marker) - 1, len(buf)), 0, -1):
                if buf.endswith(marker[:k]):
                    keep = k
                    break
            out.append(buf[: len(buf) - keep])
            buf = buf[len(buf) - keep :]
            break
        self._buf = buf
        return "".join(reasoning), "".join(content)
