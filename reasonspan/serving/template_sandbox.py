"""jinja2's sandbox with a budget: where :mod:`.template_limits` hooks into a rendering.

Hugging Face renders chat templates in jinja2's ``ImmutableSandboxedEnvironment``, which
keeps a template away from Python's internals but not from spending unbounded time and
memory. :class:`BoundedEnvironment` is that environment (same options, same output) with
the checks of :mod:`.template_limits` at the points a template's work passes through:

- **loops**: every ``{% for %}``'s iterable goes through a filter that spends an operation
  per item (a list spends its length at once) — added to the parsed tree, so every loop is
  covered, whatever the template says;
- **calls** (macros, methods, globals: the sandbox's ``call``) and **filters** (each one
  wrapped) spend an operation; the string methods and filters that pad, replace or join are
  sized first, and every result is checked;
- **operators** ``*``, ``**``, ``+`` and ``%`` go through ``call_binop`` (which also stops
  jinja2 from folding them at compile time, where ``'x' * 4000000000`` used to allocate
  4 GB); ``~`` and captured blocks (``{% set %}...{% endset %}``, macro bodies) go through
  sized joins;
- **output** is generated piece by piece and counted.

``lipsum`` is removed from the globals: it writes up to any number of paragraphs in one
call, and no chat template uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from functools import wraps
from time import monotonic
from types import BuiltinMethodType, FunctionType
from typing import Any, cast

from jinja2 import nodes
from jinja2.environment import Template
from jinja2.ext import loopcontrols
from jinja2.runtime import Context, markup_join
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import pass_context

from reasonspan.serving.template_limits import (
    CURRENT,
    SIZED_FILTERS,
    Budget,
    BudgetExceeded,
    RenderLimits,
    check_binop,
    check_filter,
    check_method,
    check_str_format,
)

LOOP_FILTER = "reasonspan_counted"
"""The filter every loop's iterable is wrapped in (a name no real template uses)."""


class _NoBudget(Exception):
    """A filter called with no rendering under way: jinja2 folding a constant at compile
    time. Refusing (jinja2 then leaves the expression to run time) means no value is ever
    computed outside a budget."""


def _budget() -> Budget:
    b = CURRENT.get()
    if b is None:
        raise _NoBudget
    return b


@pass_context  # a context filter is never folded at compile time
def _counted(_context: Context, iterable: Any) -> Any:
    budget = _budget()
    try:
        n = len(iterable)
    except TypeError:
        return _count_each(budget, iterable)
    budget.spend(n)
    return iterable


def _count_each(budget: Budget, iterable: Iterable[Any]) -> Iterator[Any]:
    for item in iterable:
        budget.spend()
        yield item


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    # jinja2 passes the context/environment first to the filters marked for it.
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0
    sized = name in SIZED_FILTERS
    what = f"the {name} filter built a value"

    @wraps(func)  # keeps jinja_pass_arg, so jinja2 still passes what the filter asks for
    def guarded(*args: Any, **kwargs: Any) -> Any:
        budget = CURRENT.get()
        if budget is None:
            raise _NoBudget
        budget.ops_left -= 1
        if budget.ops_left < 0 or monotonic() > budget.deadline:
            budget.spend(0)  # raises, naming the limit
        if sized:
            if name == "join" and len(args) > skip and not isinstance(args[skip], list | tuple):
                args = (*args[:skip], list(args[skip]), *args[skip + 1 :])  # as join would
            check_filter(budget, name, args[skip:], kwargs)
        result = func(*args, **kwargs)
        if type(result) is str:  # the common case
            if len(result) > budget.max_chars:
                budget.fits(len(result), what)
            return result
        return budget.check(result, what)

    return guarded


def _str_join(seq: Iterable[Any]) -> str:
    """``a ~ b`` (jinja2's ``str_join``), sized before the join."""
    budget = CURRENT.get()
    if budget is None:
        raise _NoBudget
    parts = [x if type(x) is str else _text_of(budget, x) for x in seq]
    size = sum(map(len, parts))
    if size > budget.max_chars:
        budget.fits(size, "'~' would build a string")
    return "".join(parts)


def _text_of(budget: Budget, value: Any) -> str:
    budget.written(value, "'~' would write out a value")
    return str(value)


def _finalize(value: Any) -> Any:
    """Every ``{{ ... }}``: a list or dict is weighed before jinja2 writes it out."""
    if type(value) is not str:
        budget = CURRENT.get()
        if budget is not None:  # None: a constant, folded at compile time
            budget.written(value, "writing out a value")
    return value


def _markup_join(seq: Iterable[Any]) -> str:
    budget = _budget()
    parts = list(seq)
    for x in parts:
        budget.written(x, "'~' would write out a value")
    budget.fits(sum(len(str(x)) for x in parts), "'~' would build a string")
    return markup_join(parts)


def _concat(seq: Iterable[str]) -> str:
    """A captured block's text (``{% set x %}``, a macro's body), sized before the join."""
    parts = seq if isinstance(seq, list) else list(seq)
    budget = CURRENT.get()
    if budget is not None:
        budget.fits(sum(map(len, parts)), "a block would build a string")
    return "".join(parts)


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """``ImmutableSandboxedEnvironment`` (as Hugging Face renders chat templates) whose
    every loop, call, filter, sizing operator and join spends from the rendering's
    :class:`~.template_limits.Budget`."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    concat = staticmethod(_concat)

    def __init__(self) -> None:
        super().__init__(
            trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols], finalize=_finalize
        )
        self.globals.pop("lipsum", None)

    def guard_filters(self) -> None:
        """Wrap every filter (call after adding one's own)."""
        self.filters = {name: _guard_filter(name, f) for name, f in self.filters.items()}
        self.filters[LOOP_FILTER] = _counted

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        budget = CURRENT.get()
        if budget is None:
            raise _NoBudget
        if type(left) is str and type(right) is str:  # the common case, sized exactly
            if operator == "+":
                if len(left) + len(right) > budget.max_chars:
                    budget.fits(len(left) + len(right), "'+' would build a string")
                return left + right
        elif type(left) is int and type(right) is int and operator != "**":
            return self.binop_table[operator](left, right)
        check_binop(budget, operator, left, right)
        result = self.binop_table[operator](left, right)
        return budget.check(result, f"{operator!r} built a value") if operator == "%" else result

    def call(
        __self,
        __context: Context,
        __obj: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        budget = CURRENT.get()
        if budget is None:
            raise _NoBudget
        budget.ops_left -= 1
        if budget.ops_left < 0 or monotonic() > budget.deadline:
            budget.spend(0)  # raises, naming the limit
        kind = type(__obj)
        if kind is BuiltinMethodType:  # a method of a str, list, dict ...
            target = __obj.__self__
            if isinstance(target, str | bytes):
                method = __obj.__name__
                if method == "join" and args and not isinstance(args[0], list | tuple):
                    args = (list(args[0]), *args[1:])  # as join would
                check_method(budget, target, method, args)
        elif kind is FunctionType:  # a global, or the sandbox's str.format wrapper
            wrapped = getattr(__obj, "__wrapped__", None)
            fmt = getattr(wrapped, "__self__", None)
            if isinstance(fmt, str) and getattr(wrapped, "__name__", "") in (
                "format",
                "format_map",
            ):
                check_str_format(budget, fmt, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        return budget.check(result, "a call built a value")

    def bounded_template(self, source: str) -> Template:
        """``from_string``, with every loop's iterable counted and ``~`` sized."""
        tree = self.parse(source)
        for loop in list(tree.find_all(nodes.For)):
            loop.iter = nodes.Filter(loop.iter, LOOP_FILTER, [], [], None, None, lineno=loop.lineno)
        template = self.template_class.from_code(
            self, self.compile(tree), self.make_globals(None), None
        )
        namespace = template.root_render_func.__globals__
        namespace["str_join"] = _str_join
        namespace["markup_join"] = _markup_join
        return template


def render_bounded(template: Template, variables: Mapping[str, Any], limits: RenderLimits) -> str:
    """The template's text for ``variables``, within ``limits`` (raises
    :class:`~.template_limits.BudgetExceeded` past one of them)."""
    budget = Budget(limits)
    token = CURRENT.set(budget)
    pieces = cast(Generator[str, None, None], template.generate(variables))
    try:
        parts: list[str] = []
        total = 0
        cap = limits.max_chars
        for piece in pieces:
            total += len(piece)
            if total > cap:
                raise BudgetExceeded("max_chars", cap, f"its output passed {cap:,} characters")
            parts.append(piece)
    finally:
        pieces.close()
        CURRENT.reset(token)
    return "".join(parts)
