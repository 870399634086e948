"""The build tricks' levels (`farm.trick_headers`, for bench/build_ablation.py) and the ablation's rule."""

import json
import sys
from pathlib import Path

import pytest

from kernelzero.judge.build.farm import TRICKS, trick_headers

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import build_ablation  # noqa: E402

ALL = {"pch_dirs": {"f": "/p"}, "light_pch_dirs": {"f": "/l"}, "bridge": "/b.so"}


def test_each_level_adds_one_part():
    jobs = {level: trick_headers(ALL, level) for level in TRICKS}
    assert jobs["plain"] == {"pch_dirs": {}, "light_pch_dirs": {}, "bridge": None, "split": False}
    assert jobs["split"] == {**jobs["plain"], "split": True}
    assert jobs["pch"] == {**jobs["split"], "pch_dirs": {"f": "/p"}}
    assert jobs["bridge"] == {**ALL, "split": True}
    assert build_ablation.LEVELS == TRICKS  # the bench names them without importing the farm (and torch)
    with pytest.raises(ValueError, match="tricks"):
        trick_headers(ALL, "turbo")


def test_a_part_stays_only_when_it_saves_ten_percent_in_both_passes():
    walls = {"plain": 100.0, "split": 80.0, "pch": 75.0, "bridge": 60.0}
    second = {**walls, "bridge": 70.0}  # the bridge saves 20% in one pass, 6.7% in the other
    passes = [[{"level": k, "wall_s": v} for k, v in w.items()] for w in (walls, second)]
    parts = {p["part"]: p for p in build_ablation.decide(passes)}
    assert parts["split"]["savings"] == [0.2, 0.2] and parts["split"]["keep"]
    assert parts["pch"]["savings"] == [0.062, 0.062] and not parts["pch"]["keep"]
    assert parts["bridge"]["savings"] == [0.2, 0.067] and not parts["bridge"]["keep"]


def test_passes_run_in_parts_merge_into_one_decision(tmp_path):
    walls = {"plain": 100.0, "split": 80.0, "pch": 60.0, "bridge": 50.0}

    def part(k, levels):
        path = tmp_path / f"p{k}{levels[0]}.json"
        path.write_text(json.dumps({"passes": {str(k): [{"level": lv, "wall_s": walls[lv], "mismatches": []}
                                                          for lv in levels]}}))  # fmt: skip
        return path

    files = [part(1, ["plain", "split"]), part(1, ["pch", "bridge"]), part(2, ["bridge"]),
             part(2, ["pch", "split", "plain"])]  # fmt: skip
    out = tmp_path / "merged.json"
    assert build_ablation.main(["--merge", *map(str, files), "--out", str(out)]) == 0
    merged = json.loads(out.read_text())
    assert [r["level"] for r in merged["passes"]["2"]] == ["bridge", "pch", "split", "plain"]
    assert all(p["keep"] for p in merged["parts"]) and merged["parts"][0]["savings"] == [0.2, 0.2]
    assert build_ablation.main(["--merge", *map(str, files[:3])]) == 2  # pass 2 lacks pch, split and plain
    assert build_ablation.main(["--merge", *map(str, files), str(files[0])]) == 2  # a level twice


def test_merge_takes_one_pass_of_a_file_when_asked(tmp_path):
    """`FILE:1` keeps pass 1's rows of a record that also holds pass 2 (run again later and merged from another)."""
    def record(name, passes):
        path = tmp_path / name
        rows_of = {str(k): [{"level": lv, "wall_s": w, "mismatches": []} for lv, w in r] for k, r in passes.items()}
        path.write_text(json.dumps({"passes": rows_of}))
        return path

    old = record("old.json", {1: [("plain", 100.0), ("split", 40.0), ("pch", 34.0), ("bridge", 26.0)],
                              2: [("bridge", 99.0), ("pch", 99.0)]})  # fmt: skip
    new = record("new.json", {2: [("bridge", 25.0), ("pch", 30.0), ("split", 36.0), ("plain", 90.0)]})
    assert build_ablation.main(["--merge", str(old), str(new)]) == 2  # pass 2's bridge and pch in both
    out = tmp_path / "merged.json"
    assert build_ablation.main(["--merge", f"{old}:1", str(new), "--out", str(out)]) == 0
    merged = json.loads(out.read_text())
    assert [r["wall_s"] for r in merged["passes"]["2"]] == [25.0, 30.0, 36.0, 90.0]  # the new file's, not 99
    assert merged["parts"][0]["savings"] == [0.6, 0.6] and merged["merged"] == [f"{old}:1", str(new)]


def test_settle_waits_for_a_quiet_machine_and_gives_up_at_its_limit():
    # every sample is under an infinite bound: quiet from the first, so it waits the hold and stops well before its
    # limit (a bound of 1.01 failed on a fully loaded machine: /proc/stat's 10 ms ticks can add up to 102% busy)
    assert 0.5 <= build_ablation.settle(busy_below=float("inf"), hold_s=0.5, limit_s=5.0) < 5.0
    # nor ever under 0% busy: never quiet, so it waits its whole limit
    assert build_ablation.settle(busy_below=0.0, hold_s=0.5, limit_s=1.2) >= 1.2
