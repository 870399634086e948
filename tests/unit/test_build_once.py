"""What the build farm builds once per toolchain (precompiled headers, the bridge) stays safe when two judges on one
machine build it at the same time: the first promotion wins and is never removed under the judge using it."""

import threading
from pathlib import Path

from kernelzero.judge.build.farm import BuildFarm


def test_two_judges_building_the_same_header_at_once_keep_the_first_promotion(tmp_path: Path):
    out = tmp_path / "pch" / "abc"
    out.parent.mkdir()
    both_building = threading.Barrier(2)
    first_promoted = threading.Event()
    results = {}

    def build(tag: str, wait_for_first: bool):
        def make(tmp: Path) -> None:
            tmp.mkdir()
            (tmp / "h.gch").write_text(tag)
            both_building.wait(10)
            if wait_for_first:
                first_promoted.wait(10)

        return make

    def judge(tag: str, second: bool) -> None:
        results[tag] = BuildFarm._build_once(out, "h.gch", build(tag, second), "header")
        if not second:
            first_promoted.set()

    threads = [threading.Thread(target=judge, args=("a", False)), threading.Thread(target=judge, args=("b", True))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert results == {"a": True, "b": True}
    assert (out / "h.gch").read_text() == "a"  # the second build did not replace the one in use
    assert sorted(p.name for p in out.parent.iterdir()) == ["abc"]  # no temporary folder left behind


def test_a_failed_build_reports_false_and_leaves_nothing(tmp_path: Path):
    out = tmp_path / "bridge"

    def fails(tmp: Path) -> str:
        tmp.mkdir()
        return "g++: error"

    assert BuildFarm._build_once(out, "lib.so", fails, "bridge") is False
    assert list(tmp_path.iterdir()) == []
