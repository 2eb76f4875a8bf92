"""Loading a tokenizer: a tokenizer.json file, or a model folder, or an in-memory Tokenizer.

File reading and JSON parsing run in a worker thread (anyio), so an async server can load
a model's tokenizer without stalling its event loop.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from functools import partial
from pathlib import Path
from typing import Any

import anyio.to_thread
from tokenizers import Tokenizer

from reasonspan.tokenizer.errors import TokenizerLoadError
from reasonspan.tokenizer.files import (
    MAX_TOKENIZER_BYTES,
    check_nesting,
    parse_json,
    read_json_file,
    read_text_file,
    read_tokenizer_file,
)
from reasonspan.tokenizer.tekken import is_tekken, tekken_as_tokenizer_json


class LoadedTokenizer:
    """A tokenizers.Tokenizer plus what reasonspan needs to know about where it came from.

    Compiled marker tables are cached here, keyed by family and switches, so creating a
    parser per request costs a dict lookup after the first one.

    The byte table (:attr:`token_bytes`) is read from the tokenizer's JSON: ``tokenizer_json``
    (the loader's parse of the file: the table is built at once), else ``raw_json`` (kept
    until the table is first needed), else the tokenizer's own serialization. The JSON is
    not kept once the table is built.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        source: str,
        *,
        raw_json: str | bytes | None = None,
        tokenizer_json: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
        chat_template: str | None = None,
        model_config: dict[str, Any] | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.source = source
        self.config: dict[str, Any] = config or {}
        self.model_config: dict[str, Any] = model_config or {}
        template = chat_template if chat_template is not None else self.config.get("chat_template")
        self.chat_template: str | None = template if isinstance(template, str) else None
        # The JSON a byte table is built from, held only until it is built (then dropped:
        # 7-19 MB a tokenizer for nothing). As UTF-8 bytes, not a str: a str of a byte-level
        # vocabulary's JSON takes 2 bytes a character.
        self._raw = raw_json.encode("utf-8") if isinstance(raw_json, str) else raw_json
        vocab = tokenizer.get_vocab(with_added_tokens=True)
        self.vocab_size: int = (max(vocab.values()) + 1) if vocab else 0
        _check_id_range(vocab, source)
        self._token_bytes: list[bytes] | None = None
        self._byte_level = False
        self._special_ids: frozenset[int] = frozenset()
        self._lock = threading.Lock()
        self.cache: dict[object, object] = {}
        if tokenizer_json is not None:
            self._learn(tokenizer_json)

    def __repr__(self) -> str:
        return f"LoadedTokenizer(source={self.source!r}, vocab_size={self.vocab_size})"

    def vocabulary_only(self) -> LoadedTokenizer:
        """The same vocabulary without the folder's files (no chat template, no configs),
        sharing this one's byte table: parsers built on it use their family's documented
        start state instead of the template's (what a bare ``tokenizer.json`` gives)."""
        out = LoadedTokenizer(self.tokenizer, self.source)
        out._token_bytes = self.token_bytes
        out._byte_level = self._byte_level
        out._special_ids = self._special_ids
        return out

    @property
    def token_bytes(self) -> list[bytes]:
        """``token_bytes[id]``: the bytes of token ``id`` (built at load from the loader's
        parse, else on first use; then kept)."""
        got = self._token_bytes
        if got is None:
            with self._lock:
                got = self._token_bytes
                if got is None:
                    raw = self._raw if self._raw is not None else self.tokenizer.to_str()
                    data = json.loads(raw)
                    got = self._learn(data if isinstance(data, dict) else {})
        return got

    def _learn(self, tokenizer_json: dict[str, Any]) -> list[bytes]:
        """The byte table, the decoder's kind and the special ids, read from the tokenizer's
        JSON; the JSON is not kept."""
        from reasonspan.tokenizer.token_bytes import build_token_bytes

        table = build_token_bytes(tokenizer_json, self.vocab_size)
        decoder = tokenizer_json.get("decoder")
        self._byte_level = isinstance(decoder, dict) and decoder.get("type") == "ByteLevel"
        self._special_ids = frozenset(
            int(a["id"]) for a in tokenizer_json.get("added_tokens") or [] if a.get("special")
        )
        self._raw = None
        self._token_bytes = table  # last: a reader without the lock finds the rest set
        return table

    @property
    def raw_json(self) -> str:
        """The tokenizer's JSON, as the tokenizers library writes it (for a grammar engine
        that reads tokenizer.json: the same tokenizer as the file, not kept as its text)."""
        return str(self.tokenizer.to_str())

    @property
    def byte_level(self) -> bool:
        """True when decoding is exactly "concatenate each token's bytes, then UTF-8" (a
        plain ByteLevel decoder): text can then be produced from ``token_bytes`` alone."""
        _ = self.token_bytes
        return self._byte_level

    @property
    def special_ids(self) -> frozenset[int]:
        """Ids of added tokens marked special (skipped with ``skip_special_tokens``)."""
        _ = self.token_bytes
        return self._special_ids

    def single_token_id(self, text: str) -> int | None:
        """The id of ``text`` if it is exactly one token of this vocabulary, else None."""
        tid = self.tokenizer.token_to_id(text)
        if tid is not None:
            return int(tid)
        ids = self.tokenizer.encode(text, add_special_tokens=False).ids
        if len(ids) == 1 and self.token_bytes[ids[0]] == text.encode("utf-8"):
            return int(ids[0])
        return None

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` with special tokens recognised and none added."""
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: list[int], *, skip_special_tokens: bool = False) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens))


def _check_id_range(vocab: dict[str, int], source: str) -> None:
    """Refuse a vocabulary whose largest id is far beyond its number of entries: tables are
    indexed by id (``token_bytes``, the markers' lookup tables), so one id of ``2**31`` in
    a 150k vocabulary would make them allocate tens of GB."""
    if not vocab:
        return
    limit = max(2 * len(vocab), len(vocab) + MAX_ID_GAP)
    top = max(vocab.values())
    if top >= limit:
        piece = next(p for p, i in vocab.items() if i == top)
        raise TokenizerLoadError(
            source,
            f"token {piece!r} has id {top:,}, far beyond the vocabulary's {len(vocab):,} "
            f"entries (ids must stay below {limit:,})",
        )


def _check_added_tokens(parsed: dict[str, Any], source: str) -> None:
    """Refuse an added token whose id another token already has with other content. The
    file then maps one id to two tokens: the per-token byte table (text, byte-matched
    markers) reads the added token there, so every time the model writes the vocabulary's
    token it would read as the added one (``<think>`` on the id of "The": every "The" a
    ``<think>``), while the tokenizers library gives the added token an id of its own. The
    same token listed in both places (a special token in the vocabulary and in added_tokens,
    as DeepSeek's files have it) is fine, and so is a vocabulary piece that stands for the
    same bytes (byte-level ``ĊĊ`` and an added ``"\n\n"``)."""
    added = parsed.get("added_tokens")
    if not isinstance(added, list) or not added:
        return
    by_id: dict[int, str] = {}
    for entry in added:
        if not isinstance(entry, dict):
            continue
        tid, content = entry.get("id"), entry.get("content")
        if not isinstance(tid, int) or not isinstance(content, str):
            continue
        first = by_id.setdefault(tid, content)
        if first != content:
            raise TokenizerLoadError(
                source,
                f"added tokens {first!r} and {content!r} both have id {tid:,}: each id is "
                "one token",
            )
    model = parsed.get("model")
    vocab = model.get("vocab") if isinstance(model, dict) else None
    if isinstance(vocab, dict):
        pieces = [(p, i) for p, i in vocab.items() if i in by_id and p != by_id[i]]
    elif isinstance(vocab, list):  # Unigram: [[piece, score], ...], the id is the index
        pieces = [
            (entry[0], i)
            for i in by_id
            if 0 <= i < len(vocab)
            and isinstance(entry := vocab[i], list)
            and entry
            and entry[0] != by_id[i]
        ]
    else:
        return
    if not pieces:
        return
    from reasonspan.tokenizer.token_bytes import piece_converter

    convert = piece_converter(parsed)
    for piece, tid in pieces:
        content = by_id[tid]
        raw = convert(str(piece))
        if raw == content.encode("utf-8"):
            continue
        shown = raw.decode("utf-8", "replace")
        raise TokenizerLoadError(
            source,
            f"added token {content!r} has id {tid:,}, which model.vocab gives to {piece!r}: "
            f"one id for two tokens (every {shown!r} the model writes would read as "
            f"{content!r}); an added token needs an id of its own",
        )


MAX_ID_GAP = 65536
"""How far a vocabulary's largest id may run past its number of entries (gaps of unused ids
are normal; see :func:`_check_id_range`): the larger of twice the entries and this."""


def load_tokenizer_sync(
    path: str | Path, *, max_bytes: int = MAX_TOKENIZER_BYTES
) -> LoadedTokenizer:
    """Blocking form of :func:`load_tokenizer`."""
    p = Path(path)
    if not p.exists():
        raise TokenizerLoadError(str(p), "no such file or folder")
    folder = p if p.is_dir() else p.parent
    if p.is_dir():
        for name in ("tokenizer.json", "tokenizer.json.zip", "tekken.json"):
            if (p / name).exists():  # a non-regular one is refused when read
                file = p / name
                break
        else:
            found = sorted(x.name for x in p.iterdir())[:20]
            raise TokenizerLoadError(
                str(p),
                "the folder has no tokenizer.json or tekken.json (it holds: "
                f"{', '.join(found) or 'nothing'})",
            )
    else:
        file = p
    text = read_tokenizer_file(file, max_bytes)
    parsed = parse_json(text, file, "not a valid tokenizer.json")
    if is_tekken(parsed):  # Mistral's own format: read as the same tokenizer.json
        parsed = tekken_as_tokenizer_json(parsed, str(file))
        text = json.dumps(parsed)
    if not isinstance(parsed, dict) or not isinstance(parsed.get("model"), dict):
        raise TokenizerLoadError(str(file), "not a tokenizer.json: it has no 'model' section")
    # The vocabulary and merges, most of the file, are flat (the tokenizers library reads
    # them as a map and lists of strings): the walk skips them, the rest is small.
    check_nesting({**parsed, "model": {**parsed["model"], "vocab": [], "merges": []}}, file)
    try:
        tok = Tokenizer.from_str(text)
    except Exception as exc:  # tokenizers raises plain Exception subclasses
        raise TokenizerLoadError(str(file), f"tokenizers could not read it: {exc}") from exc
    _check_added_tokens(parsed, str(file))
    config = read_json_file(folder / "tokenizer_config.json")
    template = read_text_file(folder / "chat_template.jinja")
    model_config = read_json_file(folder / "config.json")
    return LoadedTokenizer(
        tok,
        str(file),
        tokenizer_json=parsed,
        config=config,
        chat_template=template,
        model_config=model_config,
    )


async def load_tokenizer(
    path: str | Path | Tokenizer | LoadedTokenizer, *, max_bytes: int = MAX_TOKENIZER_BYTES
) -> LoadedTokenizer:
    """Load a tokenizer.json (or .zip), or a model folder holding one.

    A folder's tokenizer_config.json (chat template, special tokens), chat_template.jinja
    and config.json are read too, for prompt rules and auto-detection. Files over
    ``max_bytes`` (tokenizer.json, uncompressed) or 16 MiB (the others) are refused before
    they are read (and reading stops at the cap if the size lied); so is anything but a
    regular file (a FIFO, a device), and a vocabulary whose ids run far beyond its size.
    """
    if isinstance(path, LoadedTokenizer):
        return path
    if isinstance(path, Tokenizer):
        return LoadedTokenizer(path, "<in-memory tokenizers.Tokenizer>")
    if not isinstance(path, (str, Path)):
        raise TypeError(
            f"load_tokenizer() takes a path, a tokenizers.Tokenizer or a LoadedTokenizer, "
            f"not {type(path).__name__}"
        )
    return await anyio.to_thread.run_sync(partial(load_tokenizer_sync, path, max_bytes=max_bytes))


RAW_CACHE_SIZE = 4
"""How many in-memory ``tokenizers.Tokenizer`` objects keep their :class:`LoadedTokenizer`
(and so their compiled machines) between calls. A LoadedTokenizer refers to its Tokenizer,
so a weak cache could never drop one: the cache is a small LRU instead, which bounds what
it retains. A server should call ``load_tokenizer`` once and pass the LoadedTokenizer."""

_raw_cache: OrderedDict[int, tuple[Tokenizer, LoadedTokenizer]] = OrderedDict()
_raw_lock = threading.Lock()


def as_loaded(tokenizer: LoadedTokenizer | Tokenizer) -> LoadedTokenizer:
    """Accept either form where a tokenizer is passed to a parser. The same in-memory
    Tokenizer gives the same LoadedTokenizer (for the last few of them), so creating a
    parser per request from one does not rebuild its tables each time."""
    if isinstance(tokenizer, LoadedTokenizer):
        return tokenizer
    if isinstance(tokenizer, Tokenizer):
        key = id(tokenizer)
        with _raw_lock:
            hit = _raw_cache.get(key)
            if hit is not None and hit[0] is tokenizer:
                _raw_cache.move_to_end(key)
                return hit[1]
            loaded = LoadedTokenizer(tokenizer, "<in-memory tokenizers.Tokenizer>")
            _raw_cache[key] = (tokenizer, loaded)
            while len(_raw_cache) > RAW_CACHE_SIZE:
                _raw_cache.popitem(last=False)
            return loaded
    raise TypeError(
        f"expected a LoadedTokenizer (from reasonspan.load_tokenizer) or a tokenizers.Tokenizer, "
        f"not {type(tokenizer).__name__}"
    )
