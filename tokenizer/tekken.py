"""Mistral's tekken.json read as the equivalent tokenizer.json.

Mistral ships its newer models' tokenizer as ``tekken.json`` (mistral_common's
``Tekkenizer``), not as a Hugging Face tokenizer.json: tiktoken's byte-level BPE, where a
token's rank is its merge priority, behind a block of special tokens. The file holds
``config`` (``pattern``: the pre-tokenizer's regex; ``default_vocab_size``;
``default_num_special_tokens``, the block's size; ``version``), ``vocab`` (``rank``,
``token_bytes`` in base64) and, from v7 on, ``special_tokens`` (``rank``, ``token_str``).
Token id = rank + the block's size for a regular token; a special token's id is its rank.
Files before v7 list no special tokens and use mistral_common's fixed first twenty
(:data:`OLD_SPECIAL_TOKENS`); the rest of the block is ``<SPECIAL_{id}>`` fillers.

The same vocabulary as a tokenizer.json: a byte-level BPE whose merges are ordered by the
rank of the token each makes (tiktoken merges the pair whose join ranks lowest first),
``ignore_merges`` (tiktoken takes a piece that is a token whole), the file's regex as an
isolating split, and the special tokens as added tokens (in the model's vocabulary too,
so they keep their ids). mistral_common's own encoder gives the same ids for any text
without special-token strings (``tests/integrations/test_vllm_tekken.py``, on Mistral's
real files; ``tests/runtime/test_tekken.py`` against tiktoken's rule); unlike it, a
special token written in the text is read as that token, as every tokenizer.json reads its
added tokens.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from reasonspan.tokenizer.errors import TokenizerLoadError
from reasonspan.tokenizer.token_bytes import byte_level_encoder

OLD_SPECIAL_TOKENS = (
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)
"""The special tokens of a tekken file before v7 (which lists none), ranks 0 to 19:
mistral_common's ``Tekkenizer.DEPRECATED_SPECIAL_TOKENS``."""


MAX_SPECIAL_TOKENS = 65536
"""The largest special block read (Mistral's files have 1,000)."""

MAX_TOKEN_BYTES = 1024
"""The longest token read (Mistral's files: 78 bytes). Finding a token's merges tries each
of its cuts, so this bounds the work a file can ask for."""


def is_tekken(data: object) -> bool:
    """A parsed JSON file in the tekken layout (a ``config`` with a pattern, a ``vocab``
    list), not a tokenizer.json (which has a ``model``)."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("config"), dict)
        and "pattern" in data["config"]
        and isinstance(data.get("vocab"), list)
    )


def _int(config: dict[str, Any], key: str, source: str) -> int:
    value = config.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TokenizerLoadError(source, f"tekken config.{key} must be a count, not {value!r}")
    return value


def _specials(data: dict[str, Any], count: int, source: str) -> list[str]:
    """The special block's strings by id: the file's list (v7 on) or the old twenty, then
    fillers."""
    listed = data.get("special_tokens")
    block = [f"<SPECIAL_{i}>" for i in range(count)]
    if listed is None:
        named = list(enumerate(OLD_SPECIAL_TOKENS))
    elif isinstance(listed, list):
        named = []
        for item in listed:
            rank = item.get("rank") if isinstance(item, dict) else None
            text = item.get("token_str") if isinstance(item, dict) else None
            if not isinstance(rank, int) or not isinstance(text, str):
                raise TokenizerLoadError(
                    source, f"tekken special_tokens entry {item!r} needs a rank and a token_str"
                )
            named.append((rank, text))
    else:
        raise TokenizerLoadError(source, "tekken special_tokens must be a list")
    for rank, text in named:
        if not 0 <= rank < count:
            raise TokenizerLoadError(
                source, f"tekken special token {text!r} has rank {rank}, outside 0..{count - 1}"
            )
        block[rank] = text
    if len(set(block)) != count:
        raise TokenizerLoadError(source, "tekken special_tokens holds a string twice")
    return block


def _ranks(data: dict[str, Any], inner: int, source: str) -> list[bytes]:
    """The regular tokens' bytes by rank, the first ``inner`` of them."""
    by_rank: list[bytes | None] = [None] * inner
    for item in data["vocab"]:
        rank = item.get("rank") if isinstance(item, dict) else None
        if not isinstance(rank, int) or rank < 0:
            raise TokenizerLoadError(source, f"tekken vocab entry {item!r} has no rank")
        if rank >= inner:
            continue  # (past the vocabulary the config keeps)
        try:
            piece = base64.b64decode(item["token_bytes"], validate=True)
        except (KeyError, TypeError, binascii.Error) as exc:
            raise TokenizerLoadError(
                source, f"tekken vocab rank {rank}: token_bytes is not base64 ({exc})"
            ) from exc
        if len(piece) > MAX_TOKEN_BYTES:
            raise TokenizerLoadError(
                source,
                f"tekken vocab rank {rank} is {len(piece):,} bytes long, over {MAX_TOKEN_BYTES:,}",
            )
        by_rank[rank] = piece
    missing = [r for r, b in enumerate(by_rank) if b is None]
    if missing:
        raise TokenizerLoadError(
            source,
            f"tekken vocab lacks {len(missing)} of ranks 0..{inner - 1} (first {missing[0]})",
        )
    return [piece for piece in by_rank if piece is not None]  # (all of them: checked)


def added_token(content: str, tid: int) -> dict[str, Any]:
    """A special token as tokenizer.json's ``added_tokens`` lists it (matched whole in text,
    never normalized). The test fixtures build theirs with it too."""
    return {
        "id": tid,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": True,
    }


def _merges(pieces: list[bytes], source: str) -> list[tuple[int, int, int]]:
    """Every ``(rank, left, right)``: token ``rank`` is tokens ``left`` + ``right``, in
    tiktoken's order of priority (the rank of the token a merge makes)."""
    rank_of = {piece: rank for rank, piece in enumerate(pieces)}
    if len(rank_of) != len(pieces):
        raise TokenizerLoadError(source, "tekken vocab holds the same bytes twice")
    merges: list[tuple[int, int, int]] = []
    for rank, piece in enumerate(pieces):
        for cut in range(1, len(piece)):
            left = rank_of.get(piece[:cut])
            if left is not None:
                right = rank_of.get(piece[cut:])
                if right is not None:
                    merges.append((rank, left, right))
    merges.sort()
    return merges


def tekken_as_tokenizer_json(data: dict[str, Any], source: str) -> dict[str, Any]:
    """The tokenizer.json of a parsed tekken.json (``source`` names it in errors)."""
    config = data["config"]
    pattern = config["pattern"]
    if not isinstance(pattern, str):
        raise TokenizerLoadError(source, "tekken config.pattern must be a string")
    specials = _int(config, "default_num_special_tokens", source)
    size = _int(config, "default_vocab_size", source)
    if size <= specials:
        raise TokenizerLoadError(
            source, f"tekken vocabulary of {size} ids leaves none after {specials} special ones"
        )
    # Both counts size tables before a vocab entry is read: bounded by what the file holds.
    if specials > MAX_SPECIAL_TOKENS:
        raise TokenizerLoadError(
            source, f"tekken asks for {specials:,} special tokens, over {MAX_SPECIAL_TOKENS:,}"
        )
    if size - specials > len(data["vocab"]):
        raise TokenizerLoadError(
            source,
            f"tekken vocabulary of {size:,} ids after {specials:,} special ones needs more "
            f"than the {len(data['vocab']):,} vocab entries the file holds",
        )
    block = _specials(data, specials, source)
    pieces = _ranks(data, size - specials, source)
    merges = _merges(pieces, source)
    to_text = byte_level_encoder()
    texts = ["".join([to_text[b] for b in piece]) for piece in pieces]
    # The special block is in the model's vocabulary too: the tokenizers library gives an
    # added token the model's id for its text, and ids of its own to any other.
    vocab = {text: i for i, text in enumerate(block)}
    for rank, text in enumerate(texts):
        if text in vocab:
            raise TokenizerLoadError(
                source, f"tekken vocab rank {rank} spells the special token {text!r}"
            )
        vocab[text] = rank + specials
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added_token(text, i) for i, text in enumerate(block)],
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": pattern},
                    "behavior": "Isolated",
                    "invert": False,
                },
                {
                    "type": "ByteLevel",
                    "add_prefix_space": False,
                    "trim_offsets": True,
                    "use_regex": False,
                },
            ],
        },
        "post_processor": None,
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": False,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": True,
            "vocab": vocab,
            "merges": [[texts[left], texts[right]] for _, left, right in merges],
        },
    }
