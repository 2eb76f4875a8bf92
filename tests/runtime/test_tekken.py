"""Mistral's tekken.json read as the equivalent tokenizer.json (``tokenizer/tekken.py``).

The equivalence is tiktoken's BPE: a piece that is a token is that token; otherwise its
bytes merge, pair by pair, always the adjacent pair whose join has the lowest rank.
:func:`tiktoken_bpe` below is that rule written out plainly, the reference here; the
vLLM environment also checks mistral_common's own encoder on Mistral's real tekken files
(``tests/integrations/test_vllm_tekken.py``; mistral_common pins numpy below the version
this environment runs, so it is not a test dependency here).

The vocabulary here is trained in the test (byte-pair counts on a fixed text, the way a
tekken vocabulary's ranks come about: the 256 bytes first, then each merge in the order
it was learned), and the file written in tekken's layout: base64 ``token_bytes``, a
``config`` with the pattern and the sizes, a block of special tokens before the vocabulary.
The special tokens are Mistral's control tokens as a v13 tekken file lists them
(``[THINK]``, ``[/THINK]``, ``[TOOL_CALLS]``, ``[ARGS]``; ranks as placed here: the reader
takes them from the file), and a file before v7 lists none (mistral_common's fixed twenty).
"""

from __future__ import annotations

import base64
import itertools
import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.batch.grammar import compile_grammar
from reasonspan.tokenizer.tekken import OLD_SPECIAL_TOKENS, is_tekken, tekken_as_tokenizer_json

PATTERN = r"[A-Za-z]+|[0-9]| ?[^A-Za-z0-9\s]+|\s+"
"""A split both the tokenizers library's regex engine and Python's read alike (tekken's own
uses Unicode classes Python's ``re`` lacks; the vLLM environment runs a real one)."""

CORPUS = (
    "The model thinks first, then answers. Thinking: the answer is 42, or 4+2=6? "
    "def f(x):\n    return x * 2  # doubled\n\nThe end. <think>then</think> "
    "Tokyo 東京, naïve café 🙂. 1234567890 The the THE that this those."
) * 3
SPECIALS = [
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[THINK]",
    "[/THINK]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
]
BLOCK = 16  # the special block's size: ids 0..15, fillers after the named ones


def _pieces(text: str) -> list[bytes]:
    return [m.group().encode() for m in re.finditer(PATTERN, text)]


def train(text: str, merges: int) -> list[bytes]:
    """Byte-pair ranks learned from ``text``: the 256 bytes, then each new token in the
    order its pair was merged (most frequent pair first, ties by the pair's bytes)."""
    ranks = [bytes([b]) for b in range(256)]
    words = Counter(tuple(bytes([b]) for b in piece) for piece in _pieces(text))
    for _ in range(merges):
        pairs: Counter[tuple[bytes, bytes]] = Counter()
        for word, n in words.items():
            for a, b in itertools.pairwise(word):
                pairs[a, b] += n
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        ranks.append(a + b)
        merged: Counter[tuple[bytes, ...]] = Counter()
        for word, n in words.items():
            out: list[bytes] = []
            i = 0
            while i < len(word):
                if i + 1 < len(word) and word[i] == a and word[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += n
        words = merged
    return ranks


def tangled(seed: int, count: int) -> list[bytes]:
    """A vocabulary whose merges conflict everywhere: the 256 bytes, then ``count`` tokens
    over four letters, each the join of two earlier ones drawn at random, in the order
    drawn. Which pair of a word merges first then depends on the ranks alone, so a wrong
    order of merges shows at once."""
    rng = random.Random(seed)
    ranks = [bytes([b]) for b in range(256)]
    pool = [b"a", b"b", b"c", b"d"]
    while len(ranks) < 256 + count:
        piece = rng.choice(pool) + rng.choice(pool)
        if piece not in pool and len(piece) <= 6:
            pool.append(piece)
            ranks.append(piece)
    return ranks


RANKS = train(CORPUS, 120)
TANGLED = tangled(0, 150)


def tiktoken_bpe(piece: bytes, ranks: list[bytes] = RANKS) -> list[int]:
    """tiktoken's rule for one piece (ranks, without the special block's offset)."""
    rank_of = {p: r for r, p in enumerate(ranks)}
    if piece in rank_of:
        return [rank_of[piece]]
    parts = [bytes([b]) for b in piece]
    while True:
        best = None
        for i in range(len(parts) - 1):
            r = rank_of.get(parts[i] + parts[i + 1])
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            return [rank_of[p] for p in parts]
        i = best[1]
        parts[i : i + 2] = [parts[i] + parts[i + 1]]


def reference(text: str, ranks: list[bytes] = RANKS) -> list[int]:
    return [r + BLOCK for piece in _pieces(text) for r in tiktoken_bpe(piece, ranks)]


def tekken(
    version: str = "v13", specials: list[str] | None = SPECIALS, ranks: list[bytes] = RANKS
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "config": {
            "pattern": PATTERN,
            "num_vocab_tokens": len(ranks),
            "default_vocab_size": len(ranks) + BLOCK,
            "default_num_special_tokens": BLOCK,
            "version": version,
        },
        "vocab": [
            {"rank": r, "token_bytes": base64.b64encode(p).decode(), "token_str": None}
            for r, p in enumerate(ranks)
        ],
    }
    if specials is not None:
        data["special_tokens"] = [
            {"rank": i, "token_str": s, "is_control": True} for i, s in enumerate(specials)
        ]
    return data


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder whose only tokenizer file is a tekken.json (as Mistral ships them)."""
    path = tmp_path_factory.mktemp("magistral")
    (path / "tekken.json").write_text(json.dumps(tekken()))
    return path


@pytest.fixture(scope="module")
def tok(folder: Path) -> reasonspan.LoadedTokenizer:
    return reasonspan.load_tokenizer_sync(folder)


def test_the_trained_vocabulary_has_merges_of_several_bytes() -> None:
    assert len(RANKS) > 256 + 60  # (training stops when every word is one token)
    assert any(len(p) >= 4 for p in RANKS[256:]), "the test would not exercise merges"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="Thequickbrownfoxisthe THE 42 0189\n\t.,!?<>/ éü東京🙂", max_size=80))
def test_encoding_is_tiktokens(tok: reasonspan.LoadedTokenizer, text: str) -> None:
    assume(not any(name in text for name in SPECIALS))  # (those are read as the token)
    assert tok.encode(text) == reference(text)


@pytest.fixture(scope="module")
def tangled_tok(tmp_path_factory: pytest.TempPathFactory) -> reasonspan.LoadedTokenizer:
    path = tmp_path_factory.mktemp("tangled") / "tekken.json"
    path.write_text(json.dumps(tekken(ranks=TANGLED)))
    return reasonspan.load_tokenizer_sync(path)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcd", min_size=2, max_size=24))
def test_conflicting_merges_follow_the_ranks(
    tangled_tok: reasonspan.LoadedTokenizer, word: str
) -> None:
    assert tangled_tok.encode(word) == reference(word, TANGLED)


def test_encoding_of_the_corpus_and_its_pieces(tok: reasonspan.LoadedTokenizer) -> None:
    for text in (CORPUS, *CORPUS.split(" ")):
        assert tok.encode(text) == reference(text), text


def test_ids_bytes_and_text(tok: reasonspan.LoadedTokenizer) -> None:
    """A regular token's id is its rank after the special block; its bytes are the file's;
    the special block's ids are the file's ranks, fillers ``<SPECIAL_{id}>`` after them."""
    assert tok.vocab_size == len(RANKS) + BLOCK
    for rank, piece in enumerate(RANKS):
        assert tok.token_bytes[rank + BLOCK] == piece
    for i, name in enumerate(SPECIALS):
        assert tok.single_token_id(name) == i
        assert i in tok.special_ids
    assert tok.single_token_id(f"<SPECIAL_{BLOCK - 1}>") == BLOCK - 1
    assert tok.byte_level
    text = "naïve café 🙂 東京\n\tend"
    assert tok.decode(tok.encode(text)) == text


def test_a_special_token_written_in_text_is_that_token(tok: reasonspan.LoadedTokenizer) -> None:
    """As every tokenizer.json reads its added tokens (mistral_common's encoder would spell
    them in bytes; prompts and re-encoded outputs carry them as tokens)."""
    ids = tok.encode("a[THINK]b[/THINK]c")
    assert ids == [*reference("a"), 7, *reference("b"), 8, *reference("c")]


def test_the_mistral_family_reads_a_tekken_tokenizer(tok: reasonspan.LoadedTokenizer) -> None:
    parser = reasonspan.create_parser_sync("mistral", tok)
    out = "[THINK]The answer is 42.[/THINK]The answer: 42"
    got = parser.parse(tok.encode(out))
    assert (got.reasoning, got.content) == ("The answer is 42.", "The answer: 42")


def test_a_file_before_v7_has_the_old_twenty_special_tokens(tmp_path: Path) -> None:
    path = tmp_path / "tekken.json"
    data = tekken("v3", None)
    data["config"]["default_num_special_tokens"] = 24
    data["config"]["default_vocab_size"] = len(RANKS) + 24
    path.write_text(json.dumps(data))
    old = reasonspan.load_tokenizer_sync(path)
    assert [old.single_token_id(s) for s in OLD_SPECIAL_TOKENS] == list(range(20))
    assert old.single_token_id("<SPECIAL_23>") == 23
    assert old.encode("The") == [r + 24 for r in tiktoken_bpe(b"The")]


def test_a_tokenizer_json_is_not_taken_for_tekken() -> None:
    assert is_tekken(tekken())
    assert not is_tekken({"model": {"type": "BPE"}, "config": {"pattern": ""}})
    assert not is_tekken([])


def _broken(change: str) -> dict[str, Any]:
    data = tekken()
    if change == "missing rank":
        data["vocab"][300]["rank"] = len(RANKS) + 5  # (past the vocabulary: rank 300 is gone)
    elif change == "not base64":
        data["vocab"][5]["token_bytes"] = "not base64!"
    elif change == "special out of range":
        data["special_tokens"].append({"rank": BLOCK, "token_str": "[EXTRA]"})
    elif change == "special twice":
        data["special_tokens"].append({"rank": 12, "token_str": "[THINK]"})
    elif change == "spells a special":
        data["vocab"][300]["token_bytes"] = base64.b64encode(b"[THINK]").decode()
    elif change == "bytes twice":
        data["vocab"][300]["token_bytes"] = data["vocab"][301]["token_bytes"]
    elif change == "no room":
        data["config"]["default_vocab_size"] = BLOCK
    elif change == "huge block":
        data["config"]["default_num_special_tokens"] = 10**9
        data["config"]["default_vocab_size"] = 10**9 + 10
    elif change == "huge vocabulary":
        data["config"]["default_vocab_size"] = 10**12
    elif change == "huge token":
        data["vocab"][300]["token_bytes"] = base64.b64encode(b"x" * 5000).decode()
    elif change == "bad count":
        data["config"]["default_num_special_tokens"] = "16"
    return data


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ("missing rank", f"lacks 1 of ranks 0..{len(RANKS) - 1} (first 300)"),
        ("not base64", "rank 5: token_bytes is not base64"),
        ("special out of range", "'[EXTRA]' has rank 16, outside 0..15"),
        ("special twice", "special_tokens holds a string twice"),
        ("spells a special", "rank 300 spells the special token '[THINK]'"),
        ("bytes twice", "holds the same bytes twice"),
        ("no room", "leaves none after 16 special ones"),
        ("huge block", "asks for 1,000,000,000 special tokens, over 65,536"),
        ("huge vocabulary", "needs more than the"),
        ("huge token", "rank 300 is 5,000 bytes long, over 1,024"),
        ("bad count", "default_num_special_tokens must be a count, not '16'"),
    ],
)
def test_a_broken_tekken_file_is_refused_naming_what(
    tmp_path: Path, change: str, says: str
) -> None:
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps(_broken(change)))
    with pytest.raises(reasonspan.TokenizerLoadError, match=re.escape(says)) as err:
        reasonspan.load_tokenizer_sync(tmp_path)
    assert str(path) in str(err.value)


def test_a_folder_without_either_file_names_both(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(reasonspan.TokenizerLoadError, match=r"no tokenizer\.json or tekken\.json"):
        reasonspan.load_tokenizer_sync(tmp_path)


def test_the_conversion_keeps_the_file_s_order_of_merges() -> None:
    """Merges are ordered by the rank of the token they make (tiktoken's priority)."""
    data = tekken_as_tokenizer_json(tekken(), "t")
    vocab = data["model"]["vocab"]
    made = [vocab[a + b] for a, b in data["model"]["merges"]]
    assert made == sorted(made)
    assert data["model"]["ignore_merges"] is True


def test_the_grammar_engine_reads_a_tekken_tokenizer(tok: reasonspan.LoadedTokenizer) -> None:
    """llguidance builds its tokenizer from the converted tokenizer.json (``raw_json``):
    a JSON schema compiles and takes the answer's tokens, and nothing else after it."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}
    grammar = compile_grammar(fmt, tok)
    assert grammar is not None
    assert grammar.consume(tok.encode('{"n": 42}')) == -1
    assert grammar.accepting
    other = compile_grammar(fmt, tok)
    assert other is not None
    assert other.consume(tok.encode('{"m": 4}')) == 2  # ('{', '"', then the wrong key)
