"""A CanIToolCall fixture's output as ids of a stand-in tokenizer, with special tokens only
where the model wrote them.

The corpus' spec says to replay ``output_token_ids`` (re-encoding text is lossy: the text
``[TOOL_CALLS]`` a model writes in an argument is ordinary tokens, the same text encoded is
the control token). Where the reference model's tokenizer does not ship offline, the
replay uses a stand-in (a real base tokenizer with the family's special tokens added,
``tests/support/fixtures.py``), and encoding ``raw_output`` with it turns every marker the
model *wrote as text* into the special token. The fixture's own ids still say which of
its tokens are special: in the published vocabularies the special tokens occupy a known
id range (:data:`SPECIAL_RANGES`). :func:`aligned_ids` reads that sequence of special and
ordinary runs, finds the one way to cut ``raw_output`` along it (each special run one
marker of the stand-in, each ordinary run some non-empty text, one text per special id),
and encodes each ordinary run so that no marker text in it becomes a marker token.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from canitoolcall.fixtures import Fixture

from reasonspan import LoadedTokenizer

SPECIAL_RANGES: dict[str, Callable[[int], bool]] = {
    # o200k_harmony: <|startoftext|> is 199998, every later id is a special token
    # (openai/harmony's encoding: <|return|> 200002 ... <|call|> 200012).
    "openai/gpt-oss-20b": lambda i: i >= 199998,
    # Llama 3's tiktoken vocabulary: 128,000 ordinary tokens, then 256 special ones.
    "unsloth/Llama-3.3-70B-Instruct": lambda i: i >= 128000,
    # Llama 4's: 200,000 ordinary tokens, then its special ones.
    "unsloth/Llama-4-Scout-17B-16E-Instruct": lambda i: i >= 200000,
    # Kimi K2's tiktoken vocabulary: 163,584 ordinary tokens, then [BOS], [EOS], ...
    "moonshotai/Kimi-K2-Instruct-0905": lambda i: i >= 163584,
    "moonshotai/Kimi-K2.6": lambda i: i >= 163584,
}
"""Which ids of a reference tokenizer (by the fixture's ``tokenizer.repo``) are special.
Mistral's tekken vocabularies (``tokenizer.mode == "mistral"``) are added in
:func:`_is_special`: their first 1,000 ids are the control tokens (mistral-common's
``num_special_tokens``)."""


def _is_special(fixture: Fixture) -> Callable[[int], bool] | None:
    pin = fixture.tokenizer
    if pin is None:
        return None
    if pin.mode == "mistral":
        return lambda i: i < 1000
    return SPECIAL_RANGES.get(pin.repo)


def _runs(ids: list[int], special: Callable[[int], bool]) -> list[tuple[int | None, int]]:
    """The ids as runs: ``(id, 1)`` for a special id, ``(None, n)`` for a run of ``n``
    ordinary ids."""
    runs: list[tuple[int | None, int]] = []
    for i in ids:
        if special(i):
            runs.append((i, 1))
        elif runs and runs[-1][0] is None:
            runs[-1] = (None, runs[-1][1] + 1)
        else:
            runs.append((None, 1))
    return runs


def _cuts(runs: list[int | None], text: str, markers: set[str], limit: int = 16) -> list[list[str]]:
    """Up to ``limit`` ways to cut ``text`` into one piece per run (a special run: a marker,
    the same one wherever its id recurs and a different one for each id; an ordinary run:
    non-empty text), found in at most 100,000 steps."""
    found: list[list[str]] = []
    steps = [0]

    def walk(k: int, pos: int, pieces: list[str], named: dict[int, str]) -> None:
        steps[0] += 1
        if len(found) >= limit or steps[0] > 100_000:  # a pathological output: give up
            return
        if k == len(runs):
            if pos == len(text):
                found.append(list(pieces))
            return
        rid = runs[k]
        if rid is None:
            ends = [len(text)] if k + 1 == len(runs) else list(_marker_starts(text, pos, markers))
            for end in ends:
                if end > pos:
                    walk(k + 1, end, [*pieces, text[pos:end]], named)
            return
        for m in sorted(markers):
            taken = named.get(rid)
            if text.startswith(m, pos) and (
                taken == m or (taken is None and m not in named.values())
            ):
                walk(k + 1, pos + len(m), [*pieces, m], {**named, rid: m})

    walk(0, 0, [], {})
    return found


def _marker_starts(text: str, pos: int, markers: set[str]) -> Iterator[int]:
    """Where a marker starts in ``text`` after ``pos``, in order."""
    return iter(sorted({i for m in markers for i in _find_all(text, m, pos + 1)}))


def _find_all(text: str, sub: str, start: int) -> Iterator[int]:
    i = text.find(sub, start)
    while i >= 0:
        yield i
        i = text.find(sub, i + 1)


def plain_ids(tok: LoadedTokenizer, text: str, added: frozenset[int]) -> list[int]:
    """``text`` as ordinary tokens of ``tok``: where encoding makes an added token of a
    marker's text, the text is encoded in two halves cut inside that marker."""
    enc = tok.tokenizer.encode(text, add_special_tokens=False)
    for tid, (start, end) in zip(enc.ids, enc.offsets, strict=True):
        if tid in added and end - start > 1:
            cut = start + 1
            return plain_ids(tok, text[:cut], added) + plain_ids(tok, text[cut:], added)
    return list(enc.ids)


def aligned_ids(fixture: Fixture, tok: LoadedTokenizer) -> list[int] | None:
    """``raw_output`` as ``tok``'s ids with a marker token exactly where the fixture's ids
    have a special token, and ordinary tokens elsewhere; None when the fixture's vocabulary
    is not in :data:`SPECIAL_RANGES`, or ``raw_output`` cuts along its runs in no way, or
    the ids do not decode back to ``raw_output``.

    Marker text the model wrote just before the same marker token (``<|message|>`` inside
    an argument and after it) cuts in more than one way: the cut kept is the one whose
    ordinary runs take, in ``tok``, the numbers of tokens closest to the fixture's (two
    tokens of ``json`` against fifty of an argument), and only if no other is as close."""
    special = _is_special(fixture)
    if special is None or not fixture.output_token_ids:
        return None
    table = tok.tokenizer.get_added_tokens_decoder()
    by_text = {t.content: i for i, t in table.items()}
    added = frozenset(table)
    runs = _runs(list(fixture.output_token_ids), special)
    scored: list[tuple[int, list[int]]] = []
    for cut in _cuts([rid for rid, _ in runs], fixture.raw_output, set(by_text)):
        ids: list[int] = []
        off = 0
        for (rid, n), piece in zip(runs, cut, strict=True):
            got = [by_text[piece]] if rid is not None else plain_ids(tok, piece, added)
            off += abs(len(got) - n)
            ids += got
        scored.append((off, ids))
    scored.sort(key=lambda s: s[0])
    if not scored or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    ids = scored[0][1]
    return ids if tok.decode(ids) == fixture.raw_output else None
