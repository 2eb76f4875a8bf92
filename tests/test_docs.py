"""The README's generated tables (families from the registry, command-line flags from the
argparse parsers) must stay in step with what they are generated from."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import reasonspan
from reasonspan import docs
from reasonspan.runtime.parser import switches

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_table_matches_registry() -> None:
    current = docs.readme_section(README.read_text(encoding="utf-8"))
    expected = docs.families_markdown()
    assert current == expected, (
        f"README.md's families table disagrees with the registry; regenerate it with: "
        f"{docs.REGENERATE}"
    )


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
    readme = tmp_path / "README.md"
    begin, end = docs.section_markers("flags")
    readme.write_text(
        f"# x\n\nbefore\n{docs.BEGIN}\nold table\n{docs.END}\nmiddle\n{begin}\nold\n{end}\nafter\n",
        "utf-8",
    )
    assert docs.main(["--check", str(readme)]) == 1
    out = capsys.readouterr().out
    assert docs.REGENERATE in out and "families, flags" in out
    assert docs.main(["--write", str(readme)]) == 0
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# x\n\nbefore\n") and text.endswith(f"{end}\nafter\n")
    assert f"{docs.END}\nmiddle\n{begin}" in text
    assert docs.main(["--check", str(readme)]) == 0


def test_readme_flag_tables_match_the_parsers() -> None:
    current = docs.readme_section(README.read_text(encoding="utf-8"), "flags")
    assert current == docs.generated()["flags"], (
        f"README.md's flag tables disagree with the argument parsers; regenerate them with: "
        f"{docs.REGENERATE}"
    )


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
        docs.readme_section("# no markers here\n")
    with pytest.raises(ValueError, match="flags:start"):
        docs.readme_section("# no markers here\n", "flags")


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
