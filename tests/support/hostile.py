"""Tool calls in every family's own format, with well-formed and hostile argument values:
shared by the fuzz of every path (``test_fuzz_paths``) and the hostile-call tests
(``test_hostile_calls``). The calls are the ``CALL_TEMPLATES`` the family test modules
declare, so adding a family touches its own test module only."""

from __future__ import annotations

import random

from reasonspan import ReasoningParser
from reasonspan.runtime.core.nesting import MAX_NESTING
from tests.support.fixtures import declared_calls

CALLS: dict[str, tuple[str, ...]] = declared_calls()
"""One call of each family's own format to ``f`` with argument ``a`` (``V`` is the value),
by family: each family's test module declares its own at its top (``CALL_TEMPLATES``, read
by :func:`tests.support.fixtures.declared_calls` without importing the module);
:func:`test_each_call_template_reads` checks each reads as that call with a plain value,
and ``test_every_family_with_a_tool_format_has_a_call_template`` that every format has one."""

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {"type": "object", "properties": {"a": {"type": "array"}}},
        },
    }
]

WORDS = (" The", " answer", " is", ".", ",", " 42", "\n", "\n\n", " ", "Hmm", " x", '"', "{", "}")


def _deep(rng: random.Random) -> str:
    n = rng.choice((2, 50, MAX_NESTING, MAX_NESTING + 1, 300, 1200))
    if rng.random() < 0.5:
        return "[" * n + "1" + "]" * n
    return '{"a":' * n + "1" + "}" * n


def value(rng: random.Random) -> str:
    """A well-formed or a hostile argument value (as text in the call's own syntax)."""
    return rng.choice(
        (
            lambda: "[1, 2]",
            lambda: '["x", {"y": null}]',
            lambda: "[1.5e3]",
            lambda: _deep(rng),
            lambda: "[" + "9" * rng.choice((20, 4301, 6000)) + "]",
            lambda: "[0x" + "f" * rng.choice((8, 5000)) + "]",
            lambda: "[1e999]",
            lambda: "[-1e999, 1]",
            lambda: "[1, {",
            lambda: "[1, 2]]]",
            lambda: '["</tool_call> and <|call|> in a string"]',
            lambda: "[b'z']",
            lambda: "[" + "1, " * rng.choice((3, 800)) + "1]",
        )
    )()


def _markers(parser: ReasoningParser) -> list[str]:
    spec = parser.spec
    fmt = spec.tool_calls
    found = [*spec.start, *spec.end, *spec.tool]
    if fmt is not None:
        found += [*fmt.open, *fmt.close]
    return found


def output(rng: random.Random, family: str, parser: ReasoningParser) -> str:
    """A random output of the family: markers, words and calls (whole, cut short, or with
    a hostile value)."""
    markers = _markers(parser)
    calls = CALLS.get(family, ())
    parts: list[str] = []
    for _ in range(rng.randint(0, 24)):
        r = rng.random()
        if r < 0.15 and markers:
            parts.append(rng.choice(markers))
        elif r < 0.3 and calls:
            call = rng.choice(calls).replace("V", value(rng))
            if rng.random() < 0.15:
                call = call[: rng.randint(0, len(call))]
            parts.append(call)
        else:
            parts.append(rng.choice(WORDS))
    return "".join(parts)
