"""The registry: fixture coverage, names and aliases, errors, and entry-point plugins."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from fixtures import DATA, FAMILY_TOKENIZERS, SYNTHETIC

import reasonspan
from reasonspan import ReasoningParser, UnknownParserError
from reasonspan.runtime.parser import registry


def test_every_family_has_a_fixture_tokenizer() -> None:
    names = [cls.spec.name for cls in registry.families()]
    missing = sorted(set(names) - set(FAMILY_TOKENIZERS))
    assert not missing, f"add these families to tests/fixtures.py::FAMILY_TOKENIZERS: {missing}"
    for family, tok in FAMILY_TOKENIZERS.items():
        assert tok in SYNTHETIC or (DATA / tok).is_dir(), f"{family}: no fixture named {tok!r}"


def test_stale_fixture_entries_name_registered_families() -> None:
    # An entry for a family that no longer exists would silently test nothing.
    assert set(FAMILY_TOKENIZERS) <= set(reasonspan.list_parsers())


def test_list_parsers_holds_every_name_and_alias() -> None:
    listed = reasonspan.list_parsers()
    assert listed == sorted(listed)
    for cls in reasonspan.families():
        for name in (cls.spec.name, *cls.spec.aliases):
            assert name in listed, name
            assert reasonspan.get_parser_class(name) is cls
    # Names are matched case- and dash-insensitively, as users type them on a command line.
    assert reasonspan.get_parser_class("DeepSeek-R1") is reasonspan.get_parser_class("deepseek_r1")


def test_families_are_one_class_per_family() -> None:
    fams = reasonspan.families()
    names = [c.spec.name for c in fams]
    assert names == sorted(set(names))
    aliases = [a for c in fams for a in c.spec.aliases]
    assert len(aliases) == len(set(aliases))
    assert not set(aliases) & set(names)


def test_unknown_name_lists_known_names() -> None:
    with pytest.raises(UnknownParserError) as info:
        reasonspan.get_parser_class("no_such_family")
    message = str(info.value)
    assert "'no_such_family'" in message
    for name in ("deepseek_r1", "qwen3", "qwq"):
        assert name in message
    assert info.value.known == reasonspan.list_parsers()
    assert isinstance(info.value, KeyError)  # callers that catch KeyError keep working


def test_unknown_name_from_create_parser_sync() -> None:
    from fixtures import tokenizer

    with pytest.raises(UnknownParserError, match=r"known parsers: .*qwen3"):
        reasonspan.create_parser_sync("qwen4", tokenizer("qwen-3"))


def _fake_distribution(root: Path) -> None:
    """A package installed the way pip leaves it: a module plus a *.dist-info folder."""
    (root / "fake_reasonspan_plugin.py").write_text(
        textwrap.dedent(
            """
            from reasonspan import ReasoningParser, ReasoningSpec

            class FakeThinkParser(ReasoningParser):
                spec = ReasoningSpec(
                    name="fake_plugin_family",
                    aliases=("fake_plugin_alias",),
                    start=("<think>",),
                    end=("</think>",),
                    required=("<think>", "</think>"),
                )
            """
        ),
        encoding="utf-8",
    )
    (root / "fake_reasonspan_plugin_module.py").write_text(
        textwrap.dedent(
            """
            from reasonspan import ReasoningParser, ReasoningSpec, register

            @register
            class FakeModuleParser(ReasoningParser):
                spec = ReasoningSpec(name="fake_plugin_by_module", start=("<think>",),
                                     end=("</think>",))
            """
        ),
        encoding="utf-8",
    )
    info = root / "fake_reasonspan_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fake-reasonspan-plugin\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        f"[{registry.ENTRY_POINT_GROUP}]\n"
        "fake = fake_reasonspan_plugin:FakeThinkParser\n"
        "fake_module = fake_reasonspan_plugin_module\n",
        encoding="utf-8",
    )


def test_entry_point_plugins_are_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fixtures import tokenizer

    _fake_distribution(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "fake_plugin_family" not in reasonspan.list_parsers()
    with registry.rescan_plugins_for_tests():
        names = reasonspan.list_parsers()
        assert {"fake_plugin_family", "fake_plugin_alias", "fake_plugin_by_module"} <= set(names)
        cls = reasonspan.get_parser_class("fake_plugin_alias")
        assert issubclass(cls, ReasoningParser) and cls.__name__ == "FakeThinkParser"
        # The plugin works like a built-in: same contract, same tokenizer tables.
        tok = tokenizer("qwen-3")
        parser = reasonspan.create_parser_sync("fake_plugin_family", tok)
        ids = tok.encode("<think>plan</think>answer")
        result = parser.parse(ids)
        assert result.reasoning == "plan" and result.content == "answer"
        assert "fake_plugin_family" in [c.spec.name for c in reasonspan.families()]
    # The hook restores the registry, so other tests never see the fake family.
    assert "fake_plugin_family" not in reasonspan.list_parsers()
    with pytest.raises(UnknownParserError):
        reasonspan.get_parser_class("fake_plugin_alias")
