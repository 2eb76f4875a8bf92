"""Which reasoning parser fits a model folder, and why.

``detect(path)`` reads what a model folder says about itself — the vocabulary
(tokenizer.json), the chat template (tokenizer_config.json or chat_template.jinja) and
config.json's ``model_type``/``architectures`` — and scores every registered family
against it. The scoring reads the families' own specs (as each family resolves them for
this vocabulary, :meth:`ReasoningParser.resolve_spec`) and switch hooks, so a family added
later, or by a plugin, is detected without touching this module:

- its start/end markers must be here: single tokens, multi-token markers built from this
  vocabulary's special tokens, or (text markers) spelled in the template; its
  ``required`` markers must be single tokens, else the parser could not be built;
- a turn marker in the vocabulary counts for it, none against it; so does a template that
  writes one; implicit-end or stripped markers that are nowhere count against it;
- markers that few families declare count more than shared ones (``<|im_assistant|>``
  says Kimi; ``<think>`` says little);
- the chat_template_kwargs its ``resolve_switches`` hook reads are compared with the ones
  the template reads, and its thinking default with the template's.

A format the folder declares itself (transformers' ``response_template`` or
``response_schema`` in tokenizer_config.json, compiled by the ``declared`` family) comes
first: it is the most specific fact a checkpoint ships, written for this checkpoint, while
every other rule is evidence about a family. When it compiles it chooses the parser and the
scored families are listed after it; when it does not, the report says why and scoring
decides as if nothing were declared.

What the specs cannot tell comes from each family's ``hint`` beside its spec (config.json
model types, tokens only one family's models ship, whether its templates prefill the start
marker, families that share another's markers). Near ties are reported (``ambiguous``),
never settled silently: a server should then ask for ``--reasoning-parser``.

The template is read as text (string literals, ``set`` variables, ``is defined`` tests);
it is never executed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import msgspec

from reasonspan.architectures.declared import DECLARED, declaration_source, declared_spec
from reasonspan.detection.report import describe as describe
from reasonspan.detection.report import listed
from reasonspan.detection.results import Candidate, Detection, Evidence, TemplateEvidence
from reasonspan.detection.template_text import TemplateText
from reasonspan.runtime.core.errors import DeclarationError, ReasonspanError
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.declared.compile import find_declaration
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import families, get_parser_class
from reasonspan.runtime.parser.switches import defaults, kwargs_read, switch_effects
from reasonspan.runtime.shared.hint import hint_of
from reasonspan.tokenizer.loader import LoadedTokenizer, load_tokenizer_sync

# Points for each kind of evidence (see module doc). A gap below TIE_MARGIN is a tie.
W_MARKERS = 4.0  # all start/end markers present (scaled by the fraction present)
W_TURN = 3.0  # a turn marker is a token here (or its absence, negated)
W_TURN_TEMPLATE = 2.0  # the template writes a turn marker
W_SIDE = 1.0  # none of its implicit-end (or stripped) markers is here: negated
W_SPECIFIC, SPECIFIC_CAP = 1.0, 3.0  # sum of 1/(families declaring it) over markers here
W_MENTION = 1.0  # the template spells a start/end marker
W_SWITCH = 2.0  # the template reads a thinking switch this parser honours
W_SWITCH_MISMATCH = -3.0  # ... one it ignores, or none of the parser's switches
W_DEFAULT_MATCH, W_DEFAULT_MISMATCH = 1.0, -2.0
W_MODEL_TYPE = 2.0
W_SIGNATURE = 2.0  # a hint's token is (or an ``absent`` one is not) in the vocabulary
W_PREFILL = 1.0
W_PLAIN_TEXT = -3.0
W_VARIANT = -2.0  # ``needs_evidence`` and none found
W_DECLARED = 10.0  # the folder declares its format (above the best score: it decides)
TIE_MARGIN = 1.0


class _Registry(NamedTuple):
    """Every family with its spec resolved for this tokenizer, and marker statistics."""

    specs: tuple[tuple[type[ReasoningParser], ReasoningSpec | None], ...]
    """None where the family cannot resolve its markers for this vocabulary."""
    starts: tuple[str, ...]
    ends: tuple[str, ...]
    markers: tuple[str, ...]
    switch_names: frozenset[str]
    declared_by: dict[str, int]
    """How many families declare each marker: a marker few families use says more."""


def _registry(tok: LoadedTokenizer) -> _Registry:

    specs: list[tuple[type[ReasoningParser], ReasoningSpec | None]] = []
    starts: list[str] = []
    ends: list[str] = []
    markers: list[str] = []
    switches: set[str] = set()
    declared: dict[str, int] = {}
    for cls in families():
        if cls.spec.name == DECLARED:  # not scored: a declaration decides on its own
            continue
        switches.update(_reads(cls))
        try:
            spec: ReasoningSpec | None = cls.resolve_spec(tok)
        except ReasonspanError:
            spec = None
        specs.append((cls, spec))
        for s in (cls.spec, spec):
            if s is not None:
                starts.extend(s.start)
                ends.extend(s.end)
                markers.extend(t for t, _ in s.markers())
        if spec is not None:
            for t in {t for t, _ in spec.markers()}:
                declared[t] = declared.get(t, 0) + 1
    return _Registry(
        tuple(specs),
        tuple(dict.fromkeys(starts)),
        tuple(dict.fromkeys(ends)),
        tuple(dict.fromkeys(markers)),
        frozenset(switches),
        declared,
    )


_READS: dict[type[ReasoningParser], tuple[str, ...]] = {}


def _reads(cls: type[ReasoningParser]) -> tuple[str, ...]:
    """The chat_template_kwargs a family reads (probed once per class)."""

    if cls not in _READS:
        _READS[cls] = kwargs_read(cls)
    return _READS[cls]


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _arch_name(arch: str) -> str:
    low = arch.lower()
    for suffix in ("forcausallm", "forconditionalgeneration", "lmheadmodel", "model"):
        if low.endswith(suffix) and len(low) > len(suffix):
            return _norm(low[: -len(suffix)])
    return _norm(arch)


def _own_markers(
    spec: ReasoningSpec, vocab: _Vocab, declared_by: Mapping[str, int]
) -> list[tuple[str, int]]:
    """The family's markers in this vocabulary, each with how many families declare it.
    The end-of-sequence token every model of the vocabulary writes (``<|im_end|>`` of
    ChatML) says nothing about which family this is, though one family strips it."""
    return [
        (m, declared_by.get(m, 1)) for m, _ in spec.markers() if vocab.has(m) and m != vocab.eos
    ]


class _Vocab:
    """Marker presence in one tokenizer, computed once per marker."""

    def __init__(self, tok: LoadedTokenizer, markers: Iterable[str]) -> None:
        self.tok = tok
        decoder = tok.tokenizer.get_added_tokens_decoder()
        self.special: dict[int, str] = {i: str(a.content) for i, a in decoder.items()}
        self.markers = frozenset(markers)
        self._single: dict[str, bool] = {}
        self._composed: dict[str, bool] = {}
        eos = tok.config.get("eos_token")
        if isinstance(eos, dict):
            eos = eos.get("content")
        self.eos = eos if isinstance(eos, str) else None
        """The folder's end-of-sequence token (tokenizer_config.json), if it names one."""

    def single(self, marker: str) -> bool:
        if marker not in self._single:
            self._single[marker] = self.tok.single_token_id(marker) is not None
        return self._single[marker]

    def composed(self, marker: str) -> bool:
        """Several tokens, one of them a special token made for it: a multi-character piece
        of the marker that is not itself a registered marker (``<|open|>`` in
        ``<|open|>think<|sep|>`` counts; ``<think>`` in ``<think>\\n`` does not)."""
        if marker not in self._composed:
            ok = False
            if not self.single(marker):
                ids = self.tok.encode(marker)
                pieces = [self.special.get(i, "") for i in ids]
                ok = len(ids) > 1 and any(
                    len(p) > 1 and p in marker and p not in self.markers for p in pieces
                )
            self._composed[marker] = ok
        return self._composed[marker]

    def has(self, marker: str) -> bool:
        """In the vocabulary: one token, or built from this vocabulary's special tokens."""
        return self.single(marker) or self.composed(marker)


def _template_text(tok: LoadedTokenizer, folder: Path) -> tuple[str | None, str]:
    if tok.chat_template is not None:
        source = "chat_template.jinja" if (folder / "chat_template.jinja").is_file() else ""
        return tok.chat_template, source or "tokenizer_config.json"
    raw = tok.config.get("chat_template")
    if isinstance(raw, list):  # [{"name": "default", "template": ...}, ...]
        named = {e.get("name"): e.get("template") for e in raw if isinstance(e, dict)}
        text = named.get("default") or next((t for t in named.values() if t), None)
        if isinstance(text, str):
            return text, "tokenizer_config.json"
    return None, ""


def _read_template(text: str, source: str, reg: _Registry) -> TemplateEvidence:
    tpl = TemplateText(text)
    every = tpl.pieces()
    mentioned = tuple(m for m in reg.markers if any(m in p for p in every))
    opened: list[str] = []
    closed: list[str] = []
    gen = tpl.generation_prompt_start()
    if gen is not None:
        for piece in tpl.pieces(gen):
            for s in reg.starts:
                i = piece.find(s)
                if i < 0:
                    continue
                after = piece[i + len(s) :]
                if not any(e in after for e in reg.ends) and s not in opened:
                    opened.append(s)
            closed.extend(e for e in reg.ends if e in piece and e not in closed)
    names = tpl.names_read() | {n for n in reg.switch_names if tpl.mentions(n)}
    kwargs = tuple(sorted(names))
    kwarg_defaults: dict[str, bool] = {}
    for name in kwargs:
        d = tpl.bool_default(name)
        if d is not None:
            kwarg_defaults[name] = d
    switch_defaults = {v for k, v in kwarg_defaults.items() if k in reg.switch_names}
    thinking_default: bool | None = None
    if len(switch_defaults) == 1:
        thinking_default = switch_defaults.pop()
    elif not switch_defaults and opened and not (set(kwargs) & reg.switch_names):
        thinking_default = True  # prefilled, and nothing in the template turns it off
    return TemplateEvidence(
        source=source,
        prefills_start=tuple(opened),
        prefills_end=tuple(closed),
        kwargs=kwargs,
        kwarg_defaults=kwarg_defaults,
        thinking_default=thinking_default,
        markers=mentioned,
    )


def _switch_dicts(
    cls: type[ReasoningParser], prefer: Sequence[str]
) -> tuple[dict[str, bool | str], dict[str, bool | str]]:
    """The kwargs that turn thinking off and on, preferring keys the template reads."""

    thinking, _ = defaults(cls)
    off: dict[str, bool | str] = {}
    on: dict[str, bool | str] = {}
    for e in switch_effects(cls):
        target = on if e.thinking else off
        if e.thinking != thinking and e.key not in target:
            target[e.key] = e.value
    if prefer:
        off = {k: v for k, v in off.items() if k in prefer} or off
        on = {k: v for k, v in on.items() if k in prefer} or on
    return off, on


class _Context(NamedTuple):
    vocab: _Vocab
    template: TemplateEvidence | None
    model_names: frozenset[str]
    reg: _Registry


def _score(cls: type[ReasoningParser], spec: ReasoningSpec, ctx: _Context) -> Candidate | None:
    """Score one family, or None when it cannot fit (a required marker missing, or none of
    its start/end markers in the folder)."""
    vocab, template, reg = ctx.vocab, ctx.template, ctx.reg
    reasons: list[str] = []
    score = 0.0

    def add(points: float, why: str) -> None:
        nonlocal score
        score += points
        reasons.append(f"{points:+.3g} {why}")

    def spelled(marker: str) -> bool:
        return template is not None and marker in template.markers

    if any(not vocab.single(m) for m in spec.required):
        return None  # the parser cannot be built on this vocabulary
    reasoning = tuple(dict.fromkeys((*spec.start, *spec.end)))
    # A text marker may be spelled only in the template (plain-text markers in prose).
    found = [m for m in reasoning if vocab.has(m) or (m in spec.text_markers and spelled(m))]
    if not found:
        return None
    add(W_MARKERS * len(found) / len(reasoning), f"start/end markers here: {listed(found)}")

    if spec.turn:
        turns = [m for m in spec.turn if vocab.has(m)]
        if turns:
            add(W_TURN, f"turn marker {listed(turns[:1])} is in the vocabulary")
        else:
            add(-W_TURN, f"none of its turn markers ({listed(spec.turn)}) is in the vocabulary")
        if any(spelled(m) for m in spec.turn):
            add(W_TURN_TEMPLATE, "the template writes its turn marker")
    for kind, texts in (("implicit-end", spec.tool), ("stripped", spec.strip)):
        if texts and not any(vocab.has(m) or spelled(m) for m in texts):
            add(-W_SIDE, f"none of its {kind} markers ({listed(texts)}) is here")
    own = _own_markers(spec, vocab, ctx.reg.declared_by)
    specific = sum(1 / n for _, n in own)
    if specific:
        rare = [m for m, n in own if n == 1]
        why = f"markers only it declares: {listed(rare)}" if rare else "markers shared by others"
        add(W_SPECIFIC * min(specific, SPECIFIC_CAP), why)

    thinking_default, _ = cls.resolve_switches({})
    if template is not None:
        _template_points(cls, reasoning, template, reg, thinking_default, add)

    hint = hint_of(cls)
    own_names = {_norm(n) for n in (spec.name, *spec.aliases, *hint.model_types)}
    named = bool(ctx.model_names & own_names)
    if named:
        add(W_MODEL_TYPE, "config.json names its model type")
    sig = [t for t in hint.tokens if vocab.single(t)]
    if sig:
        add(W_SIGNATURE, f"vocabulary has {sig[0]}, which only its models ship")
    later = [t for t in hint.absent if vocab.single(t)]
    if later:
        add(-W_SIGNATURE, f"vocabulary has {later[0]}, which its models lack")
    if hint.needs_evidence and not (named or sig):
        add(W_VARIANT, "shares its markers with other families; nothing here names it")
    if hint.prefills_start is not None and template is not None:
        prefilled = any(s in template.prefills_start for s in spec.start)
        if prefilled == hint.prefills_start:
            add(W_PREFILL, "its templates prefill the start marker the same way")
        else:
            add(-W_PREFILL, "its templates prefill the start marker differently")
    if hint.plain_text_markers:
        special = [m for m in reasoning if vocab.single(m)]
        if special:
            add(W_PLAIN_TEXT, f"its models write markers as text, but {special[0]} is a token")

    off, on = _switch_dicts(cls, template.kwargs if template is not None else ())
    return Candidate(
        name=spec.name,
        score=round(score, 3),
        reasons=tuple(reasons),
        thinking_default=thinking_default,
        thinking_off=off if thinking_default else {},
        thinking_on=on if not thinking_default else {},
    )


def _template_points(
    cls: type[ReasoningParser],
    reasoning: tuple[str, ...],
    template: TemplateEvidence,
    reg: _Registry,
    thinking_default: bool,
    add: Callable[[float, str], None],
) -> None:
    """The template's evidence about one family: does it spell the family's start/end
    markers (``reasoning``), read the switches the family honours, think by default as
    the family does?"""
    reads = set(_reads(cls))
    if any(m in template.markers for m in reasoning):
        add(W_MENTION, "the template spells its start/end markers")
    tk = set(template.kwargs) & reg.switch_names
    if tk & reads:
        add(W_SWITCH, f"the template reads {listed(sorted(tk & reads))}, which it honours")
    if tk - reads:
        add(W_SWITCH_MISMATCH, f"the template reads {listed(sorted(tk - reads))}, which it ignores")
    if reads and not tk:
        add(
            W_SWITCH_MISMATCH,
            f"it switches thinking with {listed(sorted(reads))}; the template reads none",
        )
    if template.thinking_default is not None:
        if template.thinking_default == thinking_default:
            add(W_DEFAULT_MATCH, "same thinking default as the template")
        else:
            add(W_DEFAULT_MISMATCH, "thinking default differs from the template's")


def detect_tokenizer(tok: LoadedTokenizer) -> Detection:
    """:func:`detect` for a tokenizer that is already loaded (with its folder's files)."""
    reg = _registry(tok)
    folder = Path(tok.source).parent
    text, source = _template_text(tok, folder)
    template = _read_template(text, source, reg) if text else None
    vocab = _Vocab(tok, reg.markers)
    mc = tok.model_config
    model_type = mc.get("model_type") if isinstance(mc.get("model_type"), str) else None
    archs_raw = mc.get("architectures")
    archs = tuple(a for a in archs_raw if isinstance(a, str)) if isinstance(archs_raw, list) else ()
    names = {_arch_name(a) for a in archs} | ({_norm(model_type)} if model_type else set())
    evidence = Evidence(
        source=str(folder),
        single_tokens=tuple(m for m in reg.markers if vocab.single(m)),
        composed=tuple(m for m in reg.markers if vocab.composed(m)),
        template=template,
        model_type=model_type,
        architectures=archs,
    )
    declared, why_not = _declared(tok)
    evidence = msgspec.structs.replace(evidence, declared=declared, declaration_error=why_not)
    ctx = _Context(vocab, template, frozenset(names), reg)
    scored = [_score(cls, spec, ctx) for cls, spec in reg.specs if spec is not None]
    ranked = sorted((c for c in scored if c is not None), key=lambda c: (-c.score, c.name))
    if declared is not None:
        cls = get_parser_class(DECLARED)
        thinking_default, _ = cls.resolve_switches({})
        off, on = _switch_dicts(cls, template.kwargs if template is not None else ())
        best = Candidate(
            name=DECLARED,
            score=round(max((c.score for c in ranked), default=0.0) + W_DECLARED, 3),
            reasons=(
                f"+{W_DECLARED:.3g} the folder declares its output format "
                f"({declared.partition(' ')[0]}); a declaration the checkpoint ships wins "
                "over name and vocabulary evidence",
            ),
            thinking_default=thinking_default,
            thinking_off=off if thinking_default else {},
            thinking_on=on if not thinking_default else {},
        )
        return Detection(DECLARED, (best, *ranked), evidence, ambiguous=False, tied=(DECLARED,))
    if not ranked:
        return Detection(None, (), evidence, ambiguous=False)
    top = ranked[0].score
    tied = tuple(c.name for c in ranked if c.score > top - TIE_MARGIN)
    if len(tied) > 1:
        return Detection(None, tuple(ranked), evidence, ambiguous=True, tied=tied)
    return Detection(ranked[0].name, tuple(ranked), evidence, ambiguous=False, tied=tied)


def _declared(tok: LoadedTokenizer) -> tuple[str | None, str | None]:
    """``(the declared format as compiled, why a declaration is not used)``."""
    found = find_declaration(tok.config)
    if found is None:
        return None, None
    try:
        spec = declared_spec(tok)
    except DeclarationError as exc:
        return None, str(exc)
    parts = [f"{found[0]} in {declaration_source(tok)}: {listed(spec.start)} … {listed(spec.end)}"]
    if spec.tool:
        parts.append(f"tool calls open with {listed(spec.tool)}")
    if spec.tool_calls is not None:
        parts.append(f"read as {'/'.join(spec.tool_calls.kinds)}")
    return "; ".join(parts), None


def detect(path: str | Path | LoadedTokenizer) -> Detection:
    """Tell which registered reasoning parser fits a model folder (or tokenizer.json).

    Reads tokenizer.json, tokenizer_config.json (and its chat template),
    chat_template.jinja and config.json. Returns the parser name, every candidate with the
    reasons for its score, and the evidence; ``parser`` is None when nothing fits or when
    the evidence ties (``ambiguous``).
    """
    tok = path if isinstance(path, LoadedTokenizer) else load_tokenizer_sync(path)
    return detect_tokenizer(tok)
