"""The CI sample of ``@pytest.mark.sampled`` tests (tests/support/sampling.py): every group
keeps a case, the sample is a fraction, and it does not depend on the process (xdist workers must
all collect the same tests)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from tests.support.sampling import examples, sample


@dataclass
class _Parent:
    nodeid: str


@dataclass
class _Item:
    """What sample() reads of a pytest item: its marker, parameters, test and parent."""

    originalname: str
    params: dict[str, Any]
    mark: pytest.Mark | None
    parent: _Parent = field(default_factory=lambda: _Parent("tests/test_x.py"))

    @property
    def name(self) -> str:
        return f"{self.originalname}[{self.params}]"

    @property
    def callspec(self) -> Any:
        return type("CallSpec", (), {"params": self.params})()

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return self.mark if name == "sampled" else None


FAMILIES = [f"family{i}" for i in range(13)]
VARIANTS = ["a", "b", "c"]


def items(mark: pytest.Mark | None, name: str = "test_sweep") -> list[Any]:
    return [_Item(name, {"family": f, "variant": v}, mark) for f in FAMILIES for v in VARIANTS]


def kept(all_items: list[Any]) -> list[Any]:
    out = {id(i) for i in sample(all_items)}
    return [i for i in all_items if id(i) not in out]


def test_every_group_keeps_a_case_and_the_rest_is_a_fraction() -> None:
    every = 5
    swept = items(pytest.mark.sampled(every=every, by="family").mark)
    runs = kept(swept)
    assert {i.params["family"] for i in runs} == set(FAMILIES)  # no family hidden
    assert len(runs) == len(FAMILIES)  # 3 variants < every: one per family
    # Sibling families run different variants, so the sample spans them all.
    assert {i.params["variant"] for i in runs} == set(VARIANTS)


def test_without_groups_one_case_in_every_runs() -> None:
    swept = items(pytest.mark.sampled(every=4).mark)
    runs = kept(swept)
    assert len(runs) in (len(swept) // 4, len(swept) // 4 + 1)
    # Spread over the sweep, not its first cases.
    positions = [swept.index(i) for i in runs]
    assert all(b - a == 4 for a, b in pairwise(positions))


def test_unmarked_tests_and_every_1_lose_nothing() -> None:
    assert sample(items(None)) == []
    assert sample(items(pytest.mark.sampled(every=1).mark)) == []


def test_a_callable_groups_by_any_function_of_the_parameters() -> None:
    swept = items(pytest.mark.sampled(every=50, by=lambda p: p["family"][-1]).mark)
    runs = kept(swept)
    assert sorted(i.params["family"][-1] for i in runs) == sorted({f[-1] for f in FAMILIES})


def test_a_bad_every_is_a_usage_error() -> None:
    with pytest.raises(pytest.UsageError, match=r"test_sweep: sampled\(every=\.\.\.\)"):
        sample(items(pytest.mark.sampled(every=0).mark))


def test_the_sample_is_the_same_in_every_process() -> None:
    """str hashes change per process: the sample must not depend on one."""
    code = (
        "import tests.test_sampling as t; "
        "print([i.name for i in t.kept(t.items(t.pytest.mark.sampled(every=4).mark))])"
    )
    # ``python -c`` puts its working directory first on sys.path: the repository root,
    # where the ``tests`` package is.
    root = Path(__file__).resolve().parent.parent
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(seed)},
        ).stdout
        for seed in (1, 2)
    }
    assert len(runs) == 1 and runs != {""}


def test_examples_is_a_quarter_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REASONSPAN_LONG", raising=False)
    assert [examples(n) for n in (3, 25, 40, 300)] == [3, 6, 10, 75]
    monkeypatch.setenv("REASONSPAN_LONG", "1")
    assert [examples(n) for n in (3, 25, 40, 300)] == [3, 25, 40, 300]
