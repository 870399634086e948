"""`kernelzero study --sft-from`: a second study starts each seed from a first one's corpus and SFT weights (a folder,
or a pack with its weights parts beside it), takes the evaluations after SFT whose fields agree, and is refused,
before anything is written, where the SFT would not be the same."""

import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from kernelzero.study.config import SFT_FIELDS, field_mismatch, smoke_config
from kernelzero.study.run import Study
from kernelzero.study.weights import WEIGHTS_PACK, pack, pack_weights, weights_digest


def _first_study(folder: Path, seed: int = 0) -> dict[str, str]:
    """A finished corpus and seed SEED's SFT of both roles (each `final/` a distinct weights file), its Coder's
    evaluation after SFT and its Proposer's; returns each role's weights digest."""
    folder.mkdir(parents=True)
    (folder / "study_config.json").write_text(json.dumps(asdict(smoke_config()), default=str))
    (folder / "corpus").mkdir()
    (folder / "corpus" / "done.json").write_text('{"kept": 3}')
    (folder / "corpus" / "corpus.jsonl").write_text('{"task_name": "t0"}\n')
    digests = {}
    for role in ("coder", "proposer"):
        sft = folder / f"seed-{seed}" / "sft" / role
        (sft / "final").mkdir(parents=True)
        (sft / "final" / "model.safetensors").write_bytes(f"{role} weights".encode())
        (sft / "checkpoint-4").mkdir()  # a trainer checkpoint: never taken
        (sft / "metrics.jsonl").write_text('{"step": 4}\n')
        digests[role] = weights_digest(sft / "final")
        (sft / "done.json").write_text(json.dumps({"role": role, "weights": digests[role]}))
    for name, valid in (("eval-sft", None), ("proposer-eval-sft", 0.25)):
        ev = folder / f"seed-{seed}" / name
        ev.mkdir()
        (ev / "summary.json").write_text(json.dumps({"valid_share": valid, "meta": {"weights": digests["coder"]}}))
    return digests


def _as_pack(folder: Path, dest: Path, seed: int = 0) -> Path:
    """The folder packed without weights, its SFT weights beside it as a queue writes them (`ARM-sSEED/` in front)."""
    pack(folder, dest)
    finals = sorted((folder / f"seed-{seed}" / "sft").glob("*/final"))
    pack_weights([(f, f"main-s{seed}/{f.relative_to(folder)}") for f in finals], dest.with_name(WEIGHTS_PACK))
    return dest


@pytest.fixture
def no_study_run(monkeypatch):
    """`Study.run` replaced by a record of the folder it was handed: these tests stop where the study would start."""
    seen = []
    monkeypatch.setattr(Study, "run", lambda self: seen.append(self.out) or {"runs": {}})
    return seen


@pytest.mark.parametrize("as_pack", [False, True])
def test_a_seed_starts_from_another_studys_sft(tmp_path, no_study_run, as_pack, capsys):
    from kernelzero.cli import main

    digests = _first_study(tmp_path / "first")
    source = _as_pack(tmp_path / "first", tmp_path / "carried" / "study.tgz") if as_pack else tmp_path / "first"
    config = tmp_path / "second.yaml"
    config.write_text("proposer_batch: 8\nproposer_eval_samples: 4\n")  # the loop and the Proposer's evaluation
    new = tmp_path / "second"
    args = ["study", "--smoke", "-c", str(config), "--sft-from", str(source), "--out", str(new)]
    assert main(args) == 0 and no_study_run == [new]
    for role in ("coder", "proposer"):
        sft = new / "seed-0" / "sft" / role
        assert weights_digest(sft / "final") == digests[role]
        assert (sft / "done.json").is_file() and (sft / "metrics.jsonl").is_file()
        assert not (sft / "checkpoint-4").exists()
    assert (new / "corpus" / "done.json").is_file()
    assert json.loads((new / "study_config.json").read_text())["proposer_eval_samples"] == 4
    assert (new / "seed-0" / "eval-sft" / "summary.json").is_file()  # same evaluation fields: taken
    assert not (new / "seed-0" / "proposer-eval-sft").exists()  # 4 samples per set here, 1 there: runs again
    out = capsys.readouterr().out
    assert f"seed 0 from {source}: sft: coder {digests['coder']}, proposer {digests['proposer']}" in out
    assert "proposer-eval-sft: made there with other proposer_eval_samples, runs here" in out
    # a rerun resumes its own folder: nothing is taken again, even when the source is gone
    (new / "seed-0" / "sft" / "coder" / "metrics.jsonl").write_text("resumed\n")
    assert main(args) == 0
    assert (new / "seed-0" / "sft" / "coder" / "metrics.jsonl").read_text() == "resumed\n"


def test_another_sft_setting_or_missing_weights_is_refused_before_anything_is_written(tmp_path, no_study_run, capsys):
    from kernelzero.cli import main

    _first_study(tmp_path / "first")
    other = tmp_path / "other.yaml"
    other.write_text("sft_lr: 0.5\n")
    new = tmp_path / "x"
    assert main(["study", "--smoke", "-c", str(other), "--sft-from", str(tmp_path / "first"), "--out", str(new)]) == 2
    assert "--sft-from" in capsys.readouterr().err and not new.exists() and no_study_run == []
    assert field_mismatch(json.loads((tmp_path / "first" / "study_config.json").read_text()),
                           replace(smoke_config(), sft_lr=0.5, rounds=4), SFT_FIELDS) == ["sft_lr"]  # fmt: skip
    # a pack whose weights did not come with it: no SFT to start from (its done.json names weights that are not there)
    pack(tmp_path / "first", tmp_path / "bare" / "study.tgz")
    assert main(["study", "--smoke", "--sft-from", str(tmp_path / "bare" / "study.tgz"), "--out", str(new)]) == 2
    err = capsys.readouterr().err
    assert "SFT weights of seed 0" in err and WEIGHTS_PACK in err and not new.exists()
    # a seed the first study never trained
    assert main(["study", "--smoke", "--seed", "3", "--sft-from", str(tmp_path / "first"), "--out", str(new)]) == 2
    assert "no finished SFT of the coder at seed 3" in capsys.readouterr().err and not new.exists()


def test_sft_from_takes_the_corpus_too(tmp_path, no_study_run, capsys):
    from kernelzero.cli import main

    _first_study(tmp_path / "first")
    args = ["study", "--smoke", "--sft-from", str(tmp_path / "first"), "--corpus-from", str(tmp_path / "elsewhere"),
            "--out", str(tmp_path / "x")]  # fmt: skip
    assert main(args) == 2
    assert "no such file or folder" in capsys.readouterr().err
    (tmp_path / "elsewhere").mkdir()
    assert main(args) == 2
    assert "takes its corpus too" in capsys.readouterr().err and not (tmp_path / "x").exists()
