"""The public CanIToolCall corpus in the project's own test suite, through the package's
pytest plugin (one test per fixture, ids = fixture ids): each fixture is replayed through
``parse()``, ``TextSplitter`` under every default chunking strategy and the async runtime
(see ``canitoolcall_replay``) and judged by the corpus' own checks.

docs/canitoolcall.md's figures are made from the stored replay ``docs/canitoolcall.json``
(``python -m tests.support.canitoolcall_replay --write``): each fixture replayed here must
have the status stored for it, both ways of sending calls, and the page's block must be
what that file renders, so the page can never say what a replay does not."""

from __future__ import annotations

import json

import canitoolcall
import pytest
from canitoolcall.fixtures import Fixture
from canitoolcall.results import Status

from tests.support import canitoolcall_figures as figures
from tests.support.canitoolcall_replay import KNOWN_MISSES, STREAMED_BREAKS, corpus, replay

REDO = "rerun `python -m tests.support.canitoolcall_replay --write`"
VERSION, STORED = figures.load()

# Checks that no fixture may fail, known miss or not: every parse of one output agrees.
_ALWAYS = ("stream_equals_nonstream", "split_invariance", "no_leakage")


# CI replays a third of the corpus, at least one fixture per reference model (so every
# parser the corpus exercises); `--long` replays all of it.
@pytest.mark.sampled(every=3, by=lambda params: params["canitoolcall_fixture"].reference_model)
def test_conformance(canitoolcall_fixture: Fixture) -> None:
    got = replay(canitoolcall_fixture)
    stored = STORED.get(canitoolcall_fixture.id, {})
    fresh = {"whole": got.whole.value, "streamed": got.status.value, "ids_from": got.ids_from}
    assert {k: stored.get(k) for k in fresh} == fresh, f"docs/canitoolcall.json is stale: {REDO}"
    bad = [
        f"{r.check} [{r.strategy}]: {r.status.value} {r.detail or ''}"
        for r in got.rows
        if r.status in (Status.FAIL, Status.ERROR)
    ]
    if canitoolcall_fixture.id in STREAMED_BREAKS:
        # Only the streamed-arguments observation misses, and never with a call the whole
        # read lacks whose arguments parse: what was sent of a broken call is unfinished.
        assert bad, f"{canitoolcall_fixture.id} passes now: drop it from STREAMED_BREAKS"
        assert all("runtime-arguments" in line for line in bad), "\n".join(bad)
        whole = set(got.observation.nonstream.tool_calls)
        for call in got.observation.streams["runtime-arguments"].tool_calls:
            if call not in whole:
                with pytest.raises(ValueError):
                    json.loads(call.arguments_raw or "")
        pytest.xfail(STREAMED_BREAKS[canitoolcall_fixture.id])
    always = [line for line in bad if line.split(" ", 1)[0] in _ALWAYS]
    assert not always, "\n".join(always)
    if canitoolcall_fixture.id in KNOWN_MISSES:
        assert bad, f"{canitoolcall_fixture.id} passes now: drop it from KNOWN_MISSES"
        pytest.xfail(KNOWN_MISSES[canitoolcall_fixture.id])
    assert got.status in (Status.PASS, Status.SOFT_PASS), "\n".join(bad)


def test_the_stored_replay_is_of_this_corpus_and_its_misses_are_known() -> None:
    """The stored replay covers exactly the installed corpus' fixtures, and what it does
    not pass is exactly what the harness lists with a reason (KNOWN_MISSES for both ways
    of sending calls, STREAMED_BREAKS for streamed arguments only)."""
    assert canitoolcall.__version__ == VERSION, f"the corpus changed: {REDO}"
    assert set(STORED) == {f.id for f in corpus()}, f"the corpus changed: {REDO}"
    ok = ("pass", "soft_pass")
    missed = {
        mode: {f for f, row in STORED.items() if row[mode] not in ok} for mode, _ in figures.MODES
    }
    assert missed["whole"] == set(KNOWN_MISSES)
    assert missed["streamed"] == set(KNOWN_MISSES) | set(STREAMED_BREAKS)


def test_the_page_shows_the_stored_replay() -> None:
    """docs/canitoolcall.md's figures block is exactly what the stored replay renders."""
    page = figures.PAGE.read_text(encoding="utf-8")
    assert figures.block(page) == figures.render(STORED), f"docs/canitoolcall.md is stale: {REDO}"


@pytest.mark.parametrize(
    "fixture_id",
    [
        "gpt-oss/harmony-marker-in-arguments",
        "gpt-oss/harmony-marker-in-reasoning",
        "mistral/v13think-marker-in-arguments",
    ],
)
def test_markers_written_as_text_stay_text_on_a_stand_in(fixture_id: str) -> None:
    """A model that writes a marker as text (in an argument, in its reasoning): on the
    stand-in tokenizer the replay's ids have a marker token exactly where the model's own
    ids have a special token, in the same order, and decode to ``raw_output``; encoding
    ``raw_output`` instead makes more marker tokens than the model wrote."""
    from tests.support.canitoolcall_ids import _is_special, aligned_ids
    from tests.support.canitoolcall_replay import _parser

    [fixture] = [f for f in corpus() if f.id == fixture_id]
    _, tok, _ = _parser(fixture)
    special = _is_special(fixture)
    assert special is not None and fixture.output_token_ids
    ids = aligned_ids(fixture, tok)
    assert ids is not None and tok.decode(ids) == fixture.raw_output
    added = tok.tokenizer.get_added_tokens_decoder()
    markers = [added[i].content for i in ids if i in added]
    written = [i for i in fixture.output_token_ids if special(i)]
    assert len(markers) == len(written)
    assert len({(m, w) for m, w in zip(markers, written, strict=True)}) == len(set(written))
    encoded = [i for i in tok.encode(fixture.raw_output) if i in added]
    assert len(encoded) > len(markers)
