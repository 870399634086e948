"""Phase checkpoints on resume: torn ones go, a finished phase is not re-trained, final/ excludes training state."""

import json

from kernelzero.loop.checkpoints import clean_torn_checkpoints, export_final, finished_checkpoint


def make(ckpt, step=None, torn_state=False):
    ckpt.mkdir(parents=True)
    (ckpt / "model.safetensors").write_text("w")
    (ckpt / "optimizer.pt").write_text("o")
    if step is not None:
        text = '{"global_step": ' if torn_state else json.dumps({"global_step": step})
        (ckpt / "trainer_state.json").write_text(text)


def test_torn_checkpoints_are_removed_complete_ones_kept(tmp_path):
    make(tmp_path / "checkpoint-1", 1)
    make(tmp_path / "checkpoint-2")  # killed before trainer_state.json
    make(tmp_path / "checkpoint-3", 3, torn_state=True)  # killed inside it
    assert clean_torn_checkpoints(tmp_path) == ["checkpoint-2", "checkpoint-3"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-1"]
    assert clean_torn_checkpoints(tmp_path / "absent") == []


def test_finished_checkpoint_and_export_final(tmp_path):
    make(tmp_path / "checkpoint-1", 1)
    assert finished_checkpoint(tmp_path, max_steps=2) is None
    make(tmp_path / "checkpoint-2", 2)
    done = finished_checkpoint(tmp_path, max_steps=2)
    assert done == tmp_path / "checkpoint-2"
    (tmp_path / "final").mkdir()
    (tmp_path / "final" / "stale.bin").write_text("x")  # a final/ half-written by the killed run
    export_final(done, tmp_path / "final")
    assert sorted(p.name for p in (tmp_path / "final").iterdir()) == ["model.safetensors"]
