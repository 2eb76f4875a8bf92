"""The figures of ``docs/canitoolcall.md``, made from a stored replay instead of copied by
hand.

``python -m tests.support.canitoolcall_replay --write`` replays every fixture once
(:func:`tests.support.canitoolcall_replay.statuses`), stores each fixture's status in
:data:`JSON` and rewrites the page between :data:`BEGIN` and :data:`END` with
:func:`render` of it. ``tests/toolcalls/test_canitoolcall.py`` holds the page to the
stored replay (the block is :func:`render` of :data:`JSON`, the stored fixtures are the
corpus') and the stored replay to a fresh one (each fixture the run replays must have its
stored status: a third of the corpus in CI, all of it with ``--long``). A full replay
takes about a minute, too long for every run.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import canitoolcall

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "canitoolcall.md"
JSON = ROOT / "docs" / "canitoolcall.json"
BEGIN = "<!-- figures: `python -m tests.support.canitoolcall_replay --write` writes this block -->"
END = "<!-- /figures -->"

ENGINES: tuple[tuple[str, int, int, int, int], ...] = (
    ("vLLM 0.30.0", 268, 86, 115, 469),
    ("SGLang 0.5.20", 189, 62, 197, 448),
    ("llama.cpp a25c9865", 278, 46, 114, 438),
    ("Ollama 7af39318", 224, 10, 27, 261),
    ("transformers 5.17.0", 33, 7, 8, 48),
)
"""The engines' rows: the corpus' published results for their own parsers (pass, soft
pass, fail, of), not replayed here."""

MODES = (("whole", "calls sent whole"), ("streamed", "arguments streamed as written"))
OK = ("pass", "soft_pass")

Rows = dict[str, dict[str, str]]
"""Fixture id to its stored replay: ``family``, ``ids_from``, ``whole``, ``streamed``."""


def _counts(rows: Rows, mode: str, family: str | None = None) -> Counter[str]:
    """How many fixtures (of ``family``, or all) pass, soft pass or miss ("fail": a
    failed check, an error or an unsupported case) in ``mode``."""
    got: Counter[str] = Counter()
    for row in rows.values():
        if family is None or row["family"] == family:
            got[row[mode] if row[mode] in OK else "fail"] += 1
    return got


def family_table(rows: Rows, mode: str) -> list[str]:
    """The per-family table the replay prints: every status of the corpus' checks."""
    cols = ("pass", "soft_pass", "fail", "error", "unsupported")
    lines = ["| family | " + " | ".join(cols) + " | of |", "|---|" + "---:|" * (len(cols) + 1)]
    total: Counter[str] = Counter()
    for fam in sorted({r["family"] for r in rows.values()}):
        got = Counter(r[mode] for r in rows.values() if r["family"] == fam)
        total += got
        lines.append(f"| {fam} | " + " | ".join(str(got[c]) for c in cols) + f" | {got.total()} |")
    lines.append("| **all** | " + " | ".join(str(total[c]) for c in cols) + f" | {total.total()} |")
    return lines


def render(rows: Rows) -> str:
    """The page's figures block (markers included): the engines beside reasonspan, then
    reasonspan by family, both ways of sending calls."""
    out = [BEGIN, "", "| engine | pass | soft pass | fail | of |", "|---|---:|---:|---:|---:|"]
    out += [f"| {name} | {p} | {s} | {f} | {n} |" for name, p, s, f, n in ENGINES]
    for mode, label in MODES:
        got = _counts(rows, mode)
        cells = [got["pass"], got["soft_pass"], got["fail"], len(rows)]
        out.append(f"| **reasonspan**, {label} | " + " | ".join(f"**{c}**" for c in cells) + " |")
    out += ["", "reasonspan by family (calls sent whole / arguments streamed as written):", ""]
    out += ["| family | pass | soft pass | fail | of |", "|---|---:|---:|---:|---:|"]
    for fam in sorted({r["family"] for r in rows.values()}):
        whole, streamed = (_counts(rows, mode, fam) for mode, _ in MODES)
        cells = [f"{whole[k]} / {streamed[k]}" for k in ("pass", "soft_pass", "fail")]
        out.append(f"| {fam} | " + " | ".join(cells) + f" | {whole.total()} |")
    return "\n".join([*out, "", END])


def block(page: str) -> str:
    """The figures block of ``page``, markers included ("" when it has none)."""
    start, end = page.find(BEGIN), page.find(END)
    return page[start : end + len(END)] if 0 <= start < end else ""


def load() -> tuple[str, Rows]:
    """The stored replay: the corpus version it ran on, and its rows."""
    data = json.loads(JSON.read_text(encoding="utf-8"))
    return str(data["canitoolcall"]), dict(data["fixtures"])


def write(rows: Rows) -> None:
    """Store ``rows`` in :data:`JSON` (a fixture a line, so a change to one is a one-line
    diff) and put their figures in the page."""
    lines = [f" {json.dumps(fid)}: {json.dumps(row)}" for fid, row in sorted(rows.items())]
    head = f'{{"canitoolcall": {json.dumps(canitoolcall.__version__)}, "fixtures": {{'
    JSON.write_text(head + "\n" + ",\n".join(lines) + "\n}}\n", encoding="utf-8")
    page = PAGE.read_text(encoding="utf-8")
    old = block(page)
    if not old:
        raise SystemExit(f"{PAGE} has no figures block ({BEGIN!r} ... {END!r})")
    PAGE.write_text(page.replace(old, render(rows)), encoding="utf-8")
