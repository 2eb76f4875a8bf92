"""Which lane each request of a batch takes, decided once, when it is admitted.

A request's tokens go by one of three lanes, fastest first:

- :data:`TABLE`: every token by the flat tables (single-token markers), no parser call;
- :data:`HOLD_BACK`: by table until a token needs holding (text markers, a cut, a lead
  rule), then through the request's own parser until nothing is held
  (``runtime/batch/fallback.py``);
- :data:`PARSER`: every token through the request's own ``parser.stream()`` (a custom
  machine such as harmony's channels, or a custom parser).

And among table-routed requests, the scalar steps (``runtime/batch/small.py``: a step of a
few requests in plain Python, or of one request alone) take only a row whose request needs
nothing per token beyond the tables: :data:`SCALAR_FORBIDDEN` names what rules them out.

A request's output, in the runtime's SSE path, takes one of three forms: event bytes
written from token tables (:data:`FORM_BYTES`), decoded on the path by its own decoder
(:data:`FORM_DECODE`), or the exact per-request path (:data:`FORM_EXACT`). :data:`FORM_FORBIDDEN`
says which request options rule out which forms (the output path applies it while the
request runs, since some of them end: a held reasoning swap ends at the first content).

Each family quirk or request option is declared here once, by naming the lanes it rules
out (:data:`LANE_FORBIDDEN`); a request takes the fastest lane nothing of it rules out.
The lane is per request, kept in the slot arrays (``Slots.lane``, ``Slots.scalar``): one
harmony or hold-back request in a batch leaves every other request on its own lane, and a
step dispatches on how many requests each lane holds (``Slots.n_fallback``,
``Slots.n_hybrid``) and on each row's own flag, never on a batch-wide switch.

Owns the lane numbers, the tables of what rules them out and the choice. It must not know
slots, tables or steps: it sees a parser and its machine only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.parser.contract import ReasoningParser

TABLE = 0
"""Every token by table."""
HOLD_BACK = 1
"""By table until a token needs holding, then by the request's parser while it holds."""
PARSER = 2
"""Every token through the request's own parser."""
LANES = (TABLE, HOLD_BACK, PARSER)
"""Fastest first: a request takes the first one nothing of it rules out."""
LANE_NAMES = ("table", "hold-back", "parser")

FORM_BYTES = 0
"""Output events written from per-token tables of escaped text."""
FORM_DECODE = 1
"""Output decoded on the path by the request's own decoder, written from templates."""
FORM_EXACT = 2
"""The exact per-request output path (decoder, formatters, extractors, stop matchers)."""
FORM_NAMES = ("bytes", "decode", "exact")

_NOT_TABLE = frozenset({TABLE})
_NOT_TABLE_OR_HOLD = frozenset({TABLE, HOLD_BACK})

LANE_FORBIDDEN: Mapping[str, frozenset[int]] = MappingProxyType(
    {
        # A parser class of its own (stream / finish overridden): only it knows its state.
        "custom_parser": _NOT_TABLE_OR_HOLD,
        # A machine of its own (harmony's channels: ``run`` overridden): no tables.
        "custom_machine": _NOT_TABLE_OR_HOLD,
        # Markers matched on token bytes: a token may need holding.
        "text_markers": _NOT_TABLE,
        # A cut marker (PLaMo): once it passes, the parser labels every later token.
        "cut": _NOT_TABLE,
        # A lead rule: the output's first tokens are decided by the parser.
        "lead": _NOT_TABLE,
        # Reasoning-as-content (nemotron_v3's swap) with text markers: the parser records
        # every token for ``finish()``. (On single-token markers the table lane's finish
        # applies the swap itself, so it rules out nothing there.)
        "swap": frozenset({HOLD_BACK}),
    }
)
"""Per feature of a request's parser, the lanes it rules out."""

SCALAR_FORBIDDEN: frozenset[str] = frozenset({"budget", "grammar", "structured"})
"""Request options that rule out the scalar steps (per-token forcing or a grammar gate are
the vectorized step's), besides any lane but :data:`TABLE`."""

FORM_FORBIDDEN: Mapping[str, frozenset[int]] = MappingProxyType(
    {
        # Each of these adds to a text chunk what only the exact path writes.
        "stop": frozenset({FORM_BYTES, FORM_DECODE}),
        "tools": frozenset({FORM_BYTES, FORM_DECODE}),
        "citations": frozenset({FORM_BYTES, FORM_DECODE}),
        "swap": frozenset({FORM_BYTES, FORM_DECODE}),
        "logprobs": frozenset({FORM_BYTES, FORM_DECODE}),
        # A tokenizer whose token texts are not their bytes: no token tables.
        "no_token_text": frozenset({FORM_BYTES, FORM_DECODE}),
        # A call extractor inside a region holds tokens: nothing passes it.
        "call_region": frozenset({FORM_DECODE}),
    }
)
"""Per request option or state, the output forms it rules out (the output path's
``refresh`` is where they are applied, as the request runs)."""


def lane_features(parser: ReasoningParser) -> list[str]:
    """The features of ``parser`` that :data:`LANE_FORBIDDEN` knows."""
    cls = type(parser)
    if cls.stream is not ReasoningParser.stream or cls.finish is not ReasoningParser.finish:
        return ["custom_parser"]
    machine = parser.machine
    if type(machine).run is not Machine.run:
        return ["custom_machine"]
    found = []
    if machine.has_byte_markers:
        found.append("text_markers")
    if machine.has_cut:
        found.append("cut")
    if machine.has_lead:
        found.append("lead")
    if parser.may_return_reasoning_as_content:
        found.append("swap")
    return found


def choose_lane(features: Iterable[str]) -> int:
    """The fastest lane none of ``features`` rules out."""
    ruled_out: set[int] = set()
    for feature in features:
        ruled_out |= LANE_FORBIDDEN[feature]
    return next(lane for lane in LANES if lane not in ruled_out)


def lane_of(parser: ReasoningParser) -> int:
    """The lane a request of ``parser`` takes, given room in the batch's tables."""
    return choose_lane(lane_features(parser))
