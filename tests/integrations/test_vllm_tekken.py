"""Mistral's tokenizer in vLLM (``--tokenizer-mode mistral``, how Mistral's own model cards
serve Magistral): the plugin reads the tekken.json behind vLLM's ``MistralTokenizer`` as the
same tokenizer.json (``tokenizer/tekken.py``), so its parsers run on the ids vLLM generated.

The files are Mistral's real tekken vocabularies, the two mistral_common ships
(``tekken_240718.json``, Mistral NeMo's; ``tekken_240911.json``, Pixtral's; both v3,
before ``[THINK]`` existed: Magistral 2506 wrote plain-text ``<think>``). The reader must
encode as mistral_common's own ``Tekkenizer`` (tiktoken) does and give every id its bytes.
A v13 file (Magistral 2509 and later, ``[THINK]``/``[/THINK]`` special tokens) is not
shipped: ``v13_folder`` writes one from ``tekken_240911.json``'s vocabulary with
mistral_common's twenty old special tokens and ``[ARGS]``, ``[CALL_ID]``, ``[THINK]``,
``[/THINK]`` after them (ranks 20-23 as placed here; the reader takes them from the file).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import mistral_common
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from mistral_common.tokens.tokenizers.tekken import Tekkenizer
from vllm.tokenizers.mistral import MistralTokenizer

import reasonspan
from reasonspan.integrations.vllm import own_name
from reasonspan.integrations.vllm.tokens import UnsupportedTokenizerError, loaded_tokenizer
from tests.integrations.vllm_ways import reference, streamed, whole

DATA = Path(mistral_common.__file__).parent / "data"
FILES = ("tekken_240718.json", "tekken_240911.json")
V13_SPECIALS = ("[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]")


@pytest.fixture(scope="module", params=FILES)
def real(request: pytest.FixtureRequest) -> tuple[reasonspan.LoadedTokenizer, Tekkenizer]:
    path = DATA / request.param
    return reasonspan.load_tokenizer_sync(path), Tekkenizer.from_file(path)


def _corpus() -> list[str]:
    """Text of many kinds: slices of mistral_common's own source (code, prose, markup),
    and lines in several scripts."""
    source = (
        Path(mistral_common.__file__).parent / "tokens" / "tokenizers" / "tekken.py"
    ).read_text()
    rng = random.Random(0)
    cuts = [rng.randrange(len(source)) for _ in range(150)]
    return [source[a : a + rng.randrange(1, 500)] for a in cuts] + [
        "Tokyo 東京 Москва القاهرة मुंबई 서울 🙂👍🏽 naïve café",
        "   leading and trailing   \n\n\n\t\t",
        "1234567890 3.14159e-10 0x1F",
        "<think>plain-text markers</think> as Magistral 2506 wrote them",
    ]


def test_the_encoding_is_mistral_commons(
    real: tuple[reasonspan.LoadedTokenizer, Tekkenizer],
) -> None:
    tok, tekken = real
    for text in _corpus():
        if any(s in text for s in ("<s>", "</s>", "<unk>", "<pad>", "[INST]")):
            continue  # (a special token's text: read as the token here, spelled there)
        assert tok.encode(text) == tekken.encode(text, bos=False, eos=False), text


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=60))
def test_any_text_encodes_as_mistral_common_does(
    real: tuple[reasonspan.LoadedTokenizer, Tekkenizer], text: str
) -> None:
    tok, tekken = real
    assume(not any(s in text for s in ("<s>", "</s>", "<unk>", "<pad>", "[")))
    assert tok.encode(text) == tekken.encode(text, bos=False, eos=False)


def test_every_id_has_mistral_commons_bytes(
    real: tuple[reasonspan.LoadedTokenizer, Tekkenizer],
) -> None:
    tok, tekken = real
    assert tok.vocab_size == tekken.n_words
    block = tekken.num_special_tokens
    for i in range(block):
        assert tok.token_bytes[i] == tekken.id_to_piece(i).encode(), i
    for i in range(block, tekken.n_words):
        assert tok.token_bytes[i] == tekken.id_to_byte_piece(i), i


@pytest.fixture(scope="module")
def v3_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("magistral-2506-like")
    shutil.copy(DATA / "tekken_240911.json", folder / "tekken.json")
    return folder


@pytest.fixture(scope="module")
def v13_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = json.loads((DATA / "tekken_240911.json").read_text())
    names = [t["token_str"] for t in Tekkenizer.DEPRECATED_SPECIAL_TOKENS] + list(V13_SPECIALS)
    data["special_tokens"] = [
        {"rank": i, "token_str": name, "is_control": True} for i, name in enumerate(names)
    ]
    data["config"]["version"] = "v13"
    folder = tmp_path_factory.mktemp("magistral-2509-like")
    (folder / "tekken.json").write_text(json.dumps(data))
    return folder


def test_vllms_mistral_tokenizer_is_read_once(v13_folder: Path) -> None:
    mt = MistralTokenizer.from_pretrained(str(v13_folder))
    tok = loaded_tokenizer(mt)
    assert tok.source == str(v13_folder / "tekken.json")
    assert loaded_tokenizer(mt) is tok  # (a parser per request: a lookup after the first)
    text = '[THINK]plan[/THINK]Answer[TOOL_CALLS]f[ARGS]{"a": 1}'
    ids = tok.encode(text)
    assert ids[0] == mt.tokenizer.get_special_token("[THINK]")
    assert mt.decode(ids) == text


def test_every_wrapping_of_a_tekkenizer_is_read(v13_folder: Path) -> None:
    """The Tekkenizer is found inside transformers' ``MistralCommonBackend`` (what SGLang
    passes for a folder with only tekken.json) and mistral_common's own
    ``MistralTokenizer`` too, and each reads as the same cached tokenizer."""
    mt = MistralTokenizer.from_pretrained(str(v13_folder))
    tok = loaded_tokenizer(mt)
    assert type(mt.transformers_tokenizer).__name__ == "MistralCommonBackend"
    assert loaded_tokenizer(mt.transformers_tokenizer) is tok
    assert type(mt.mistral).__name__ == "MistralTokenizer"
    assert loaded_tokenizer(mt.mistral) is tok
    assert loaded_tokenizer(mt.tokenizer) is tok


def _three_ways(mt: Any, text: str, tools: list[dict[str, Any]] | None) -> tuple[str, str, Any]:
    """The plugin's parsers on vLLM's MistralTokenizer, non-streaming and streamed in
    random steps, against reasonspan's ``parse()`` of the same ids."""
    tok = loaded_tokenizer(mt)
    ids = tok.encode(text)
    names = (own_name("mistral"), own_name("mistral"))
    want = reference("mistral", mt, ids, None, tools)
    assert whole(names, mt, ids, None, tools) == want
    for seed in range(3):
        assert streamed(names, mt, ids, None, tools, random.Random(seed)) == want, seed
    return want


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def test_magistral_2509_think_tokens_and_calls(v13_folder: Path) -> None:
    mt = MistralTokenizer.from_pretrained(str(v13_folder))
    out = '[THINK]The user wants Paris.[/THINK]Checking.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
    reasoning, content, calls = _three_ways(mt, out, TOOLS)
    assert reasoning == "The user wants Paris."
    assert content == "Checking."
    assert calls == [("get_weather", {"city": "Paris"})]


def test_magistral_2506_plain_text_think(v3_folder: Path) -> None:
    """A vocabulary without ``[THINK]``: the plain-text markers, matched on bytes (``<th``
    and ``ink>`` are separate tokens in tekken)."""
    mt = MistralTokenizer.from_pretrained(str(v3_folder))
    out = "<think>\nThe user wants Paris.\n</think>\n\nIt is sunny in Paris."
    reasoning, content, calls = _three_ways(mt, out, None)
    assert "The user wants Paris." in reasoning and "<think>" not in reasoning
    assert content.strip() == "It is sunny in Paris."
    assert calls == []


def test_a_tekkenizer_without_a_file_is_refused_naming_why() -> None:
    data = json.loads((DATA / "tekken_240718.json").read_text())
    tekken = Tekkenizer(
        data["vocab"],
        list(Tekkenizer.DEPRECATED_SPECIAL_TOKENS),
        data["config"]["pattern"],
        data["config"]["default_vocab_size"],
        data["config"]["default_num_special_tokens"],
        Tekkenizer.from_file(DATA / "tekken_240718.json").version,
    )
    with pytest.raises(UnsupportedTokenizerError, match="not loaded from a file"):
        loaded_tokenizer(tekken)


def test_a_tokenizer_of_neither_kind_is_refused_naming_both() -> None:
    with pytest.raises(UnsupportedTokenizerError, match=r"tokenizers-backed.*or Mistral's tekken"):
        loaded_tokenizer(object())
