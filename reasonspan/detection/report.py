"""A detection as a person reads it: what ``reasonspan detect`` prints.

Its own module because it only formats a :class:`Detection` (the parser, the evidence,
the best candidates and their reasons), while :mod:`.scoring` decides it; scoring's
reasons use the same list formatting (:func:`listed`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from reasonspan.detection.results import Detection


def describe(result: Detection, *, top: int = 5) -> str:
    """A human-readable report of a detection (what ``reasonspan detect`` prints)."""
    ev = result.evidence
    lines = [f"model folder: {ev.source}"]
    best = result.best
    if best is not None:
        lines.append(f"parser: {best.name}")
        if best.thinking_off:
            lines.append(f"  thinking off: chat_template_kwargs {_kw(best.thinking_off)}")
        if best.thinking_on:
            lines.append(
                f"  thinking is off by default; on: chat_template_kwargs {_kw(best.thinking_on)}"
            )
    elif result.ambiguous:
        lines.append(
            f"parser: ambiguous between {', '.join(result.tied)} (pass the one you want explicitly)"
        )
    else:
        lines.append("parser: none (no reasoning parser fits: no family's markers are here)")
    lines.append("evidence:")
    if ev.declared is not None:
        lines.append(f"  declared format: {ev.declared}")
    elif ev.declaration_error is not None:
        lines.append(
            f"  declared format not used ({ev.declaration_error}); "
            "fell back to name and vocabulary detection"
        )
    lines.append(f"  single-token markers: {listed(ev.single_tokens)}")
    if ev.composed:
        lines.append(f"  markers built from special tokens: {listed(ev.composed)}")
    t = ev.template
    if t is None:
        lines.append("  chat template: none found")
    else:
        lines.append(f"  chat template ({t.source}):")
        lines.append(f"    prefills start marker: {listed(t.prefills_start)}")
        lines.append(f"    writes end marker in the prompt: {listed(t.prefills_end)}")
        kw = [
            f"{k} (default {str(t.kwarg_defaults[k]).lower()})" if k in t.kwarg_defaults else k
            for k in t.kwargs
        ]
        lines.append(f"    reads chat_template_kwargs: {listed(kw)}")
        if t.thinking_default is not None:
            lines.append(f"    thinks by default: {'yes' if t.thinking_default else 'no'}")
    if ev.model_type or ev.architectures:
        lines.append(
            f"  config.json: model_type={ev.model_type or '-'} "
            f"architectures={listed(ev.architectures)}"
        )
    if result.candidates:
        lines.append("candidates:")
        width = max(len(c.name) for c in result.candidates[:top])
        for c in result.candidates[:top]:
            lines.append(f"  {c.name:<{width}}  {c.score:6.2f}  " + "; ".join(c.reasons))
    return "\n".join(lines)


def listed(items: Iterable[str]) -> str:
    """Comma-separated; markers with newlines or edge spaces shown quoted (``'<think>\\n'``)."""
    shown = [repr(i) if ("\n" in i or i != i.strip()) else i for i in items]
    return ", ".join(shown) or "none"


def _kw(d: dict[str, Any]) -> str:
    return msgspec.json.encode(d).decode()
