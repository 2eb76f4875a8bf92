"""Text formatters' promise to the vectorized output path (``runtime/stream/sse_path.py``): while
``idle_trail()`` names the trailing characters (not None), a text that does not end in
one of them comes out of ``text()`` unchanged and leaves the formatter as idle as it was,
so the path may write such a token's text without calling the formatter."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from reasonspan.runtime.core.spec import Trim
from reasonspan.runtime.text.formatters import CallGapFormatter, TrimFormatter
from tests.support.sampling import examples

CHARS = "ab\n \tx<"
"""The characters of the texts: letters, and the ones trims are made of."""

trims = st.builds(
    Trim,
    prefix=st.sampled_from(["", "<think>"]),
    prefix_always=st.booleans(),
    label=st.sampled_from(["", "ab\n", "x"]),
    lead=st.sampled_from(["", "\n", " \n"]),
    lead_max=st.integers(0, 2),
    trail=st.sampled_from(["", "\n", " \n"]),
    trail_max=st.integers(0, 2),
    join=st.sampled_from(["", "\n"]),
)
texts = st.text(CHARS, max_size=4)
ops = st.lists(st.one_of(texts, st.sampled_from(["<marker>", "<finish>"])), max_size=12)


@settings(max_examples=examples(400), deadline=None)
@given(
    trim=trims,
    gaps=st.booleans(),
    steps=ops,
    probe=st.text(CHARS, min_size=1, max_size=4),
)
def test_idle_trail_lets_plain_text_through(
    trim: Trim, gaps: bool, steps: list[str], probe: str
) -> None:
    """After any sequence of texts, markers and finishes: when ``idle_trail()`` is not
    None, a probe text not ending in one of its characters passes through unchanged and
    the formatter is still idle with the same trail; when the probe does end in one,
    nothing is promised (it goes through ``text()``)."""
    inner = TrimFormatter(trim)
    fmt: TrimFormatter | CallGapFormatter = CallGapFormatter(inner) if gaps else inner
    for step in [*steps, ""]:
        trail = fmt.idle_trail()
        if trail is not None and probe[-1] not in trail:
            twin = copy.deepcopy(fmt)
            assert twin.text(probe) == probe
            assert twin.idle_trail() == trail
        if step == "<marker>":
            fmt.marker()
        elif step == "<finish>":
            fmt.finish()
        elif step:
            fmt.text(step)
