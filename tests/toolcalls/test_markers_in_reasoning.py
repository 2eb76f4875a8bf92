"""A tool-call marker the model writes inside its reasoning shows there as its text.

No call is made of a marker in the reasoning, and engines that offer tools decode with
``skip_special_tokens=False`` (vLLM's Mistral, InternLM2, Gemma 4 and MiniCPM tool parsers,
SGLang's chat serving), so the text of ``[TOOL_CALLS]``, ``[ARGS]``, ``<|tool_call_begin|>``
or ``<|tool_arg:value|>`` stays in the reasoning, special token or not
(``ParserOutputs.skipped_token_ids``). For every family with a tool-call format, every
marker of the format (its own and its kinds', :meth:`ToolFormat.markers`) that is not a
marker of the family's reasoning machine (those have a meaning of their own there: a start,
an end, a tool marker that ends the reasoning) is written between the family's reasoning
markers; ``parse()``, ``TextSplitter`` at every split and at random splits, and the runtime
(chunks and SSE) must all show its text in the reasoning, make no call, and leave the
answer alone. Where the fixture tokenizer has a marker as one special token, that token
id is what the output holds (the case the old rule dropped).
"""

from __future__ import annotations

from typing import Any

import pytest

import reasonspan
from reasonspan import ReasoningParser
from reasonspan.runtime.parser import registry
from tests.support.fixtures import FAMILY_KWARGS, FAMILY_TOKENIZERS, tokenizer
from tests.support.hostile import TOOLS
from tests.support.paths import every_path

FAMILIES = sorted(cls.spec.name for cls in registry.families() if cls.spec.tool_calls)


def _parser(family: str, kwargs: dict[str, Any] | None = None) -> ReasoningParser:
    tok = tokenizer(FAMILY_TOKENIZERS[family])
    return reasonspan.create_parser_sync(family, tok, dict(kwargs or {}))


def _thinking(family: str) -> dict[str, Any]:
    """The family's options (its declared ones, the defaults first) under which an output
    that writes its reasoning markers reads as reasoning (some families think only when
    asked to)."""
    for kwargs in [{}, *FAMILY_KWARGS.get(family, [])]:
        parser = _parser(family, kwargs)
        spec, tok = parser._machine.spec, parser.tokenizer
        probe = tok.encode(f"{spec.start[0]}probe{spec.end[0]}Done.")
        if (parser.parse(probe).reasoning or "").strip() == "probe":
            return kwargs
    pytest.fail(f"{family}: no declared options make its reasoning markers reasoning")


def _free_markers(parser: ReasoningParser) -> list[str]:
    """The format's markers that are none of the reasoning machine's own."""
    machine = parser._machine
    fmt = machine.spec.tool_calls
    assert fmt is not None
    tok = parser.tokenizer
    out = []
    for marker in fmt.markers():
        tid = tok.single_token_id(marker)
        if tid in machine.id_markers or marker.encode("utf-8") in machine.byte_markers:
            continue
        if tid is None and any(t in machine.id_markers for t in tok.encode(marker)):
            continue  # a piece of it is one of the machine's markers
        out.append(marker)
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_a_tool_marker_in_the_reasoning_shows_as_its_text(family: str) -> None:
    parser = _parser(family)
    spec = parser._machine.spec
    markers = _free_markers(parser)
    if not spec.start or not spec.end or not markers:
        pytest.skip(f"{family}: no reasoning markers, or every format marker is the machine's")
    kwargs = _thinking(family)
    tok = parser.tokenizer
    thought = "Let me think about " + " and ".join(markers) + " and more"
    ids = [
        *tok.encode(spec.start[0]),
        *tok.encode("Let me think about "),
    ]
    for i, marker in enumerate(markers):
        tid = tok.single_token_id(marker)
        ids += [tid] if tid is not None else tok.encode(marker)
        ids += tok.encode(" and " if i < len(markers) - 1 else " and more")
    ids += [*tok.encode(spec.end[0]), *tok.encode("Done.")]
    res = every_path(lambda: _parser(family, kwargs), None, ids, TOOLS, "stop")
    assert thought in (res.reasoning or ""), (markers, res.reasoning)
    assert res.tool_calls == []
    assert (res.content or "").strip() == "Done."


def test_some_marker_is_a_special_token_the_old_rule_dropped() -> None:
    """The families above include ones whose marker is a special token of the fixture
    (else the test would not see the rule): Mistral's ``[ARGS]`` among them."""
    parser = _parser("mistral")
    tok = parser.tokenizer
    args = tok.single_token_id("[ARGS]")
    assert args is not None and args in tok.special_ids
    assert "[ARGS]" in _free_markers(parser)
    assert args not in parser.skipped_token_ids()
