"""Tokenizer loading and the per-token byte table, on real tokenizers."""

from __future__ import annotations

import pytest
from fixtures import DATA, folder, tokenizer

import reasonspan


@pytest.mark.parametrize("name", ["qwen-3", "deepseek-r1", "glm-4.7-flash", "minimax-m3"])
def test_token_bytes_match_the_decoder(name: str) -> None:
    """token_bytes[id] concatenated decodes to what the real decoder produces."""
    tok = tokenizer(name)
    text = "Hello, wörld! 思考一下 🙂 <think>\n\tcode: x = [1, 2]</think>"
    ids = tok.encode(text)
    raw = b"".join(tok.token_bytes[i] for i in ids)
    assert raw.decode("utf-8") == tok.decode(ids)


async def test_load_folder_file_and_zip() -> None:
    by_folder = await reasonspan.load_tokenizer(folder("qwen-3"))
    by_file = await reasonspan.load_tokenizer(folder("qwen-3") / "tokenizer.json")
    by_zip = await reasonspan.load_tokenizer(DATA / "qwen-3" / "tokenizer.json.zip")
    for tok in (by_folder, by_file, by_zip):
        assert tok.vocab_size == by_folder.vocab_size
        assert tok.single_token_id("<think>") == 151667
    assert by_folder.config.get("chat_template")  # tokenizer_config.json was read


async def test_chat_template_file_is_read() -> None:
    tok = await reasonspan.load_tokenizer(folder("glm-4.7-flash"))
    assert tok.chat_template is not None and "<|assistant|>" in tok.chat_template


async def test_in_memory_tokenizer_is_accepted() -> None:
    raw = tokenizer("qwen-3").tokenizer
    loaded = await reasonspan.load_tokenizer(raw)
    parser = await reasonspan.create_parser("qwen3", loaded)
    assert parser.parse(loaded.encode("<think>a</think>b")).content == "b"


async def test_reasoning_end_token_id() -> None:
    from reasonspan.architectures.qwen3 import Qwen3Parser

    assert await Qwen3Parser.reasoning_end_token_id(tokenizer("qwen-3")) == 151668
    assert await Qwen3Parser.reasoning_end_token_id(tokenizer("qwen-3.5")) == 248069


async def test_from_tokenizer_is_async_and_cached() -> None:
    from reasonspan.architectures.deepseek import DeepSeekR1Parser

    tok = tokenizer("deepseek-r1")
    a = await DeepSeekR1Parser.from_tokenizer(tok)
    b = await DeepSeekR1Parser.from_tokenizer(tok)
    assert a is not b  # one parser per request ...
    assert a.machine is b.machine  # ... sharing one compiled machine
