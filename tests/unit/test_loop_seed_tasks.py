"""How the loop fills a Coder phase with seed tasks (`fill_with_seeds`): the round's own tasks first, then seeds up to
the cap, a different draw of them each round when more exist than fit."""

from __future__ import annotations

from kernelzero.loop.coevolve import fill_with_seeds
from kernelzero.tasks import Task

SEEDS = [Task(name=f"seed{i}", source=f"# seed {i}") for i in range(20)]
NEW = [Task(name="new", source="# proposed"), SEEDS[3]]  # a valid proposal, and a seed recycled as hard


def names(tasks):
    return [t.name for t in tasks]


def test_the_rounds_tasks_come_first_and_no_task_twice():
    out = fill_with_seeds(NEW, SEEDS, cap=8, draw="0:0")
    assert names(out)[:2] == ["new", "seed3"] and len(out) == 8 and len(set(names(out))) == 8


def test_each_round_draws_its_own_seeds_and_the_same_round_the_same():
    rounds = [names(fill_with_seeds([], SEEDS, cap=6, draw=f"0:{r}")) for r in range(3)]
    assert len({tuple(r) for r in rounds}) == 3  # not the file's first six every round
    assert rounds[0] != names(SEEDS[:6])
    assert names(fill_with_seeds([], SEEDS, cap=6, draw="0:1")) == rounds[1]  # a resumed round draws the same
    assert names(fill_with_seeds([], SEEDS, cap=6, draw="1:1")) != rounds[1]  # another run seed, another draw


def test_all_seeds_in_file_order_when_they_fit_and_the_cap_holds():
    assert names(fill_with_seeds(NEW[:1], SEEDS[:4], cap=16, draw="0:0")) == ["new", "seed0", "seed1", "seed2", "seed3"]
    assert names(fill_with_seeds(SEEDS[:5], SEEDS, cap=3, draw="0:0")) == ["seed0", "seed1", "seed2"]
