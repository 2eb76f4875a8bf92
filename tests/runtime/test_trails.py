"""``runtime/text/trails.py`` against the trim itself: a path that holds a trim's trailing run
while the trim is otherwise idle (``take``, ``take_all``) and hands it back (``hand_back``)
before the trim sees anything else gives, row for row, what the trim alone gives, for any
trim with trailing characters, any token texts, and markers and the end at any point.

The batch tests check the same through real tokenizers and whole paths
(tests/batch/test_batch_text.py, tests/batch/test_sse_path.py); this one reaches the corners of the
trim (labels, leads, joins, prefixes, ``trail_max``) that real families leave out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reasonspan.runtime.core.labels import REASONING
from reasonspan.runtime.core.spec import Trim
from reasonspan.runtime.text.formatters import TrimFormatter
from reasonspan.runtime.text.trails import Trail, hand_back, take, take_all
from tests.runtime.test_formatters import trims
from tests.support.sampling import examples

VOCAB = ["a", "b.", "\n", "\n\n", ".\n\n", " x\n", " \n", "é", "ab\n", "\t", " ", "x"]
"""Token texts (id = index): plain ones, runs of trail characters alone, and texts ending
in such a run."""
STRINGS = np.array(VOCAB, dtype=object)


def trail_for(chars: str) -> Trail:
    """The :data:`Trail` of :data:`VOCAB` for a trim's trail characters, as
    ``TokenText.plain`` and ``TokenText.trail_splits`` make it for a real vocabulary."""
    mask = bytes(1 if text and text[-1] not in chars else 0 for text in VOCAB)
    splits = {}
    for i, text in enumerate(VOCAB):
        if text and text[-1] in chars:
            kept = text.rstrip(chars)
            splits[i] = (kept, text[len(kept) :])
    return mask, splits


class Holder:
    """The decoder's side of ``hand_back``: its reasoning formatter."""

    def __init__(self, fmt: TrimFormatter) -> None:
        self.fmt = fmt

    def formatter_text(self, channel: int, text: str) -> str:
        assert channel == REASONING
        return self.fmt.text(text)


trailing = trims.filter(lambda trim: bool(trim.trail))
"""The formatter tests' trims (tests/runtime/test_formatters.py), those with trailing characters."""
rows = st.lists(st.integers(0, len(VOCAB) - 1), min_size=1, max_size=3)
ops = st.lists(st.one_of(rows, st.just("<marker>")), max_size=16)


@settings(max_examples=examples(400), deadline=None)
@given(trim=trailing, steps=ops)
def test_a_held_run_comes_out_as_the_trim_gives_it(trim: Trim, steps: list[Any]) -> None:
    ref = TrimFormatter(trim)
    sub = TrimFormatter(trim)
    holder: Any = Holder(sub)
    trail = trail_for(trim.trail)
    tails = ["", ""]
    for op in steps:
        if op == "<marker>":
            hand_back(holder, tails)
            assert sub.marker() == ref.marker()
            continue
        want = "".join(ref.text(VOCAB[t]) for t in op)
        got = None
        # The path takes a row while the trim is idle, or idle but for the run it holds.
        if tails[0] or sub.idle_trail() is not None:
            if len(op) == 1:
                got = take(trail, STRINGS, tails, 0, op[0])
            else:
                got = take_all(trail, STRINGS, tails, 0, op)
        if got is None:
            hand_back(holder, tails)
            got = "".join(sub.text(VOCAB[t]) for t in op)
        assert got == want, (op, tails)
    hand_back(holder, tails)
    assert sub.finish() == ref.finish()
    assert not tails[0]


def test_the_held_path_is_taken() -> None:
    """Otherwise the property above would compare the trim with itself: a paragraph break
    (``.\\n\\n``) and the text after it are taken while the run is held."""
    trim = Trim(trail="\n")
    sub = TrimFormatter(trim)
    tails = ["", ""]
    trail = trail_for("\n")
    assert sub.idle_trail() is not None
    assert take(trail, STRINGS, tails, 0, VOCAB.index(".\n\n")) == "."
    assert tails[0] == "\n\n"
    assert take(trail, STRINGS, tails, 0, VOCAB.index("\n")) == ""
    assert tails[0] == "\n\n\n"
    assert take(trail, STRINGS, tails, 0, VOCAB.index("a")) == "\n\n\na"
    assert tails[0] == ""
