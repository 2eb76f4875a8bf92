"""What a family does with chat_template_kwargs, probed rather than declared.

A family's ``resolve_switches`` hook may read keys beyond ``spec.thinking_switches``
(``thinking_mode``, ``reasoning_effort``, ...). Calling it with a mapping that records
what was asked, and then with every probe value, tells the docs table, family detection
and the template profile exactly which switches exist and what each one does, so none of
them keeps a hand-written copy that could drift from the hook.
"""

from __future__ import annotations

import json

import msgspec

from reasonspan.runtime.core.errors import ReasonspanError
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.option_keys import RecordingKwargs as _RecordingKwargs

PROBE_VALUES: tuple[bool | str, ...] = (
    False,
    True,
    "none",
    "disabled",
    "enabled",
    "adaptive",
    "no_think",
    "low",
    "medium",
    "high",
)
"""Values tried for every chat_template_kwargs key a family reads: the bools of on/off
switches and the strings that effort/mode switches use across families."""


class SwitchEffect(msgspec.Struct, frozen=True):
    """One chat_template_kwargs entry that changes how a family starts a turn."""

    key: str
    value: bool | str
    thinking: bool
    prompt_start: bool

    @property
    def kwarg(self) -> str:
        """``key: value`` as a user writes it in JSON."""
        return f"{self.key}: {json.dumps(self.value)}"


def kwargs_read(cls: type[ReasoningParser]) -> tuple[str, ...]:
    """The chat_template_kwargs keys the family's ``resolve_switches`` looks at, in order."""
    rec = _RecordingKwargs()
    cls.resolve_switches(rec)
    keys = [*cls.spec.thinking_switches, *rec.asked]
    return tuple(dict.fromkeys(keys))


def defaults(cls: type[ReasoningParser]) -> tuple[bool, bool]:
    """``(thinking, prompt_start)`` with no chat_template_kwargs."""
    return cls.resolve_switches({})


def switch_effects(cls: type[ReasoningParser]) -> tuple[SwitchEffect, ...]:
    """Every probed ``key: value`` that changes thinking or the turn start from the default.

    A value the hook rejects (InvalidOptionError) is simply not a value of that switch.
    """
    base = defaults(cls)
    out: list[SwitchEffect] = []
    for key in kwargs_read(cls):
        for value in PROBE_VALUES:
            try:
                got = cls.resolve_switches({key: value})
            except (ReasonspanError, TypeError, ValueError):
                continue
            if got != base:
                out.append(SwitchEffect(key, value, got[0], got[1]))
    return tuple(out)
