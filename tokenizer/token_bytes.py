"""The bytes each token id stands for, built once per tokenizer from tokenizer.json.

Multi-token and text markers are matched on these bytes, so the runtime never calls the
detokenizer. Byte-level BPE (GPT-2 style), SentencePiece-style Metaspace with byte fallback,
and added tokens are understood; anything else falls back to the UTF-8 of the piece.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

_BYTE_FALLBACK = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


@cache
def _byte_level_decoder() -> dict[str, int]:
    """GPT-2's reversible map from bytes to printable unicode characters, inverted."""
    bs = list(range(ord("!"), ord("~") + 1))
    bs += list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = list(bs)
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs, strict=True)}


@cache
def byte_level_encoder() -> tuple[str, ...]:
    """The same map the other way: byte value -> its printable character."""
    out = [""] * 256
    for char, b in _byte_level_decoder().items():
        out[b] = char
    return tuple(out)


def _decoder_types(decoder: Any) -> set[str]:
    if not isinstance(decoder, dict):
        return set()
    kinds = {str(decoder.get("type", ""))}
    for sub in decoder.get("decoders", []) or []:
        kinds |= _decoder_types(sub)
    return kinds


def build_token_bytes(tokenizer_json: dict[str, Any], vocab_size: int) -> list[bytes]:
    """Return ``table[id] -> bytes`` for every id below ``vocab_size`` (b"" for gaps)."""
    table: list[bytes] = [b""] * vocab_size
    model = tokenizer_json.get("model") or {}
    vocab = model.get("vocab") or {}
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        items = [(piece, i) for i, (piece, _score) in enumerate(vocab)]
    else:
        items = list(vocab.items())
    convert = piece_converter(tokenizer_json)
    for piece, i in items:
        if 0 <= i < vocab_size:
            table[i] = convert(piece)
    for added in tokenizer_json.get("added_tokens") or []:
        i = added.get("id")
        if isinstance(i, int) and 0 <= i < vocab_size:
            table[i] = str(added.get("content", "")).encode("utf-8")
    return table


def piece_converter(tokenizer_json: dict[str, Any]) -> Callable[[str], bytes]:
    """The bytes a vocabulary piece of this tokenizer stands for (its decoder's view)."""
    kinds = _decoder_types(tokenizer_json.get("decoder"))
    if "ByteLevel" in kinds:
        inv = _byte_level_decoder()

        def convert(piece: str) -> bytes:
            try:
                return bytes(inv[ch] for ch in piece)
            except KeyError:
                return piece.encode("utf-8")

    else:
        metaspace = "Metaspace" in kinds or "Replace" in kinds
        wordpiece = "WordPiece" in kinds

        def convert(piece: str) -> bytes:
            m = _BYTE_FALLBACK.match(piece)
            if m:
                return bytes([int(m.group(1), 16)])
            if metaspace:
                piece = piece.replace("\u2581", " ")
            if wordpiece and piece.startswith("##"):
                piece = piece[2:]
            return piece.encode("utf-8")

    return convert
