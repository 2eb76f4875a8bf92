"""Tokenizer loading and the per-token byte table, on real tokenizers."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import pytest
from tokenizers import Tokenizer

import reasonspan
from tests.support.fixtures import DATA, folder, tokenizer


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


def test_oversized_tokenizer_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "tokenizer.json"
    with big.open("wb") as fh:  # sparse: 300 MB on paper, nothing written
        fh.truncate(300 * 1024 * 1024)
    with pytest.raises(reasonspan.TokenizerLoadError, match="over the 134,217,728-byte limit"):
        reasonspan.load_tokenizer_sync(big)


def test_zip_member_over_the_limit_is_refused(tmp_path: Path) -> None:
    bomb = tmp_path / "tokenizer.json.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("tokenizer.json", b" " * 5_000_000)  # compresses to a few KB
    assert bomb.stat().st_size < 100_000
    with pytest.raises(reasonspan.TokenizerLoadError, match="unpacks to 5,000,000 bytes"):
        reasonspan.load_tokenizer_sync(bomb, max_bytes=1_000_000)


def test_zip_with_two_tokenizers_is_an_error(tmp_path: Path) -> None:
    real = (DATA / "qwen-3" / "tokenizer.json.zip").read_bytes()
    with zipfile.ZipFile(io.BytesIO(real)) as zf:
        text = zf.read(next(n for n in zf.namelist() if n.endswith("tokenizer.json")))
    two = tmp_path / "two.zip"
    with zipfile.ZipFile(two, "w") as zf:
        zf.writestr("a/tokenizer.json", text)
        zf.writestr("b/tokenizer.json", text)
    with pytest.raises(
        reasonspan.TokenizerLoadError,
        match=r"2 tokenizer.json files \(a/tokenizer.json, b/tokenizer.json\)",
    ):
        reasonspan.load_tokenizer_sync(two)


def test_non_utf8_chat_template_names_the_file(tmp_path: Path) -> None:
    model = tmp_path / "model"
    shutil.copytree(folder("qwen-3"), model)
    (model / "chat_template.jinja").write_bytes(b"{{ messages }}\xff\xfe")
    with pytest.raises(reasonspan.TokenizerLoadError, match=r"chat_template\.jinja.*not UTF-8"):
        reasonspan.load_tokenizer_sync(model)


def test_a_device_is_refused_not_read_forever() -> None:
    """/dev/zero reports size 0, so a size check alone passes it; reading never ends."""
    zero = Path("/dev/zero")
    if not zero.exists():
        pytest.skip("no /dev/zero here")
    with pytest.raises(
        reasonspan.TokenizerLoadError, match=r"not a regular file \(a character device\)"
    ):
        reasonspan.load_tokenizer_sync(zero)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    import os

    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    model = tmp_path / "model"
    model.mkdir()
    os.mkfifo(model / "tokenizer.json")  # nobody ever writes to it
    with pytest.raises(reasonspan.TokenizerLoadError, match=r"not a regular file \(a FIFO\)"):
        reasonspan.load_tokenizer_sync(model)
    shutil.copy(folder("qwen-3") / "tokenizer.json", tmp_path / "tokenizer.json")
    os.mkfifo(tmp_path / "chat_template.jinja")  # a side file: refused, not skipped
    with pytest.raises(
        reasonspan.TokenizerLoadError, match=r"chat_template\.jinja.*not a regular file"
    ):
        reasonspan.load_tokenizer_sync(tmp_path)


def test_reading_stops_at_the_cap_when_the_size_lies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size from stat can be wrong (a file growing while read): the read itself is capped."""
    import os

    from reasonspan.tokenizer import files

    big = tmp_path / "tokenizer.json"
    big.write_bytes(b" " * 2_000_000)
    real_fstat = os.fstat

    def fstat_saying_empty(fd: int) -> os.stat_result:
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, *st[1:6], 0, *st[7:]))

    monkeypatch.setattr(files.os, "fstat", fstat_saying_empty)
    with pytest.raises(reasonspan.TokenizerLoadError, match="over the 1,000,000-byte limit"):
        reasonspan.load_tokenizer_sync(big, max_bytes=1_000_000)


def test_a_vocabulary_id_far_beyond_the_vocabulary_is_refused(tmp_path: Path) -> None:
    """One id of 2**31-5 would make every id-indexed table allocate tens of GB."""
    import json

    data = json.loads((folder("qwen-3") / "tokenizer.json").read_text(encoding="utf-8"))
    data["model"]["vocab"]["far-away"] = 2**31 - 5
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(
        reasonspan.TokenizerLoadError, match=r"'far-away' has id 2,147,483,643, far beyond"
    ):
        reasonspan.load_tokenizer_sync(path)


def test_vocabulary_only_drops_the_folder_files_and_shares_the_byte_table() -> None:
    tok = tokenizer("qwen-3.5")
    assert tok.chat_template is not None
    bare = tok.vocabulary_only()
    assert bare.chat_template is None and not bare.config and not bare.model_config
    assert bare.token_bytes is tok.token_bytes
    assert (bare.byte_level, bare.special_ids, bare.vocab_size) == (
        tok.byte_level,
        tok.special_ids,
        tok.vocab_size,
    )
    assert bare.cache is not tok.cache  # compiled machines depend on the template's absence


@pytest.mark.parametrize(
    "name", ["qwen-3", "glm-4.5v", "deepseek-v3", "qwen-2.5_base_with_mistral_special_tokens"]
)
def test_the_byte_table_is_read_from_the_json_and_the_json_is_not_kept(name: str) -> None:
    """The loader builds the byte table from its own parse of tokenizer.json and keeps no
    copy of the file (7-19 MB a tokenizer for as long as it lives); one made from the JSON
    text holds it only until its table is built; one made from a bare Tokenizer reads the
    tokenizer's own serialization. All three tables agree, and ``raw_json`` (what the grammar
    engine reads) is a tokenizer.json of the same vocabulary."""
    path = folder(name) / "tokenizer.json"
    tok = reasonspan.load_tokenizer_sync(path)
    assert tok._raw is None and tok._token_bytes is not None  # built at load, file not kept
    from_text = reasonspan.LoadedTokenizer(tok.tokenizer, "x", raw_json=path.read_text("utf-8"))
    assert from_text._raw is not None and from_text._token_bytes is None
    in_memory = reasonspan.LoadedTokenizer(tok.tokenizer, "x")  # from tokenizer.to_str()
    assert tok.token_bytes == from_text.token_bytes == in_memory.token_bytes
    assert from_text._raw is None  # dropped once the table was built
    assert tok.special_ids == from_text.special_ids == in_memory.special_ids
    assert tok.byte_level == from_text.byte_level == in_memory.byte_level
    again = Tokenizer.from_str(tok.raw_json)
    assert again.get_vocab(with_added_tokens=True) == tok.tokenizer.get_vocab(
        with_added_tokens=True
    )
