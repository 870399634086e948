"""Worker messages are signed with a key that lives in the worker, so task and candidate code can forge them:
`messages.parse` turns every shape a parent cannot read into a ProtocolError (the judge's verdict: `rejected`, guard
`channel`) instead of an exception, and what the worker really sends into typed records."""

import json

import pytest

from kernelzero.judge.sandbox.messages import (
    PROTOCOL,
    CandidateBuilt,
    CandidateOutputs,
    Failed,
    ProtocolError,
    Sized,
    Started,
    ValidateOutputs,
    parse,
    wire,
)

TIMING = {"median_ms": 1.0, "iqr_ms": 0.1, "min_ms": 0.9, "n": 20}
OUTPUTS = {"event": "outputs", "structures": ["tensor"], "checksums": [["ab"]], "ops": {"add": 4}, "launches": 1,
           "seconds": {"trials": 0.5}}  # fmt: skip
TIMED = {"event": "timing", "candidate": {"events": TIMING, "wall": TIMING, "config": {"warmup": 5}},
         "storage_bytes": 64}  # fmt: skip
VALID_OUTPUTS = {"event": "outputs", "structures": ["tensor"] * 3, "non_tensor": [], "forward_ms": 0.1}


def reason(msg, job: str = "candidate") -> str:
    with pytest.raises(ProtocolError) as err:
        parse(msg, job)
    return err.value.reason


def test_what_the_worker_sends_is_well_formed():
    outputs = parse(OUTPUTS, "candidate")
    assert isinstance(outputs, CandidateOutputs) and (outputs.launches, outputs.ops) == (1, {"add": 4})
    assert parse(TIMED, "candidate").storage_bytes == 64
    assert parse({"event": "built", "seconds": 1.5}, "candidate") == CandidateBuilt(seconds=1.5)
    assert parse({"event": "error", "stage": "forward", "message": "boom"}, "candidate") == Failed("forward", "boom")
    assert parse({"event": "started"}, "reference") == Started()  # figures only: pid and veil may be left out


def test_each_typed_message_survives_the_wire():
    """`wire` (the worker's side) and `parse` (the parent's) agree on every field, through JSON."""
    sent = [Started(pid=7, veil="/dev/shm"), Sized(meta=False, input_elements=512, param_elements=32),
            ValidateOutputs(structures=["tensor"] * 3, non_tensor=[], forward_ms=0.25),
            CandidateOutputs(structures=["tuple[2]"], checksums=[["a", "b"]], launches=None)]  # fmt: skip
    jobs = ["validate", "validate", "validate", "candidate"]
    assert [parse(json.loads(json.dumps(wire(m))), job) for m, job in zip(sent, jobs)] == sent


@pytest.mark.parametrize(
    "msg, field",
    [
        ({**OUTPUTS, "structures": "tensor"}, "structures"),
        ({**OUTPUTS, "checksums": [[1]]}, "checksums"),
        ({**OUTPUTS, "ops": {"add": "4"}}, "ops"),
        ({**OUTPUTS, "launches": True}, "launches"),
        ({**TIMED, "candidate": {"events": {**TIMING, "extra": 1}, "wall": TIMING}}, "candidate"),
        ({**TIMED, "candidate": {"events": {**TIMING, "median_ms": "fast"}, "wall": TIMING}}, "candidate"),
        ({**TIMED, "candidate": {"events": {**TIMING, "median_ms": float("nan")}, "wall": TIMING}}, "candidate"),
        ({**TIMED, "candidate": {"events": TIMING, "wall": TIMING, "fresh": {"min_ms": 0.1}}}, "candidate"),
        ({**TIMED, "storage_bytes": 1.5}, "storage_bytes"),
        ({**OUTPUTS, "seconds": {"trials": "0.5"}}, "seconds"),
        ({"event": "guard", "guard": None, "message": "x"}, "guard"),
        ({"event": "started", "veil": "x" * 5000}, "veil"),
        ({k: v for k, v in OUTPUTS.items() if k != "structures"}, "structures"),  # a required field left out
    ],
)
def test_forged_shapes_are_named(msg, field):
    assert reason(msg) == f"field `{field}`"


def test_not_a_message():
    assert reason(["outputs"]) == reason({"event": 3}) == "not a dict with a string `event`"


def test_a_claim_the_worker_never_makes_is_rejected():
    """A forger's extra field (a verdict it wants) and an event its job never sends are named, not ignored."""
    assert reason({**OUTPUTS, "valid": True}) == "unexpected field `valid`"
    assert reason({"event": "verdict", "status": "ok"}) == "not an event of a candidate job"
    assert reason({"event": "sized", "meta": False, "input_elements": 1, "param_elements": 1}) == (
        "not an event of a candidate job"
    )  # a validation message in a candidate's channel


@pytest.mark.parametrize(
    "msg, field",
    [
        ({"event": "sized", "meta": 0, "input_elements": 1, "param_elements": 1}, "meta"),
        ({"event": "sized", "meta": False, "input_elements": -1, "param_elements": 1}, "input_elements"),
        ({"event": "sized", "meta": False, "input_elements": "1", "param_elements": 1}, "input_elements"),
        ({**VALID_OUTPUTS, "forward_ms": "0"}, "forward_ms"),
        ({**VALID_OUTPUTS, "forward_ms": float("nan")}, "forward_ms"),
        ({**VALID_OUTPUTS, "non_tensor": [True]}, "non_tensor"),
        ({"event": "outputs", "non_tensor": [], "forward_ms": 0.1}, "structures"),
    ],
)
def test_forged_validation_messages_are_named(msg, field):
    assert reason(msg, "validate") == f"field `{field}`"


def test_every_job_kind_has_the_common_messages():
    assert all({"started", "done", "error", "guard"} <= set(table) for table in PROTOCOL.values())
