"""Hypothesis strategies: token sequences rich in markers, and random splits into deltas."""

from __future__ import annotations

from hypothesis import strategies as st

from reasonspan import ReasoningParser
from reasonspan.runtime.core.spec import MarkerKind

FILLER = [
    "hello",
    " world",
    "\n",
    "\n\n",
    " The answer is 42.",
    "Let me think.",
    "思考一下",
    " 🙂",
    " <",
    ">",
    "</",
    "<b>",
    " x",
    ":",
    "think",
    " Here",
    "{}",
]


# Pieces of a family's syntax that its spec's markers do not spell out (harmony decides
# headers with a custom machine). Only the named family draws them.
FAMILY_PIECES: dict[str, tuple[str, ...]] = {
    "openai_gptoss": (
        "<|start|>assistant",
        "<|channel|>",
        "<|message|>",
        "<|end|>",
        "<|return|>",
        "<|call|>",
        "<|constrain|>json",
        "<|channel|>final<|message|>",
        "<|channel|>commentary",
        " to=functions.get_weather",
        "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>",
        "<|channel|>analysis to=python code<|message|>",
        "analy",
        "sis",
        " to",
        "=",
    ),
    # The label after <|channel>, whole, split and look-alike.
    "gemma4": ("<|channel>thought\n", "thought\n", "thought", "thoughtful", "<|think|>", "<turn|>"),
    # Cohere's inline citations, whole, split and look-alike (cohere_command3/4 take the
    # markup out of the text).
    "cohere_command3": ("<co>", "</co: 0:[1]>", "</co: 0:[1,2],1:[3]>", "<co", "</co: ", "]>"),
    "cohere_command4": ("<co>", "</co: 0:[1]>", "</co: 0:[1,2],1:[3]>", "<co", "</co: ", "]>"),
    # Granite's phrases with the neighbours that change their tokens (a leading space or
    # punctuation merges into "Here", a newline or "**" into the final ":"), and phrases
    # that break off, so held tokens must be released.
    "granite": (
        " Here is my thought process:",
        ".Here's my thought process:\n\n",
        "\nHere is my response:\n",
        " Here's my response:**",
        "Here is my",
        " Here's my thought",
        " my response",
        "'s",
    ),
}


def marker_texts(parser: ReasoningParser) -> list[str]:
    # The compiled spec: a family may resolve its markers per tokenizer (hy_v3).
    texts = [text for text, _kind in parser.machine.spec.markers()]
    # Markers matched on bytes, back to back: BPE merges one's last bytes with the next
    # one's first (``></`` in ``<think></think>``), so one token ends one and begins the other.
    matched = sorted(m.decode("utf-8") for m in parser.machine.byte_markers)
    pairs = [a + b for a in matched for b in matched]
    return texts + pairs + list(FAMILY_PIECES.get(parser.spec.name, ()))


@st.composite
def outputs(draw: st.DrawFn, parser: ReasoningParser) -> list[int]:
    """A token sequence built from marker texts, filler text and raw ids.

    Adjacent text pieces are encoded together, so markers meet their neighbours as they
    would in real output (``>The`` merges, ``.<`` merges, and so on).
    """
    tok = parser.tokenizer
    markers = marker_texts(parser)
    pieces = draw(
        st.lists(
            st.one_of(
                st.sampled_from(markers) if markers else st.just("x"),
                st.sampled_from(FILLER),
                st.integers(0, tok.vocab_size - 1).map(lambda i: i),
            ),
            max_size=24,
        )
    )
    ids: list[int] = []
    text = ""
    for p in pieces:
        if isinstance(p, int):
            if text:
                ids += tok.encode(text)
                text = ""
            ids.append(p)
        else:
            text += p
    if text:
        ids += tok.encode(text)
    return ids


@st.composite
def splits(draw: st.DrawFn, ids: list[int]) -> list[list[int]]:
    """Cut ``ids`` into consecutive deltas (empty deltas included)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(ids)), max_size=max(1, len(ids)))))
    out: list[list[int]] = []
    prev = 0
    for c in [*cuts, len(ids)]:
        out.append(ids[prev:c])
        prev = c
    return out


def empty_text_ids(parser: ReasoningParser) -> list[int]:
    """Tokens whose text is empty (special tokens left out with ``skip_special_tokens``),
    markers excluded, so they end the output without changing its channel."""
    tok = parser.tokenizer
    marker_ids = {
        tid
        for text, _kind in parser.machine.spec.markers()
        if (tid := tok.single_token_id(text)) is not None
    }
    skipped = sorted(parser.skipped_token_ids())
    return [t for t in skipped if t not in marker_ids] or skipped


@st.composite
def held_then_empty(draw: st.DrawFn, parser: ReasoningParser) -> list[int]:
    """An output that ends with a channel whose text may be held (a reasoning block, open
    or closed; text; the first half of a marker), then tokens whose text is empty: the
    shape that lost nemotron_v3's held reasoning in the runtime."""
    tok = parser.tokenizer
    spec = parser.machine.spec
    starts = [t for t, k in spec.markers() if k == MarkerKind.START] or [""]
    ends = [t for t, k in spec.markers() if k == MarkerKind.END] or [""]
    # Half the outputs are the shape alone: any content before it would end the hold.
    head = draw(outputs(parser), label="head") if draw(st.booleans()) else []
    opener = draw(st.sampled_from([*starts, ""]), label="opener")
    text = draw(st.sampled_from(FILLER), label="text")
    halves = [e[: len(e) // 2] for e in ends if len(e) > 1]
    closer = draw(st.sampled_from([*ends, "", *halves]), label="closer")
    tail = opener + text + closer
    empty = draw(st.lists(st.sampled_from(empty_text_ids(parser)), min_size=1, max_size=3))
    return head + (tok.encode(tail) if tail else []) + empty
