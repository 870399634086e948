"""The CPU proxies' corpus: copied from the committed GPU-judged pack as it is, or extended to more training tasks
with the writer's own solutions, never with a test pair."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from study_proxy_common import copy_corpus, proxy_config  # noqa: E402

from kernelzero.loop.runlog import read_records  # noqa: E402
from kernelzero.study import family  # noqa: E402
from kernelzero.study.writer import write_solution  # noqa: E402

PACK = ROOT / "bench" / "results" / "study_h100_d1bb4a6.tgz"


def _rows(corpus: Path) -> list[dict]:
    return list(read_records(corpus / "corpus.jsonl"))


def test_the_pack_is_copied_as_it_is_and_extended_with_the_writers_solutions(tmp_path):
    as_is = _rows(copy_corpus(PACK, tmp_path / "a"))
    wider = _rows(copy_corpus(PACK, tmp_path / "b", train_tasks=600))
    assert len(as_is) == 512 and wider[:512] == as_is
    tasks = {t.name: t for t in family.train_tasks(600)}
    assert [r["task_name"] for r in wider] == list(tasks)  # the family's first 600, in order
    assert all(r["solution"] == write_solution(tasks[r["task_name"]]) for r in wider)
    assert not any(family.is_test_set(r["apis"]) for r in wider)
    assert proxy_config(10, train_tasks=600).train_tasks == 600


def test_a_corpus_short_of_triples_keeps_every_pair_task_and_the_first_triples(tmp_path):
    pairs = _rows(copy_corpus(PACK, tmp_path / "p", train_tasks=600, triples=0))
    tasks = family.train_tasks(600)
    expected = [t.name for t in tasks if len(t.apis) == 2]
    assert [r["task_name"] for r in pairs] == expected and len(expected) > 250
    few = _rows(copy_corpus(PACK, tmp_path / "f", train_tasks=600, triples=5))
    assert [r["task_name"] for r in few if len(r["apis"]) == 3] == [t.name for t in tasks if len(t.apis) == 3][:5]
    assert [r["task_name"] for r in few if len(r["apis"]) == 2] == expected
    own = _rows(copy_corpus(PACK, tmp_path / "o", triples=0))  # the pack's own rows, no extension
    assert len(own) < 512 and {len(r["apis"]) for r in own} == {2}


def test_the_novel_rl_tasks_are_fresh_tasks_whose_composition_no_corpus_task_names():
    from study_rl_proxy import rl_task_pool

    from kernelzero.study.writer import slug

    train = family.train_tasks(400)
    corpus, fresh = train[:300], train[300:]
    novel = rl_task_pool("novel", corpus, fresh)
    named = {slug(t) for t in corpus}
    assert 0 < len(novel) < len(fresh) and all(slug(t) not in named for t in novel)
    assert [t for t in fresh if slug(t) not in named] == novel  # every such fresh task, in order
    assert rl_task_pool("fresh", corpus, fresh) == fresh and rl_task_pool("corpus", corpus, fresh) == corpus
    assert not {slug(t) for t in family.test_tasks(64)} & named  # what "novel" stands in for


def test_the_learnable_rl_tasks_are_those_solved_sometimes_but_not_always(monkeypatch):
    import study_rl_proxy

    pool = family.train_tasks(6)
    counts = [0, 8, 3, 1, 7, 8]  # of 8 tries each
    monkeypatch.setattr(study_rl_proxy, "solved", lambda model, tasks, judge, samples, seed: counts[: len(tasks)])
    kept, screen = study_rl_proxy.learnable(Path("unused"), pool, None, 8, 0)
    assert kept == [pool[2], pool[3], pool[4]]
    assert screen == {"screened": 6, "samples": 8, "kept": 3, "all_correct": 2, "none_correct": 1}


def test_an_rl_phase_cut_part_way_resumes_from_its_last_checkpoint_with_the_batches_it_trained_on(tmp_path):
    from study_rl_proxy import resume_batches

    phase = tmp_path / "rl-a"
    (phase / "checkpoint-2").mkdir(parents=True)
    (phase / "checkpoint-5").mkdir()
    (phase / "batches.json").write_text(json.dumps([0.5, 0.25, 1.0, 0.75]))
    assert resume_batches(phase, 2) == ([0.5, 0.25], 5)  # step 5 of mu 2: two whole batches, the third judged again
    (phase / "batches.json").unlink()  # checkpoints without the batches' record: start over
    assert resume_batches(phase, 2) == ([], None) and not phase.exists()
    assert resume_batches(tmp_path / "never-run", 2) == ([], None)
