"""Text on top of labels: multi-byte characters and trimming survive any split."""

from __future__ import annotations

import pytest

import reasonspan
from tests.support.fixtures import tokenizer


def test_multibyte_characters_split_across_tokens_come_out_whole() -> None:
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    ids = tok.encode("<think>思考 🙂🙂</think>答案是 42 🎉")
    # At least one character is split over several byte-level tokens.
    assert any(not tok.token_bytes[i].decode("utf-8", "ignore") for i in ids)
    split = reasonspan.TextSplitter(parser)
    r = c = ""
    for t in ids:
        a, b = split.feed([t])
        assert "\ufffd" not in a + b
        r += a
        c += b
    a, b = split.finish()
    assert (r + a, c + b) == ("思考 🙂🙂", "答案是 42 🎉")


def test_trim_split_across_deltas() -> None:
    """step3p5 trims one newline each side of </think>, wherever the deltas cut."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("step3p5", tok)
    ids = tok.encode("line one\n\n</think>\n\nanswer\n")
    for cut in range(len(ids) + 1):
        split = reasonspan.TextSplitter(parser)
        r1, c1 = split.feed(ids[:cut])
        r2, c2 = split.feed(ids[cut:])
        r3, c3 = split.finish()
        assert (r1 + r2 + r3, c1 + c2 + c3) == ("line one\n", "\nanswer\n")


def test_prompt_seeds_the_splitter() -> None:
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    prompt = tok.encode("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    split = reasonspan.TextSplitter(parser, prompt)
    assert split.is_reasoning is False
    r, c = split.feed(tok.encode("Hello"))
    assert (r, c) == ("", "Hello")


@pytest.mark.parametrize("name", ["qwen-3", "deepseek-r1", "glm-4.7-flash", "minimax-m3"])
def test_byte_decoder_matches_decode_stream(name: str) -> None:
    """On plain ByteLevel tokenizers the byte-table decoder gives DecodeStream's text."""
    from tokenizers.decoders import DecodeStream

    from reasonspan.runtime.text.decoding import ByteDecoder, whole_texts
    from reasonspan.transcripts import ALL

    tok = tokenizer(name)
    assert tok.byte_level
    text = "".join(t.reasoning + "<think>思考 🙂</think>" + t.answer for t in ALL)
    ids = tok.encode(text)
    for skip in (False, True):
        skip_ids = tok.special_ids if skip else frozenset()
        ours = ByteDecoder(tok.token_bytes, skip_ids, whole_texts(tok.token_bytes, skip_ids))
        theirs = DecodeStream(skip_special_tokens=skip)
        a = "".join(ours.step(None, t) or "" for t in ids)
        b = "".join(theirs.step(tok.tokenizer, t) or "" for t in ids)
        assert a == b


def test_metaspace_tokenizer_keeps_decode_stream() -> None:
    from tokenizers.decoders import DecodeStream

    from reasonspan.runtime.text.decoding import _decoder

    tok = tokenizer("jiutian-139moe-chat")  # a Unigram/Metaspace vocabulary
    assert not tok.byte_level
    parser = reasonspan.create_parser_sync("minimax_m3", tok)
    assert isinstance(_decoder(parser.tokenizer, False), DecodeStream)
