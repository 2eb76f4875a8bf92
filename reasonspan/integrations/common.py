"""What every engine's adapter shares: the names parsers register under, the engine's
tokenizer read as reasonspan's, text encoded back to token ids, and a request's tools as
plain dicts.

Engines hand their parsers a Hugging Face fast tokenizer (or an object of the same
protocol); its ``backend_tokenizer`` is the ``tokenizers.Tokenizer`` reasonspan loads
anyway. Mistral's models are served with mistral_common's tokenizer instead (vLLM's
``--tokenizer-mode mistral``): its tekken.json is read as the same tokenizer.json
(``tokenizer/tekken.py``). Both are cached (per backend, per file), so a parser per request
costs a lookup. Nothing here imports an engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any, TypeVar

from tokenizers import Tokenizer

from reasonspan.runtime import families
from reasonspan.tokenizer.loader import LoadedTokenizer, as_loaded, load_tokenizer_sync

PREFIX = "reasonspan_"

# Families no adapter registers: ``declared`` compiles its format from the model folder's
# tokenizer_config.json, which an engine's tokenizer object does not carry.
SKIPPED = frozenset({"declared"})


def own_name(family: str) -> str:
    """The name a family's parsers register under in any engine: ``reasonspan_<family>``."""
    return PREFIX + family


def class_stem(family: str) -> str:
    """``deepseek_r1`` -> ``DeepseekR1``: the stem of the generated classes' names."""
    return "".join(part[:1].upper() + part[1:] for part in family.split("_"))


class UnsupportedTokenizerError(TypeError):
    """The tokenizer the engine passed has no ``tokenizers`` backend and is not Mistral's
    tekken (a slow tokenizer, a SentencePiece Mistral one, a test's stand-in)."""


def loaded_tokenizer(tokenizer: Any, engine: str = "vLLM") -> LoadedTokenizer:
    """reasonspan's view of an engine's tokenizer (the same vocabulary): a fast tokenizer's
    ``tokenizers`` backend, or the tekken.json behind a Mistral tokenizer (vLLM's
    ``--tokenizer-mode mistral``), read as the same tokenizer.json."""
    if isinstance(tokenizer, LoadedTokenizer):
        return tokenizer
    backend = tokenizer if isinstance(tokenizer, Tokenizer) else None
    if backend is None:
        backend = getattr(tokenizer, "backend_tokenizer", None)
    if isinstance(backend, Tokenizer):
        return as_loaded(backend)
    tekken = _tekkenizer(tokenizer)
    if tekken is None:
        raise UnsupportedTokenizerError(
            f"reasonspan's {engine} parsers need a fast (tokenizers-backed) tokenizer or "
            f"Mistral's tekken, not {type(tokenizer).__name__}"
        )
    try:
        path = tekken.file_path  # (mistral_common raises ValueError when it has none)
    except ValueError as exc:
        raise UnsupportedTokenizerError(
            f"reasonspan's {engine} parsers read a Mistral tokenizer's tekken.json, and this "
            f"one was not loaded from a file ({exc})"
        ) from None
    return _tekken_loaded(str(path))


def _tekkenizer(tokenizer: Any) -> Any | None:
    """mistral_common's ``Tekkenizer`` inside an engine's Mistral tokenizer: vLLM's
    ``MistralTokenizer`` holds it as ``.tokenizer``; mistral_common's own ``MistralTokenizer``
    as ``.instruct_tokenizer.tokenizer``; transformers' ``MistralCommonBackend`` holds the
    latter as ``.tokenizer``. Matched by name: nothing here imports mistral_common."""
    seen = tokenizer
    for _ in range(4):
        if seen is None:
            return None
        if type(seen).__name__ == "Tekkenizer":
            return seen
        inner = getattr(seen, "instruct_tokenizer", None)
        seen = getattr(inner if inner is not None else seen, "tokenizer", None)
    return None


@lru_cache(maxsize=4)
def _tekken_loaded(path: str) -> LoadedTokenizer:
    """The tekken.json at ``path`` loaded once per process (reading and converting
    Mistral's takes about 2 s; an engine makes a parser per request)."""
    return load_tokenizer_sync(path)


def encode(tok: LoadedTokenizer, text: str) -> list[int]:
    """Token ids of text an engine decoded (engines that hand text only).

    Added tokens written in the text (``<think>``) come back as their ids, as the model
    generated them; an output whose text does not round-trip (a marker the model spelled
    in pieces) may split differently than it was generated."""
    return list(tok.tokenizer.encode(text, add_special_tokens=False).ids)


def tool_dicts(tools: Any) -> list[dict[str, Any]] | None:
    """A request's OpenAI ``tools`` as plain dicts (engines hold pydantic models)."""
    if not tools:
        return None
    out: list[dict[str, Any]] = []
    for tool in tools:
        dump = getattr(tool, "model_dump", None)
        out.append(dump(exclude_none=True) if dump is not None else dict(tool))
    return out


R = TypeVar("R")
T = TypeVar("T")


def family_classes(
    made: dict[str, tuple[R, T | None]],
    reasoning_class: Callable[[str], R],
    tool_class: Callable[[str], T],
) -> Iterator[tuple[str, R, T | None]]:
    """Every family an engine registers (not :data:`SKIPPED`) with its engine classes: a
    reasoning class, and a tool class where the family has a tool-call format. Made once
    per family and kept in ``made`` (an engine loads its plugins in each of its processes,
    and a name registered twice must map to the same class)."""
    for cls in families():
        family = cls.spec.name
        if family in SKIPPED:
            continue
        if family not in made:
            has_calls = cls.spec.tool_calls is not None
            made[family] = (reasoning_class(family), tool_class(family) if has_calls else None)
        yield family, *made[family]
