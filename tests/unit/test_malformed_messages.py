"""Worker messages are signed with a key that lives in the worker, so a candidate can forge them: `malformed` turns
every shape the judge cannot read into a verdict (`rejected`, guard `channel`) instead of an exception."""

import pytest

from kernelzero.judge.core import malformed

TIMING = {"median_ms": 1.0, "iqr_ms": 0.1, "min_ms": 0.9, "n": 20}
OUTPUTS = {"event": "outputs", "structures": ["tensor"], "checksums": [["ab"]], "ops": {"add": 4}, "launches": 1,
           "seconds": {"trials": 0.5}}  # fmt: skip
TIMED = {"event": "timing", "candidate": {"events": TIMING, "wall": TIMING}, "storage_bytes": 64}


def test_what_the_worker_sends_is_well_formed():
    assert malformed(OUTPUTS) is None and malformed(TIMED) is None
    assert malformed({"event": "built", "seconds": 1.5}) is None  # events the judge reads no field of
    assert malformed({"event": "error", "stage": "forward", "message": "boom"}) is None


@pytest.mark.parametrize(
    "msg, field",
    [
        ({**OUTPUTS, "structures": "tensor"}, "structures"),
        ({**OUTPUTS, "checksums": [[1]]}, "checksums"),
        ({**OUTPUTS, "ops": {"add": "4"}}, "ops"),
        ({**OUTPUTS, "launches": True}, "launches"),
        ({**TIMED, "candidate": {"events": {**TIMING, "extra": 1}, "wall": TIMING}}, "candidate"),
        ({**TIMED, "candidate": {"events": {**TIMING, "median_ms": "fast"}, "wall": TIMING}}, "candidate"),
        ({**TIMED, "storage_bytes": 1.5}, "storage_bytes"),
        ({"event": "guard", "guard": None, "message": "x"}, "guard"),
        ({k: v for k, v in OUTPUTS.items() if k != "structures"}, "structures"),  # a required field left out
    ],
)
def test_forged_shapes_are_named(msg, field):
    assert malformed(msg) == f"field `{field}`"


def test_not_a_message():
    assert malformed(["outputs"]) == malformed({"event": 3}) == "not a dict with a string `event`"
