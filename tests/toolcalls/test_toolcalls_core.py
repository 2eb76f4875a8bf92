"""Every family whose calls trim the whitespace around them keeps one separator between
the answer texts on both sides of a call (``CallGapFormatter``), on every path: a table
over the families (its call templates are ``tests/support/hostile.CALLS``). Each family's
own tool-call cases live in its module (``tests/families/test_<family>.py``; the Hermes
extractor's on Qwen3 in ``test_qwen3.py``).
"""

from __future__ import annotations

import random

import anyio
import pytest

from reasonspan.runtime.core.tool_format import ToolFormat
from reasonspan.runtime.parser import registry
from tests.runtime.test_fuzz_paths import _kwargs, _parser, parsed, runtime_paths, split
from tests.support.hostile import CALLS


def _trims_gaps(fmt: ToolFormat | None, family: str) -> bool:
    # Llama 4: text after ``<|python_end|>`` still loses the call (a limit of its own,
    # worked on apart from this one); its bare ``[`` list runs to the end of the output.
    return fmt is not None and fmt.trim_gaps and bool(fmt.close) and family != "llama4_pythonic"


# Read from each family's class, so that collecting builds no parser; ``declared`` reads
# its format from the checkpoint, and the fixture's declaration trims.
GAP_FAMILIES = [
    (f, k)
    for f in sorted(CALLS)
    for k in _kwargs(f)
    if f == "declared" or _trims_gaps(registry.get_parser_class(f).spec.tool_calls, f)
]
"""Every family whose calls have a close marker (text can follow them) and whose format
trims the whitespace around them (``ToolFormat.trim_gaps``)."""


@pytest.mark.parametrize(("family", "kwargs"), [(f, k) for f in sorted(CALLS) for k in _kwargs(f)])
def test_the_gap_families_are_the_parsers_that_trim(family: str, kwargs: str) -> None:
    """Each family's built parser (one case at a time: the test runs with the case's
    tokenizer's other tests) agrees with GAP_FAMILIES, read from the classes."""
    trims = _trims_gaps(_parser(family, kwargs).spec.tool_calls, family)
    assert trims == ((family, kwargs) in GAP_FAMILIES)


@pytest.mark.parametrize(("family", "kwargs"), GAP_FAMILIES)
def test_every_trimming_family_keeps_one_separator(family: str, kwargs: str) -> None:
    """Each family's own call markup between two answer texts, through every path: the
    text before the call (as the family gives it for the same output without the call),
    one separator, the text after."""
    p = _parser(family, kwargs)
    end = p.tokenizer.decode(p.end_marker_token_ids()) if p.spec.end else ""
    prefix = "Hmm." + end if end else ""
    before = parsed(p, p.tokenizer.encode(prefix + "Before."))[1]
    rng = random.Random(family + kwargs)
    for template in CALLS[family]:
        call_text = template.replace("V", "[1]")
        for ws_before, ws_after, sep in [
            ("\n\n", "\n\n", "\n\n"),
            (" ", "\n", " "),
            ("", "\n", "\n"),
            ("\n", "", "\n"),
        ]:
            text = prefix + "Before." + ws_before + call_text + ws_after + "After."
            ids = p.tokenizer.encode(text)
            want = parsed(p, ids)
            assert want[1] == before + sep + "After.", (template, text)
            assert len(want[2]) == 1, (template, text)
            assert split(p, ids, rng) == want, text
            ((chunks, sse),) = anyio.run(runtime_paths, p, [ids], rng.randrange(1 << 30))
            assert chunks == want, ("chunks", text)
            assert sse == want, ("sse", text)
