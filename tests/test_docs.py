"""The generated reference pages (docs/families.md from the registry, docs/cli.md from the
argparse parsers) must stay in step with what they are generated from; the hand-written
docs/canitoolcall.md with the replay harness; and every relative link of the Markdown
files must lead somewhere."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

import reasonspan
from reasonspan import docs
from reasonspan.runtime.parser import switches

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


@pytest.mark.parametrize("name", sorted(docs.PAGES))
def test_generated_page_matches_the_code(name: str) -> None:
    page = docs.PAGES[name]
    current = docs.section((ROOT / page).read_text(encoding="utf-8"), name)
    assert current == docs.generated()[name], (
        f"{page}'s {name} table disagrees with the code it is generated from; regenerate it, "
        f"from the clone's root, with: {docs.REGENERATE}"
    )


@pytest.mark.parametrize("name", sorted(docs.PAGES))
def test_the_readme_links_each_generated_page_and_holds_no_copy(name: str) -> None:
    """The tables moved out of the README (its first screen stays short); it links them."""
    readme = README.read_text(encoding="utf-8")
    assert f"]({docs.PAGES[name]})" in readme
    assert docs.section_markers(name)[0] not in readme


def _rows() -> dict[str, list[str]]:
    """Table rows by family name, cells split on unescaped pipes."""
    rows: dict[str, list[str]] = {}
    for line in docs.families_markdown().splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.replace("\\|", "\x00").strip("|").split("|")]
            cells = [c.replace("\x00", "|") for c in cells]
            rows[cells[0].strip("`")] = cells
    return rows


def test_every_family_name_alias_and_marker_is_in_the_table() -> None:
    rows = _rows()
    header_cells = docs.HEADER.splitlines()[0].strip("|").split("|")
    assert set(rows) == {c.spec.name for c in docs.builtin_families()}
    for cls in docs.builtin_families():
        spec = cls.spec
        row = rows[spec.name]
        assert len(row) == len(header_cells), row
        for alias in spec.aliases:
            assert f"`{alias}`" in row[1]
        for column, markers in (
            (2, (*spec.start, *spec.end)),
            (3, spec.tool),
            (4, spec.strip),
            (5, spec.turn),
        ):
            for marker in markers:
                assert marker.replace("\n", "\\n") in row[column], (spec.name, marker)
        for switch in spec.thinking_switches:
            assert f"`{switch}: " in row[6], (spec.name, switch)


def test_switches_read_by_hooks_are_documented() -> None:
    # minimax_m3 reads thinking_mode in its resolve_switches hook, not through the spec.
    row = _rows()["minimax_m3"]
    assert '`thinking_mode: "enabled"`' in row[6]
    assert row[6].startswith("on")
    assert _rows()["deepseek_v3"][6].startswith("off; on: `thinking: true`")
    assert _rows()["qwen3"][6] == "on; off: `enable_thinking: false`"


def test_switch_probe_finds_hook_keys() -> None:
    m3 = reasonspan.get_parser_class("minimax_m3")
    assert "thinking_mode" in switches.kwargs_read(m3)
    effects = {(e.key, e.value): e for e in switches.switch_effects(m3)}
    assert effects[("thinking_mode", "enabled")].prompt_start is True
    assert ("thinking_mode", "disabled") not in effects  # same as the default: not listed


def test_write_then_check_roundtrip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "docs").mkdir()
    for name, page in docs.PAGES.items():
        begin, end = docs.section_markers(name)
        (tmp_path / page).write_text(f"# {name}\n\nbefore\n{begin}\nold\n{end}\nafter\n", "utf-8")
    root = ["--root", str(tmp_path)]
    assert docs.main(["--check", *root]) == 1
    out = capsys.readouterr().out
    for name, page in docs.PAGES.items():  # each stale page named, with the command
        assert f"{page}: the {name} table is stale; run, from the clone's root: " in out
    assert out.count(docs.REGENERATE) == len(docs.PAGES)
    assert docs.main(["--write", *root]) == 0
    for name, page in docs.PAGES.items():
        text = (tmp_path / page).read_text(encoding="utf-8")
        begin, end = docs.section_markers(name)
        assert text.startswith(f"# {name}\n\nbefore\n{begin}\n")
        assert text.endswith(f"{end}\nafter\n")
    assert docs.main(["--check", *root]) == 0


def test_check_names_a_missing_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert docs.main(["--check", "--root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{docs.PAGES['families']}: cannot read its families section" in out


@pytest.mark.parametrize("command", ["serve", "split", "bench"])
def test_every_flag_of_the_command_is_in_its_table(command: str) -> None:
    """Each visible flag of the parser ``reasonspan`` builds has a row, with its default."""
    from reasonspan.cli_docs import command_markdown, subparsers

    parser = subparsers()[command]
    table = command_markdown(command, parser)
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    visible = [
        a
        for a in parser._actions
        if a.option_strings and a.help != argparse.SUPPRESS and "-h" not in a.option_strings
    ]
    assert len(rows) == len(visible)
    for action, row in zip(visible, rows, strict=True):
        assert row.startswith("| " + ", ".join(f"`{o}`" for o in action.option_strings))
        if action.default not in (None, False) and not action.required:
            assert f"`{action.default}`" in row


def test_a_new_flag_makes_the_flag_table_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    from reasonspan import cli_docs
    from reasonspan.serve_cli import add_arguments

    before = cli_docs.flags_markdown()

    def with_one_more(parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)
        parser.add_argument("--brand-new", help="a flag nobody documented")

    monkeypatch.setattr("reasonspan.serve_cli.add_arguments", with_one_more)
    after = cli_docs.flags_markdown()
    assert after != before and "| `--brand-new` |" in after


def test_missing_markers_are_an_error() -> None:
    with pytest.raises(ValueError, match="families:start"):
        docs.section("# no markers here\n", "families")
    with pytest.raises(ValueError, match="flags:start"):
        docs.section("# no markers here\n", "flags")


def test_the_readme_sync_example_runs() -> None:
    """The sync API as the README shows it (only the model path changes)."""
    import re

    from tests.support.fixtures import folder

    m = re.search(
        r"<!-- example: sync -->\n```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S
    )
    assert m is not None, "the README lost its sync example"
    code = m.group(1).replace('"path/to/model"', repr(str(folder("qwen-3"))))
    scope: dict[str, object] = {"reasonspan": reasonspan}
    exec(compile(code, "README.md", "exec"), scope)
    parser = scope["parser"]
    assert isinstance(parser, reasonspan.ReasoningParser) and parser.name == "qwen3"
    tok = scope["tok"]
    assert isinstance(tok, reasonspan.LoadedTokenizer)
    res = parser.parse(tok.encode("<think>a</think>b"))
    assert (res.reasoning, res.content) == ("a", "b")


# ---------------------------------------------------------------------- CanIToolCall page


def _normal(text: str) -> str:
    """Text with every run of whitespace made one space (prose wraps anywhere)."""
    return " ".join(text.split())


def test_the_canitoolcall_page_agrees_with_the_replay_harness() -> None:
    """The page's figures are written by the replay (``--write``, checked against a fresh
    replay in tests/toolcalls/test_canitoolcall.py); the README's sentence linking it is
    prose: what the harness knows without replaying is checked here, so a fixture added
    to the corpus, or a miss fixed or added, makes the README fail until it is updated."""
    from tests.support import canitoolcall_replay as replay

    redo = (
        "docs/canitoolcall.md (or the README's sentence linking it) is behind "
        "tests/support/canitoolcall_replay.py; rerun `python -m tests.support.canitoolcall_replay`"
        " (and with `--whole`) and update the reasonspan rows and the misses"
    )
    fixtures = replay.corpus()
    page = (ROOT / "docs" / "canitoolcall.md").read_text(encoding="utf-8")
    size = f"{len(fixtures)} recorded outputs over {len({f.family for f in fixtures})} families"
    assert size in _normal(page) and size in _normal(README.read_text(encoding="utf-8")), redo
    misses = len(replay.KNOWN_MISSES)
    says = f"passes all but {misses}," if misses else "passes all of them"
    assert says in _normal(README.read_text(encoding="utf-8")), redo
    rows = re.findall(r"^\| \*\*reasonspan\*\*, [^|]+((?:\| \*\*\d+\*\* )+)\|$", page, re.M)
    assert len(rows) == 2, "the page lost a reasonspan row (calls whole, arguments streamed)"
    for row in rows:
        passed, soft, failed, of = (int(n) for n in re.findall(r"\d+", row))
        assert (failed, passed + soft + failed, of) == (misses, len(fixtures), len(fixtures)), redo
    listed = page.split("## The misses", 1)[1].split("\n## ", 1)[0]
    assert set(re.findall(r"`([\w.-]+/[\w.-]+)`", listed)) == set(replay.KNOWN_MISSES), redo
    for fixture_id in replay.STREAMED_BREAKS:
        assert f"`{fixture_id}`" in page, redo


# ---------------------------------------------------------------------- links

MARKDOWN = sorted([*ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md")])
"""The Markdown files of the clone: the top-level ones and docs/."""

_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
_LINK = re.compile(r"\]\(<?([^()\s<>]+)>?(?:\s+\"[^\"]*\")?\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$")


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (a ``# comment`` there is no heading)."""
    lines: list[str] = []
    fence = ""
    for line in text.splitlines():
        m = _FENCE.match(line)
        if m and (not fence or m.group(1) == fence):
            fence = "" if fence else m.group(1)
        elif not fence:
            lines.append(line)
    return lines


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def github_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings: the heading's text lower-cased,
    links reduced to their text, punctuation (code-span backticks too) dropped, spaces made
    hyphens, and ``-1``, ``-2`` ... added to repeats; plus explicit ``<a id/name>`` anchors."""
    anchors: set[str] = set(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text))
    seen: dict[str, int] = {}
    for line in _prose_lines(text):
        m = _HEADING.match(line)
        if not m:
            continue
        heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(f"{slug}-{count}" if count else slug)
    return anchors


def relative_links(text: str) -> list[str]:
    """The link targets in a Markdown file that are not URLs (no scheme), outside code."""
    # A code span may wrap inside a paragraph, never across blocks or table rows.
    blocks = re.split(r"\n\s*\n|\n(?=\|)|(?<=\|)\n", "\n".join(_prose_lines(text)))
    prose = "\n\n".join(_CODE_SPAN.sub("", block) for block in blocks)
    targets = _LINK.findall(prose) + _REFERENCE.findall(prose)
    return [t for t in targets if not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", t)]


def broken_links(path: Path) -> list[str]:
    """Each relative link of ``path`` whose file, or heading anchor in a Markdown file, is
    missing, as ``target (why)``."""
    broken: list[str] = []
    for target in relative_links(path.read_text(encoding="utf-8")):
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in github_anchors(_read(dest)):
            broken.append(f"{target} (no heading with that anchor in {dest.name})")
    return broken


def test_the_link_checker_finds_what_it_should(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "a.md").write_text(
        "# Title\n\n## Tool calls\n\n## Tool calls\n\n### Structured output (extra `grammar`)\n"
        "```python\n# not a heading\n[in code](missing.md)\n```\n"
        "[ok](#tool-calls) [ok](#tool-calls-1) [ok](#structured-output-extra-grammar) "
        "[ok](docs/b.md#b) `[in a span](missing.md)` [web](https://example.com/x.md)\n"
        "[bad](#not-a-heading) [bad](docs/c.md) [bad](docs/b.md#nowhere)\n\n[ref]: docs/d.md\n",
        "utf-8",
    )
    (tmp_path / "docs" / "b.md").write_text("# B\n\n[back](../a.md#title)\n", "utf-8")
    assert broken_links(tmp_path / "a.md") == [
        "#not-a-heading (no heading with that anchor in a.md)",
        "docs/c.md (no such file)",
        "docs/b.md#nowhere (no heading with that anchor in b.md)",
        "docs/d.md (no such file)",
    ]
    assert broken_links(tmp_path / "docs" / "b.md") == []


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    """A link into the docs (a file, or a heading's anchor) that leads nowhere fails here:
    the README's sections link the pages under docs/ and back."""
    assert not broken_links(path), f"{path.relative_to(ROOT)}: {broken_links(path)}"
