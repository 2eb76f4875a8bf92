"""vLLM's built-in parser classes, as bases of the classes registered under vLLM's names.

Opted in (``REASONSPAN_VLLM_REPLACE=1``), a vLLM name such as ``step3p5`` gets a class
that subclasses vLLM's built-in class of that name (``Step3p5ParserReasoningAdapter``), so
code written against the built-in (``isinstance(parser, Step3p5ParserReasoningAdapter)``,
``issubclass`` checks in vLLM or in a user's own code) keeps holding, while the work is
reasonspan's: the plugin's adapter comes first in the method resolution order, and every
other attribute the built-in's own classes define is reset to vLLM's abstract base class
(or to ``None`` where the base has none; :func:`masked`), so no code of the built-in ever
runs, and its ``__init__`` (which builds vLLM's own parser engine) is never called.

What this cannot give: the *same* class (``get_reasoning_parser("deepseek_v4") is
DeepSeekV4ParserReasoningAdapter``), nor the built-in's internal objects
(``parser._parser_engine``), which the plugin does not build. docs/vllm.md lists the tests
of vLLM's that assert those.
"""

from __future__ import annotations

import importlib
from typing import Any

from reasonspan.integrations.common import class_stem


def class_name(family: str, vllm_name: str | None, kind: str) -> str:
    """``Reasonspan<Family><kind>`` (``ReasonspanDeepseekR1ReasoningParser``); under a vLLM
    name, ``Reasonspan<Family>As<Name><kind>``: one class per name, since each name has its
    own built-in to subclass."""
    named = f"As{class_stem(vllm_name.replace('-', '_'))}" if vllm_name else ""
    return f"Reasonspan{class_stem(family)}{named}{kind}"


def builtin_class(manager: Any, name: str, table: str) -> type | None:
    """vLLM's own class for ``name`` in ``manager`` (``ReasoningParserManager`` or
    ``ToolParserManager``; ``table`` is its dict of loaded classes), or None.

    Read from the manager's lazy table (module and class name), which registering over a
    name leaves in place, so calling :func:`register` again finds the built-in, not the
    plugin's class. A class already loaded under the name counts only when it is not one
    of reasonspan's (``family`` is the plugin classes' mark)."""
    lazy = getattr(manager, "lazy_parsers", {}).get(name)
    if lazy is not None:
        module, class_name = lazy
        try:
            found = getattr(importlib.import_module(module), class_name)
        except (ImportError, AttributeError):  # a built-in that does not import here
            return None
        return found if isinstance(found, type) else None
    loaded = getattr(manager, table, {}).get(name)
    if isinstance(loaded, type) and not hasattr(loaded, "family"):
        return loaded
    return None


def _defined(cls: type, name: str) -> tuple[bool, Any]:
    """``(found, raw attribute)`` of ``name`` along ``cls``'s MRO (descriptors unbound)."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return True, vars(klass)[name]
    return False, None


def masked(builtin: type, abstract: type, adapter: type) -> dict[str, Any]:
    """Class attributes that hide ``builtin``'s own code behind ``adapter``.

    For every name the built-in's classes define between it and vLLM's ``abstract`` base
    (``ReasoningParser`` / ``ToolParser``) that the adapter does not define: the abstract
    base's attribute when it has one (``reasoning_start_str`` -> its ``None`` property),
    else ``None`` (vLLM reads such optional hooks with ``getattr(parser, name, None)``,
    e.g. ``get_streaming_fallback_content``). Dunder names are left to Python."""
    own = {n for klass in adapter.__mro__ if klass is not object for n in vars(klass)}
    out: dict[str, Any] = {}
    for klass in builtin.__mro__:
        if klass is abstract or not issubclass(klass, abstract):
            continue
        for name in vars(klass):
            if (name.startswith("__") and name.endswith("__")) or name in own or name in out:
                continue
            found, value = _defined(abstract, name)
            out[name] = value if found else None
    return out


def engine_based(builtin: type) -> bool:
    """Whether ``builtin`` is one of vLLM 0.34's parser-engine adapters (the
    ``ParserEngineReasoningAdapter`` family of classes), whose text conventions differ from
    its older marker parsers': no empty reasoning string."""
    return any(k.__name__ == "ParserEngineReasoningAdapter" for k in builtin.__mro__)
