"""The registry: fixture coverage, names and aliases, errors, and entry-point plugins."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import reasonspan
from reasonspan import ReasoningParser, UnknownParserError
from reasonspan.runtime.parser import registry
from tests.support.fixtures import DATA, FAMILY_TOKENIZERS, SYNTHETIC, how_to_declare


def test_every_family_has_a_fixture_tokenizer() -> None:
    # FAMILY_TOKENIZERS is read from the FIXTURE each tests/families/test_<family>.py declares.
    names = [cls.spec.name for cls in registry.families()]
    missing = sorted(set(names) - set(FAMILY_TOKENIZERS))
    assert not missing, "\n".join(how_to_declare(f) for f in missing)
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
    from tests.support.fixtures import tokenizer

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
    from tests.support.fixtures import tokenizer

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


# Adding a family touches its module (and its test file) and nothing else: the package
# imports every module in architectures/ (no list to extend), and what detection needs
# beyond the spec is the family's `hint`, beside the spec (no table keyed by name).

ARCHITECTURES = Path(registry.__file__).resolve().parents[2] / "architectures"


def _builtin() -> list[type[ReasoningParser]]:
    return [c for c in registry.families() if c.__module__.startswith("reasonspan.architectures.")]


def test_builtin_families_are_exactly_the_modules_of_architectures() -> None:
    on_disk = {p.stem for p in ARCHITECTURES.glob("*.py") if p.stem != "__init__"}
    registering = {c.__module__.rpartition(".")[2] for c in _builtin()}
    assert registering == on_disk, "every module in architectures/ registers a family"


def test_hints_sit_beside_their_specs() -> None:
    import inspect

    from reasonspan.runtime.shared.hint import NO_HINT, DetectionHint, hint_of

    hinted = 0
    for cls in _builtin():
        hint = hint_of(cls)
        assert hint is vars(cls).get("hint", NO_HINT), cls  # its own body, never inherited
        if hint is not NO_HINT:
            hinted += 1
            assert isinstance(hint, DetectionHint)
            assert "hint = DetectionHint(" in inspect.getsource(cls), cls
    assert hinted >= 20
    assert hint_of(reasonspan.get_parser_class("qwen3")).model_types[0] == "qwen3"


_NEW_FAMILY = """
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint


@register
class NewFamilyParser(ReasoningParser):
    spec = ReasoningSpec(
        name="new_family_for_test",
        start=("<think>",),
        end=("</think>",),
        required=("<think>", "</think>"),
    )
    hint = DetectionHint(model_types=("new_family_model_type",))
"""


def test_a_new_family_is_one_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of the architectures package's own __init__ finds a module dropped beside it:
    the family is registered, parses, and detection reads its hint, with no other edit."""
    import shutil
    import sys

    from reasonspan.detection import detect
    from tests.support.fixtures import folder, tokenizer

    package = tmp_path / "new_families_for_test"
    package.mkdir()
    shutil.copy(ARCHITECTURES / "__init__.py", package / "__init__.py")
    (package / "new_family.py").write_text(_NEW_FAMILY, encoding="utf-8")
    model = tmp_path / "model"
    shutil.copytree(folder("qwen-3"), model)
    (model / "config.json").write_text('{"model_type": "new_family_model_type"}', "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with registry.rescan_plugins_for_tests():
            __import__("new_families_for_test")
            cls = reasonspan.get_parser_class("new_family_for_test")
            assert cls.__module__ == "new_families_for_test.new_family"
            tok = tokenizer("qwen-3")
            result = cls.create(tok).parse(tok.encode("<think>plan</think>answer"))
            assert (result.reasoning, result.content) == ("plan", "answer")
            found = {c.name: c for c in detect(model).candidates}
            assert any("config.json names" in r for r in found["new_family_for_test"].reasons)
        assert "new_family_for_test" not in reasonspan.list_parsers()
    finally:
        for name in [m for m in sys.modules if m.startswith("new_families_for_test")]:
            del sys.modules[name]
