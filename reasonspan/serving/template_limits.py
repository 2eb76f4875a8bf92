"""How much work one chat-template rendering may do, and the checks that enforce it.

A chat template is a program shipped with a model folder (or sent by whoever configures a
server), and jinja2 runs it without limits: a loop of 10^10 iterations hangs startup, one
that loops only on some message content ties up a worker thread per request for good, and
``'x' * 4000000000`` allocates 4 GB in one step. A Python thread cannot be killed, so the
only bound that holds is one the rendering checks itself, often enough that it cannot
outlive it: every loop, call and filter spends an *operation* and looks at the clock, and
every step that could build a large value in one C call (``*``, ``**``, ``+``, ``%``,
``~``, padding and replacing) is sized *before* it runs. This module holds the limits and
those checks; it needs no jinja2 (:mod:`.template_sandbox` wires them into jinja2).

What stays outside the bounds: work between two checks is one C-level step over values the
bounds already cap (sorting a 100,000-item list, joining a capped string), so a rendering
overruns its deadline by at most one such step.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from contextvars import ContextVar
from time import monotonic
from typing import Any

import msgspec

DEFAULT_MAX_OPERATIONS = 1_000_000
"""Loop iterations, calls and filter applications of one rendering. Real templates spend 2
to 6 per message (1,002 messages and 4 tools: 2,005 in DeepSeek-R1's template, 5,527 in
Qwen3.5's), so even a 4 MB body of 100,000 one-word messages fits, while a runaway loop
spends a million in well under a second and fails fast."""

DEFAULT_MAX_CHARS = 16 * 1024 * 1024
"""Characters of the rendered prompt, and of any one value a rendering builds (strings by
their characters, lists and dicts by their items plus what they hold). Four times the
server's default request body (4 MB): a template may repeat or escape the conversation, but
no real prompt is larger. Raise it with the body limit."""

DEFAULT_TIMEOUT = 5.0
"""Seconds of wall-clock time for one rendering. Real renderings take milliseconds; this
catches a template whose every step is slow (sorting a large list in a loop) before it
holds a server's worker thread long enough to matter."""

MAX_COUNT = 100_000
"""The largest count a template may pass to ``batch`` or ``slice`` (each makes that many
lists in one step); jinja2's sandbox bounds ``range`` the same way."""

MAX_POWER_BITS = 1 << 16
"""The largest integer ``**`` may produce, in bits (about 20,000 digits): a bigger power
takes seconds in one C call, and no chat template needs one."""

MAX_JSON_INDENT = 64
"""The widest ``tojson(indent=...)``: the indent is repeated on every line of the JSON."""


class RenderLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The budget of one chat-template rendering (defaults: :data:`DEFAULT_MAX_OPERATIONS`,
    :data:`DEFAULT_MAX_CHARS`, :data:`DEFAULT_TIMEOUT`). Set the process default with
    :func:`set_default_render_limits` (``reasonspan serve --template-...``) or pass one to
    ``render_chat(limits=...)``."""

    max_operations: int = DEFAULT_MAX_OPERATIONS
    """Loop iterations, calls and filter applications (a loop over a list spends its length
    when it starts)."""
    max_chars: int = DEFAULT_MAX_CHARS
    """Characters of the output, and the size of any one value the template builds."""
    timeout: float = DEFAULT_TIMEOUT
    """Wall-clock seconds."""

    def __post_init__(self) -> None:
        for name in ("max_operations", "max_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"RenderLimits.{name} must be an integer >= 1, got {value!r}")
        t = self.timeout
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t <= 0:
            raise ValueError(f"RenderLimits.timeout must be a finite number > 0, got {t!r}")


_default_limits = RenderLimits()


def default_render_limits() -> RenderLimits:
    """The limits a rendering gets when it is given none."""
    return _default_limits


def set_default_render_limits(limits: RenderLimits) -> RenderLimits:
    """Make ``limits`` the process default (a server sets it once at startup); returns the
    previous default, so a caller can put it back."""
    global _default_limits
    if not isinstance(limits, RenderLimits):
        raise TypeError(f"expected RenderLimits, got {type(limits).__name__}")
    previous, _default_limits = _default_limits, limits
    return previous


HOW_TO_RAISE = {
    "max_operations": "--template-max-operations",
    "max_chars": "--template-max-chars",
    "timeout": "--template-timeout",
}
"""The ``reasonspan serve`` flag that sets each limit, for error messages."""


class BudgetExceeded(Exception):
    """Raised inside a rendering when it spends past a limit; the renderer turns it into a
    :class:`~reasonspan.serving.templates.TemplateBudgetError` naming the template. Not a
    ValueError, TypeError or LookupError: jinja2 swallows some of those on its way out."""

    def __init__(self, budget: str, limit: float, what: str) -> None:
        super().__init__(what)
        self.budget = budget
        self.limit = limit
        self.what = what


_TEXT = (str, bytes)
_COLLECTION = (list, tuple, dict, set, frozenset)
_SIZED = _TEXT + _COLLECTION
_CLOCK_EVERY = 4096
"""Items weighed between two looks at the clock."""


class Budget:
    """What one rendering has left; the current one is :data:`CURRENT` (per thread)."""

    __slots__ = ("deadline", "limits", "max_chars", "ops_left")

    def __init__(self, limits: RenderLimits) -> None:
        self.limits = limits
        self.max_chars = limits.max_chars
        self.ops_left = limits.max_operations
        self.deadline = monotonic() + limits.timeout

    def spend(self, n: int = 1) -> None:
        """``n`` operations, and a look at the clock."""
        self.ops_left -= n
        if self.ops_left < 0:
            limit = self.limits.max_operations
            raise BudgetExceeded(
                "max_operations", limit, f"more than {limit:,} loop iterations, calls and filters"
            )
        if monotonic() > self.deadline:
            seconds = self.limits.timeout
            raise BudgetExceeded("timeout", seconds, f"it ran longer than {seconds:g} s")

    def fits(self, size: int, what: str) -> None:
        """Refuse a value of ``size`` characters/items before it is built."""
        if size > self.max_chars:
            raise BudgetExceeded(
                "max_chars",
                self.max_chars,
                f"{what} of {size:,} characters or items, over the limit of {self.max_chars:,}",
            )

    def check(self, value: Any, what: str) -> Any:
        """A value just built, refused when it is over the limit (so nothing larger can be
        built from it); returned as it is otherwise. Collections count their own items
        only (O(1)): what they hold is shared, not copied, until it is written out, and
        :meth:`weigh` sizes it there."""
        if isinstance(value, _SIZED) and len(value) > self.max_chars:
            self.fits(len(value), what)
        return value

    def weigh(self, value: Any) -> int:
        """The characters of the strings in ``value`` plus the items of its collections,
        nested: about what writing it out (``str``, ``tojson``, ``join``) builds. Counting
        stops once past the limit, and looks at the clock as it goes, so weighing a huge
        value costs no more than the budget."""
        if isinstance(value, _TEXT):
            return len(value)
        limit = self.max_chars
        total = 0
        seen = 0
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, _TEXT):
                total += len(v)
            elif isinstance(v, list | tuple | set | frozenset):
                total += len(v)
                stack.extend(v)
            elif isinstance(v, dict):
                total += len(v)
                stack.extend(v.keys())
                stack.extend(v.values())
            else:
                total += 1
            if total > limit:
                break
            seen += 1
            if seen % _CLOCK_EVERY == 0:
                self.spend(0)
        return total

    def written(self, value: Any, what: str) -> None:
        """Refuse to write out a value heavier than the limit (before ``str()`` does)."""
        if not isinstance(value, _TEXT):
            self.fits(self.weigh(value), what)


CURRENT: ContextVar[Budget | None] = ContextVar("reasonspan_template_budget", default=None)
"""The budget of the rendering running in this thread (None outside a rendering, e.g. while
jinja2 folds constants at compile time)."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_SEQUENCE = (str, bytes, list, tuple)


def check_binop(budget: Budget, op: str, left: Any, right: Any) -> None:
    """Size ``left op right`` before Python builds it."""
    if op == "*":
        seq, n = (left, right) if _is_int(right) else (right, left)
        if isinstance(seq, _SEQUENCE) and _is_int(n) and n > 1:
            budget.fits(len(seq) * n, "'*' would build a value")
    elif op == "+":
        if isinstance(left, _SEQUENCE) and isinstance(right, _SEQUENCE):
            budget.fits(len(left) + len(right), "'+' would build a value")
    elif op == "**":
        if _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1:
            bits = abs(left).bit_length() * right
            if bits > MAX_POWER_BITS:
                raise BudgetExceeded(
                    "max_chars",
                    budget.max_chars,
                    f"'**' would build an integer of about {bits:,} bits (at most "
                    f"{MAX_POWER_BITS:,})",
                )
    elif op == "%" and isinstance(left, _TEXT):
        check_percent_format(budget, left, right)


_PERCENT = re.compile(r"%(?:\([^)]*\))?[#0+ -]*(\*|\d+)?(?:\.(\*|\d+))?")
_BPERCENT = re.compile(rb"%(?:\([^)]*\))?[#0+ -]*(\*|\d+)?(?:\.(\*|\d+))?")
_FIELD_SPEC = re.compile(r"\{[^{}:]*:([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")
_DIGITS = re.compile(r"\d+")


def _args_fit(budget: Budget, widths: list[int], values: list[Any], starred: bool) -> None:
    """The widths a format names, its arguments as written out, and (when a width comes
    from an argument) its integer arguments as widths."""
    for w in widths:
        budget.fits(w, "a format width")
    for v in values:
        if starred and _is_int(v):
            budget.fits(abs(v), "a format width")
        budget.written(v, "a format argument written out")


def check_percent_format(budget: Budget, fmt: str | bytes, args: Any) -> None:
    """``fmt % args`` pads to the widths it names: refuse a width over the limit."""
    widths: list[int] = []
    starred = False
    matches = _PERCENT.finditer(fmt) if isinstance(fmt, str) else _BPERCENT.finditer(fmt)
    for m in matches:
        for g in m.groups():
            if g in ("*", b"*"):
                starred = True
            elif g:
                widths.append(int(g))
    if isinstance(args, tuple | list):
        values = list(args)
    elif isinstance(args, Mapping):
        values = list(args.values())
    else:
        values = [args]
    _args_fit(budget, widths, values, starred)


def check_str_format(
    budget: Budget, fmt: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """``fmt.format(...)`` / ``fmt.format_map(...)``: the widths in its format specs, and
    any width given as an argument (``{:{}}``)."""
    widths: list[int] = []
    starred = False
    for m in _FIELD_SPEC.finditer(fmt):
        spec = m.group(1)
        starred = starred or "{" in spec
        widths.extend(int(d) for d in _DIGITS.findall(spec))
    values = [*args, *kwargs.values()]
    values.extend(v for a in args if isinstance(a, Mapping) for v in a.values())
    _args_fit(budget, widths, values, starred)


def _replace_size(s: str | bytes, old: Any, new: Any, count: Any = -1) -> int:
    if not isinstance(old, _TEXT) or not isinstance(new, _TEXT) or type(old) is not type(s):
        return len(s)
    n = s.count(old) if old else len(s) + 1  # type: ignore[arg-type]
    if _is_int(count) and count >= 0:
        n = min(n, count)
    return len(s) + n * max(0, len(new) - len(old))


def check_method(budget: Budget, s: str | bytes, name: str, args: tuple[Any, ...]) -> None:
    """A string method that can grow its string in one call, sized first."""
    if name in ("center", "ljust", "rjust", "zfill"):
        if args and _is_int(args[0]):
            budget.fits(args[0], f"str.{name}() would build a string")
    elif name == "expandtabs":
        tab = args[0] if args and _is_int(args[0]) else 8
        tabs = s.count("\t") if isinstance(s, str) else s.count(b"\t")
        budget.fits(len(s) + tabs * max(tab, 0), "str.expandtabs() would build a string")
    elif name == "replace":
        budget.fits(_replace_size(s, *args[:3]), "str.replace() would build a string")
    elif name == "join" and args:
        budget.fits(joined_size(budget, s, args[0]), "str.join() would build a string")
    elif name == "translate" and args and isinstance(args[0], dict):
        longest = max((len(v) for v in args[0].values() if isinstance(v, _TEXT)), default=1)
        budget.fits(len(s) * max(longest, 1), "str.translate() would build a string")


def joined_size(budget: Budget, sep: Any, items: Any) -> int:
    """The size of ``sep.join(items)`` for a list or tuple (the caller makes an iterator
    a list first)."""
    if not isinstance(items, list | tuple):
        return 0
    total = len(sep) * max(len(items) - 1, 0) if isinstance(sep, _TEXT) else 0
    for x in items:
        total += len(x) if isinstance(x, _TEXT) else budget.weigh(x)
        if total > budget.max_chars:
            break
    return total


SIZED_FILTERS = frozenset(
    {
        "center",
        "indent",
        "wordwrap",
        "batch",
        "slice",
        "format",
        "replace",
        "join",
        "tojson",
        "string",
        "pprint",
    }
)
"""The filters :func:`check_filter` sizes before they run."""


def check_filter(budget: Budget, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The filters that can build a large value in one step, sized first (``args[0]`` is
    the filtered value)."""
    if not args:
        return
    value, rest = args[0], args[1:]

    def arg(i: int, key: str, default: Any = None) -> Any:
        return rest[i] if len(rest) > i else kwargs.get(key, default)

    if name == "center":
        width = arg(0, "width", 80)
        if _is_int(width):
            budget.fits(width, "the center filter would build a string")
    elif name == "indent" and isinstance(value, str):
        width = arg(0, "width", 4)
        w = width if _is_int(width) else len(width) if isinstance(width, str) else 0
        lines = value.count("\n") + 1
        budget.fits(len(value) + lines * max(w, 0), "the indent filter would build a string")
    elif name == "wordwrap" and isinstance(value, str):
        width, wrap = arg(0, "width", 79), arg(2, "wrapstring", "\n")
        if _is_int(width) and isinstance(wrap, str):
            lines = len(value) // max(width, 1) + value.count(" ") + 1
            budget.fits(len(value) + lines * len(wrap), "the wordwrap filter would build a string")
    elif name in ("batch", "slice"):
        count = arg(0, "linecount" if name == "batch" else "slices")
        if _is_int(count) and count > MAX_COUNT:
            raise BudgetExceeded(
                "max_chars", budget.max_chars, f"{name}({count:,}): at most {MAX_COUNT:,}"
            )
    elif name == "format" and isinstance(value, str):
        check_percent_format(budget, value, kwargs or rest)
    elif name == "replace" and isinstance(value, str):
        old, new, count = arg(0, "old"), arg(1, "new"), arg(2, "count")
        budget.fits(
            _replace_size(value, old, new, -1 if count is None else count),
            "the replace filter would build a string",
        )
    elif name == "join":
        if arg(1, "attribute") is None:
            sep = arg(0, "d", "")
            budget.fits(joined_size(budget, sep, value), "the join filter would build a string")
    elif name in ("string", "pprint"):
        budget.written(value, f"the {name} filter would write out a value")
    elif name == "tojson":
        indent = arg(1, "indent")
        width = indent if _is_int(indent) else len(indent) if isinstance(indent, str) else 0
        if width > MAX_JSON_INDENT:
            raise BudgetExceeded(
                "max_chars",
                budget.max_chars,
                f"tojson(indent={width:,}): at most {MAX_JSON_INDENT}",
            )
        budget.written(value, "the tojson filter would write out a value")
