"""A family's markers resolved against one tokenizer, and the machine compiled from them.

Each marker string of a spec is one token id of this vocabulary (matched by id) or a byte
pattern over a run of tokens; a required marker that is not one token, or a missing turn
marker, is an error naming the family, the marker and the tokenizer. Machines are cached on
the tokenizer per (spec, switches): every request with the same switches shares one.
"""

from __future__ import annotations

from reasonspan.runtime.core.errors import MissingMarkerError
from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.core.spec import MarkerKind, ReasoningSpec
from reasonspan.tokenizer.loader import LoadedTokenizer


def resolve_markers(
    spec: ReasoningSpec, tokenizer: LoadedTokenizer
) -> tuple[dict[int, MarkerKind], dict[bytes, MarkerKind]]:
    """Split the spec's markers into single-token ids and multi-token byte patterns."""
    id_markers: dict[int, MarkerKind] = {}
    byte_markers: dict[bytes, MarkerKind] = {}
    for text, kind in spec.markers():
        tid = tokenizer.single_token_id(text)
        if tid is not None:
            id_markers.setdefault(tid, kind)
            continue
        if text in spec.required or kind == MarkerKind.CUT:
            pieces = tokenizer.encode(text)
            raise MissingMarkerError(
                spec.name, text, tokenizer.source, f"it encodes as {len(pieces)} tokens {pieces}"
            )
        if text in spec.text_markers:
            byte_markers.setdefault(text.encode("utf-8"), kind)
    if spec.turn and not any(
        k == MarkerKind.TURN for k in (*id_markers.values(), *byte_markers.values())
    ):
        # Without a turn marker the right-to-left prompt scan cannot stop at the current
        # turn, so an old end marker in the history would decide it: a wrong tokenizer for
        # this family is an error here, not a silent misreading of every multi-turn prompt.
        raise MissingMarkerError(
            spec.name,
            spec.turn[0],
            tokenizer.source,
            "it is this family's assistant-turn marker"
            + (f" (or one of {', '.join(map(repr, spec.turn[1:]))})" if spec.turn[1:] else "")
            + ", which bounds the prompt scan to the current turn; is this the family's"
            " tokenizer?",
        )
    return id_markers, byte_markers


def compile_machine(
    spec: ReasoningSpec,
    tokenizer: LoadedTokenizer,
    *,
    thinking: bool,
    prompt_start: bool,
    machine_class: type[Machine] = Machine,
) -> Machine:
    """Build (or fetch from the tokenizer's cache) the machine for these switches: the base
    routing, or a family's subclass of it that takes the same arguments (``machine_class``:
    Inkling's, PLaMo 3's, MiniCPM-V's quiet one)."""
    key = ("machine", machine_class, spec, thinking, prompt_start)
    cached = tokenizer.cache.get(key)
    if isinstance(cached, machine_class):
        return cached
    id_markers, byte_markers = resolve_markers(spec, tokenizer)
    machine = machine_class(
        spec,
        tokenizer,
        thinking=thinking,
        prompt_start=prompt_start,
        id_markers=id_markers,
        byte_markers=byte_markers,
    )
    tokenizer.cache[key] = machine
    return machine
