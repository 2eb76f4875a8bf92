"""Text on top of labels: multi-byte characters and trimming survive any split."""

from __future__ import annotations

from fixtures import tokenizer

import reasonspan


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
    tok = tokenizer("deepseek-r1")
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
