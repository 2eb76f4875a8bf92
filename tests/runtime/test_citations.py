"""Cohere's inline citations (``ReasoningSpec.citations``): ``<co>…</co: 0:[1]>`` is taken
out of the text, each span kept as a Citation, the same for any split of the output.

Expected values are built from the pieces a test writes (plain text, cited spans and their
sources), never read back from the code under test. The tokenizer is the synthetic
``deepseek-v3_base_with_cohere_special_tokens`` (a real DeepSeek-V3 tokenizer with
Cohere's documented special tokens added: no Cohere tokenizer ships in the test data).
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import ReasoningParser, TextSplitter
from reasonspan.runtime.core.markers import compile_machine
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RequestStream
from reasonspan.runtime.text.citations import (
    Citation,
    CitationFormatter,
    CitationSource,
    parse_sources,
)
from reasonspan.runtime.text.formatters import IdentityFormatter
from reasonspan.runtime.wire.openai import ChatCompletionChunk, encode
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.strategies import splits

TOK = tokenizer(FAMILY_TOKENIZERS["cohere_command4"])
FAMILIES = ("cohere_command3", "cohere_command4")
START, END = "<|START_THINKING|>", "<|END_THINKING|>"
OPEN_R, CLOSE_R = "<|START_RESPONSE|>", "<|END_RESPONSE|>"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Piece = tuple[str, tuple[tuple[int, tuple[int, ...]], ...] | None]
"""A piece of a channel's text: plain text (sources None) or a cited span and its sources."""


def written(sources: tuple[tuple[int, tuple[int, ...]], ...]) -> str:
    """The closing tag's source list as Command writes it: ``0:[1,2],1:[3]``."""
    return ",".join(f"{call}:[{','.join(map(str, idx))}]" for call, idx in sources)


def build(pieces: list[Piece], channel: str, offset: int = 0) -> tuple[str, str, list[Citation]]:
    """``(raw text with markup, clean text, citations)`` from the pieces."""
    raw, clean, cites = "", "", []
    for text, sources in pieces:
        if sources is None:
            raw += text
        else:
            raw += f"<co>{text}</co: {written(sources)}>"
            start = offset + len(clean)
            srcs = tuple(CitationSource(c, idx) for c, idx in sources)
            cites.append(Citation(channel, start, start + len(text), text, srcs))  # type: ignore[arg-type]
        clean += text
    return raw, clean, cites


# Text rich in the characters of the markup, so half tags are held and released.
TEXT = st.text(alphabet="ab <co>/: 01[],é🌈\n", max_size=12)
SOURCES = st.lists(
    st.tuples(st.integers(0, 12), st.lists(st.integers(0, 30), max_size=3).map(tuple)),
    min_size=1,
    max_size=3,
).map(tuple)
PIECES = st.lists(st.tuples(TEXT, st.none() | SOURCES), max_size=6)


def unambiguous(pieces: list[Piece], raw: str) -> bool:
    """The only tags in ``raw`` are the ones the pieces put there (random text may spell
    ``<co>`` or ``</co: `` by chance; such a draw is not the case the pieces describe)."""
    n = sum(sources is not None for _, sources in pieces)
    return raw.count("<co>") == n and raw.count("</co: ") == n


def cut(text: str, points: list[int]) -> list[str]:
    out, prev = [], 0
    for p in sorted(points):
        out.append(text[prev:p])
        prev = p
    return [*out, text[prev:]]


# ----------------------------------------------------------------------------- formatter


@SETTINGS
@given(pieces=PIECES, data=st.data())
def test_formatter_any_chunking_gives_the_pieces(pieces: list[Piece], data: st.DataObject) -> None:
    raw, clean, cites = build(pieces, "content")
    assume(unambiguous(pieces, raw))
    points = data.draw(st.lists(st.integers(0, len(raw)), max_size=len(raw) + 1))
    fmt = CitationFormatter(IdentityFormatter(), "content")
    out = "".join(fmt.text(chunk) for chunk in cut(raw, points)) + fmt.finish()
    assert out == clean
    assert fmt.sink == cites
    for c in fmt.sink:
        assert clean[c.start : c.end] == c.text


def test_formatter_holds_only_what_may_still_be_markup() -> None:
    fmt = CitationFormatter(IdentityFormatter(), "content")
    assert fmt.text("a <c") == "a "  # "<c" may begin <co>
    assert fmt.text("x") == "<cx"  # it did not
    assert fmt.text("<co>cited") == "cited"  # the cited text streams at once
    assert fmt.text(" </co: 0:[1") == " "
    assert fmt.text("]>!") == "!"
    # "a <cx" comes first: the span starts at code point 5.
    assert fmt.sink == [Citation("content", 5, 11, "cited ", (CitationSource(0, (1,)),))]


def test_unclosed_stray_and_malformed_tags() -> None:
    def run(text: str) -> tuple[str, list[Citation]]:
        fmt = CitationFormatter(IdentityFormatter(), "reasoning")
        return fmt.text(text) + fmt.finish(), fmt.sink

    # A citation still open at the end: its text stays, without the opening tag.
    assert run("a <co>b c") == ("a b c", [])
    # A closing tag with no open citation is text, as in melody.
    assert run("a</co: 0:[1]>") == ("a</co: 0:[1]>", [])
    # A closing tag with a character no source list has is text (the citation stays open).
    assert run("<co>x</co: a>y") == ("x</co: a>y", [])
    # No sources that read as ``int:[ints]``: a citation without sources.
    assert run("<co>x</co: >") == ("x", [Citation("reasoning", 0, 1, "x", ())])
    # A block boundary (a delimiter token) ends an open citation without one.
    fmt = CitationFormatter(IdentityFormatter(), "content")
    assert fmt.text("<co>x") + fmt.marker() + fmt.text("y</co: 0:[1]>") == "xy</co: 0:[1]>"
    assert fmt.sink == []
    # Held text is released at a boundary, before it; outside a citation a closing tag
    # is never held.
    fmt = CitationFormatter(IdentityFormatter(), "content")
    assert fmt.text("<co>a</co") == "a"
    assert fmt.marker() == "</co"
    assert fmt.text("b</co") == "b</co"
    assert fmt.sink == []


def test_parse_sources_as_published() -> None:
    assert parse_sources("0:[1,2],1:[3,4]") == (
        CitationSource(0, (1, 2)),
        CitationSource(1, (3, 4)),
    )
    assert parse_sources(" 2:[ 0 , 5 ] ") == (CitationSource(2, (0, 5)),)
    assert parse_sources("0:[]") == (CitationSource(0, ()),)
    # Entries that are not ``int:[ints]`` are skipped.
    assert parse_sources("x:[1],3:[2]") == (CitationSource(3, (2,)),)
    assert parse_sources("") == ()


# ------------------------------------------------------------------- parse / TextSplitter


def make(family: str, **kwargs: Any) -> ReasoningParser:
    return reasonspan.create_parser_sync(family, TOK, kwargs or None)


def without_citations(parser: ReasoningParser) -> ReasoningParser:
    """The same family with ``citations="none"``: the labels must not change."""
    spec = msgspec.structs.replace(parser.machine.spec, citations="none")
    machine = compile_machine(spec, TOK, thinking=True, prompt_start=True)
    return type(parser)(TOK, machine)


def grounded(r_pieces: list[Piece], c_pieces: list[Piece]) -> tuple[str, str, str, list[Citation]]:
    """``(output, reasoning, content, citations)``: a thought and an answer, each starting
    with a letter (the family trims whitespace after its markers)."""
    r_raw, r_clean, r_cites = build([("R", None), *r_pieces], "reasoning")
    c_raw, c_clean, c_cites = build([("A", None), *c_pieces], "content")
    out = f"{r_raw}{END}{OPEN_R}{c_raw}{CLOSE_R}"
    return out, r_clean, c_clean, r_cites + c_cites


@SETTINGS
@given(family=st.sampled_from(FAMILIES), r_pieces=PIECES, c_pieces=PIECES, data=st.data())
def test_parse_and_any_split_give_the_pieces(
    family: str, r_pieces: list[Piece], c_pieces: list[Piece], data: st.DataObject
) -> None:
    out, reasoning, content, cites = grounded(r_pieces, c_pieces)
    assume(unambiguous(r_pieces, out.split(END)[0]) and unambiguous(c_pieces, out.split(END)[1]))
    parser = make(family)
    ids = TOK.encode(out)
    res = parser.parse(ids)
    assert (res.reasoning, res.content) == (reasoning, content)
    assert res.citations == cites
    # Token labels stay honest: the markup's tokens keep their channel's label, and the
    # same family without citation handling reads the markup as text.
    plain = without_citations(parser).parse(ids)
    assert plain.labels == res.labels
    assert plain.reasoning == out.split(END)[0]

    deltas = data.draw(splits(ids), label="deltas")
    split = TextSplitter(parser)
    r_parts, c_parts, got = [], [], []
    for delta in deltas:
        r, c = split.feed(delta)
        r_parts.append(r)
        c_parts.append(c)
        got += split.take_citations()
    r, c = split.finish()
    got += split.take_citations()
    assert ("".join(r_parts) + r, "".join(c_parts) + c) == (reasoning, content)
    assert got == cites


def test_melody_readme_example() -> None:
    """The example of Cohere's melody parser (README, "Command 3"): same spans, positions
    and sources (melody's start/end indices are code points too)."""
    out = (
        "This is a rainbow <co>emoji: 🌈</co: 0:[1]><|END_THINKING|>\n<|START_RESPONSE|>"
        "foo <co>bar</co: 0:[1,2],1:[3,4]><|END_RESPONSE|>"
    )
    res = make("cohere_command3").parse(TOK.encode(out))
    assert (res.reasoning, res.content) == ("This is a rainbow emoji: 🌈", "foo bar")
    assert res.citations == [
        Citation("reasoning", 18, 26, "emoji: 🌈", (CitationSource(0, (1,)),)),
        Citation("content", 4, 7, "bar", (CitationSource(0, (1, 2)), CitationSource(1, (3, 4)))),
    ]


def test_families_without_citations_keep_the_markup() -> None:
    qwen = reasonspan.create_parser_sync("qwen3", tokenizer("qwen-3"))
    text = "x <co>y</co: 0:[1]>"
    res = qwen.parse(qwen.tokenizer.encode(f"</think>{text}"))
    assert (res.content, res.citations) == (text, [])


# --------------------------------------------------------------------------------- runtime


def run_steps(
    runtime: ReasoningRuntime, stream: RequestStream, deltas: list[list[int]]
) -> list[ChatCompletionChunk]:
    chunks: list[ChatCompletionChunk] = []
    for delta in deltas:
        if stream.finish_reason is not None:
            break
        runtime.step(np.array([stream.engine_id]), np.array(delta, np.int64), [0, len(delta)])
        chunks += stream.ready()
    if stream.finish_reason is None:
        runtime.finish(stream.request_id)
    return chunks + stream.ready()


def sent(chunks: list[ChatCompletionChunk]) -> tuple[str, str, list[Citation]]:
    deltas = [c.choices[0].delta for c in chunks]
    for c in chunks:  # every chunk survives the wire
        assert msgspec.json.decode(encode(c), type=ChatCompletionChunk) == c
    return (
        "".join(d.reasoning or "" for d in deltas),
        "".join(d.content or "" for d in deltas),
        [c for d in deltas for c in d.citations or []],
    )


@SETTINGS
@given(r_pieces=PIECES, c_pieces=PIECES, data=st.data())
def test_runtime_sends_the_citations_of_parse(
    r_pieces: list[Piece], c_pieces: list[Piece], data: st.DataObject
) -> None:
    out, reasoning, content, cites = grounded(r_pieces, c_pieces)
    assume(unambiguous(r_pieces, out.split(END)[0]) and unambiguous(c_pieces, out.split(END)[1]))
    ids = TOK.encode(out)
    deltas = data.draw(splits(ids), label="deltas")
    include = data.draw(st.booleans(), label="include_reasoning")
    runtime = ReasoningRuntime(buffer_size=data.draw(st.integers(1, 4), label="buffer"))
    stream = runtime.add("r", make("cohere_command4"), None, include_reasoning=include)
    chunks = run_steps(runtime, stream, deltas)
    r, c, got = sent(chunks)
    assert (r, c) == ((reasoning if include else ""), content)
    assert got == [x for x in cites if include or x.channel == "content"]
    # Each citation comes once its span's text has been sent.
    seen = {"reasoning": 0, "content": 0}
    for chunk in chunks:
        d = chunk.choices[0].delta
        seen["reasoning"] += len(d.reasoning or "")
        seen["content"] += len(d.content or "")
        for x in d.citations or []:
            assert x.end <= seen[x.channel]


def test_a_stop_string_drops_the_citations_of_text_never_sent() -> None:
    out = f"R{END}{OPEN_R}A <co>first</co: 0:[0]> and <co>sec STOP ond</co: 1:[2]>.{CLOSE_R}"
    for step in (1, 3, 100):
        ids = TOK.encode(out)
        runtime = ReasoningRuntime()
        stream = runtime.add("r", make("cohere_command4"), None, stop="STOP")
        chunks = run_steps(runtime, stream, [ids[i : i + step] for i in range(0, len(ids), step)])
        r, c, got = sent(chunks)
        assert (r, c) == ("R", "A first and sec ")
        assert got == [Citation("content", 2, 7, "first", (CitationSource(0, (0,)),))]


async def test_collect_puts_the_citations_on_the_message() -> None:
    out = f"R<co>x</co: 0:[1]>{END}{OPEN_R}A <co>yz</co: 2:[3]>{CLOSE_R}"
    ids = TOK.encode(out)
    runtime = ReasoningRuntime()
    stream = runtime.add("r", make("cohere_command4"), None)
    for t in ids:
        runtime.step(np.array([stream.engine_id]), np.array([t], np.int64), [0, 1])
    runtime.finish("r")
    done = await stream.collect()
    message = done.choices[0].message
    assert (message.reasoning, message.content) == ("Rx", "A yz")
    assert message.citations == [
        Citation("reasoning", 1, 2, "x", (CitationSource(0, (1,)),)),
        Citation("content", 2, 4, "yz", (CitationSource(2, (3,)),)),
    ]
    # A family without citations sends no citations field at all.
    qwen = reasonspan.create_parser_sync("qwen3", tokenizer("qwen-3"))
    runtime = ReasoningRuntime()
    stream = runtime.add("q", qwen, None)
    ids = qwen.tokenizer.encode("a</think>b")
    runtime.step(np.array([stream.engine_id]), np.array(ids, np.int64), [0, len(ids)])
    runtime.finish("q")
    chunks = stream.ready()
    assert all(b"citations" not in encode(c) for c in chunks)


def test_a_message_with_citations_goes_back_into_the_history() -> None:
    """Clients append the returned message to the next request: the server accepts its
    ``citations`` and does not hand them to the chat template."""
    from reasonspan.serving.protocol import parse_request

    cite = msgspec.json.decode(encode(Citation("content", 0, 1, "x", (CitationSource(0, (1,)),))))
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "x", "citations": [cite]},
            {"role": "user", "content": "more?"},
        ],
    }
    req = parse_request(msgspec.json.encode(body))
    assert req.messages[1].citations == [cite]
    assert "citations" not in req.messages[1].for_template()
