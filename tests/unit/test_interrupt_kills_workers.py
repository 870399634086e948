"""Ctrl-C during a study or a training run: the judge's running jobs are killed before its pool is closed, else the
close waits them out (a study interrupted on the H200 took over 30 s to stop, its corpus judgings running on)."""

import pytest

import kernelzero.judge.pool as pool_module
from kernelzero.judge.options import JudgeOptions
from kernelzero.judge.pool import JudgePool
from kernelzero.loop import coevolve
from kernelzero.loop.config import RunConfig
from kernelzero.study.config import StudyConfig
from kernelzero.study.run import Study


def test_a_pool_closed_with_kill_kills_its_workers_first(monkeypatch):
    killed = []
    monkeypatch.setattr(pool_module, "kill_workers", lambda: killed.append(True) or 0)
    JudgePool(JudgeOptions(device="cpu"), workers=1, warm=False).close()
    assert killed == []
    JudgePool(JudgeOptions(device="cpu"), workers=1, warm=False).close(kill=True)
    assert killed == [True]


class _Pool:
    def __init__(self):
        self.closed = []

    def close(self, wait=True, kill=False):
        self.closed.append(kill)


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_an_interrupted_study_closes_its_judge_with_kill(tmp_path, monkeypatch, error):
    study = Study(StudyConfig(device="cpu"), tmp_path, say=lambda m: None)
    pool = study._pool = _Pool()

    def stage(name, done, work):
        raise error()

    monkeypatch.setattr(study, "stage", stage)
    with pytest.raises(error):
        study.run()
    assert pool.closed == ([True] if error is KeyboardInterrupt else [False])  # a failure: running jobs finish


def test_an_interrupted_training_run_closes_its_judge_with_kill(tmp_path, monkeypatch):
    loop = coevolve.CoEvolution(RunConfig(), tmp_path / "run", say=lambda m: None)
    pool = loop._judge = _Pool()

    def unit(r):
        raise KeyboardInterrupt

    monkeypatch.setattr(loop, f"_unit_{coevolve.UNITS[0]}", unit)
    with pytest.raises(KeyboardInterrupt):
        loop.run()
    assert pool.closed == [True] and loop._judge is None
