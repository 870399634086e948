"""Judge configuration: one dataclass, validated at construction, recorded in every verdict's fingerprint."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

BACKENDS = ("cuda", "triton")
DEVICES = ("auto", "cpu", "cuda")
LIBRARY_OPS = ("reject", "allow_gemm")


@dataclass
class JudgeOptions:
    device: str = "auto"
    """Where candidates run: `cuda`, `cpu` (Triton interpreter, correctness only) or `auto` (cuda if present)."""
    trials: int = 5
    """Correctness trials, each on fresh inputs drawn with a seed the candidate cannot predict."""
    atol: dict[str, float] = field(default_factory=lambda: {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2})
    """Absolute tolerance by output dtype (KernelBench's current values); dtypes not listed compare exactly."""
    rtol: dict[str, float] = field(default_factory=lambda: {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2})
    """Relative tolerance by output dtype."""
    allow_tf32: bool = False
    """Precision policy. TF32 off for reference and candidate unless set; recorded in the verdict."""
    timing: bool = True
    """Time candidate and reference (GPU only; CPU verdicts are never timed, unless `timing_on_cpu`)."""
    timing_on_cpu: bool = False
    """Run the timing stage on CPU as well, with host clocks: it exercises the whole timing protocol and its guards
    (tests, CI). CPU runtimes say nothing about a kernel's speed: never use them as rewards."""
    compile_baseline: bool = True
    """Also time `torch.compile` of the reference, for `speedup_compile`."""
    timing_sets: int = 3
    """Distinct input sets rotated through timed calls."""
    timing_fresh: int = 2
    """Input sets made only after the timed loop, each called once and timed (guard `fresh_inputs`: timed calls
    answered from outputs kept for inputs seen before are right, and launch the module's kernels, but only a call on
    new values costs the work). Only where the task keeps its full plan of outputs and its inputs are at most
    `admission.FRESH_MAX_IN_BYTES`; 0 turns it off."""
    warmup: int = 5
    min_calls: int = 20
    max_calls: int = 200
    budget_s: float = 2.0
    """Timed GPU work per module: calls are sized to this within [min_calls, max_calls]."""
    launch_cover: bool = True
    """Keep the GPU busy (a calibrated sleep kernel after the L2 flush) for longer than the host takes to enqueue one
    call, so each call's events span its GPU work, not the host's launch latency: a launch-bound kernel's figure then
    no longer moves with the CPU's load or clocks (`timing.time_model`). Applies to reference and candidate alike."""
    timing_pool: bool = True
    """Time small tasks (inputs placed, `TimingConfig.own_pool`) from a memory pool made for each timing: the L2
    flush buffer, the placed inputs and all the timed calls allocate, side by side in new memory, so a timed call's
    pages lie beside the flush buffer's however long the worker has lived (a two-kernel eager module read about 1 us
    slower in some processes than in others; `bench/timing_probe.py` measures whether this removes it)."""
    timing_graphs: bool = True
    """Also time small tasks' calls replayed from captured CUDA graphs (`timing.graph_timing`); where candidate and
    reference both have graph figures, speedups divide those (`Verdict.timed_by`): the host's launches, whose cost
    moves from process to process, are then out of both figures. On an H100 the 16 candidates of
    `bench/timing_stability.py` held their bounds with it (16 of 16; eagerly, 15: a two-kernel reference's 6.3-7.3
    us). A CUDA candidate's launches without a stream (`k<<<g, b>>>`) are recorded where the split build applies
    (`build/split.py` gives them torch's current stream); built as written, they go to the legacy default stream
    outside the capture and keep the eager figures, as do modules whose replays differ from their eager outputs."""
    build_timeout_s: float = 600.0
    """Wall-clock budget to import the candidate (CUDA builds happen here)."""
    front_check: bool = True
    """Before the build farm builds a CUDA candidate, check its device code in seconds (nvcc's front end on the
    torch-free kernels, the `.cu` as written preprocessed: `judge/build/front.py`) and answer `compile_error` at once
    when the build would certainly fail (an identifier nothing declares); in every other case the build runs as
    without it. Off: every candidate pays its full build. For a Triton candidate, its source is read for errors
    Triton's code generator certainly raises at the first launch (a `tl` function that does not exist, a name bound
    nowhere, a keyword a `tl` function does not take: `judge/triton_front.py`), answered before any worker starts."""
    run_timeout_s: float = 120.0
    """Wall-clock budget for the correctness trials and, separately, for timing."""
    hang_after_s: float = 5.0
    """A candidate's forward that has run this long on a GPU (or 1,000 times the reference's timed call, if longer),
    its Triton compiles and autotuning not counted, is a hang: the worker is killed and the verdict is `timeout` at
    once, not after `run_timeout_s`. A kernel that never ends, or a host loop that never returns, keeps its GPU from
    timing anything else, and the trials queue behind the waiting timing: on the H200 each of a batch's hangs stalled
    every verdict for the whole run timeout. Not applied to a candidate that may use torch.compile (its first
    forward compiles), nor on CPU. 0: off."""
    library_ops: str = "reject"
    """Policy on library calls of the task's main compute op (guard `no_custom_kernel`). `reject`: forward must not
    call the reference's main aten op(s) (its GEMMs/convolutions, or else every non-trivial op) on the full problem.
    `allow_gemm` (mixed policy): GEMMs and convolutions may stay in the library (cuBLAS/cuDNN) when the solution also
    launches a kernel of its own (the fused epilogue); every other main op is still rejected. Zero launches of the
    solution's own kernels is rejected under both."""
    roofline_tbs: float = 10.0
    """Memory bandwidth (TB/s) for the `roofline` guard's floor: no call can write its outputs faster than this. Set
    above every GPU's (H200 4.8, B200 8); 0 turns the guard off."""
    reference_cache_gb: float = 8.0
    """Reference results kept in the judge's memory (least recently used tasks dropped past this)."""
    reference_device_gb: float = 32.0
    """Of those, how many GB stay on the judge's GPU, where outputs are compared (0: none; the rest in host memory)."""
    kept_output_gb: float = 4.0
    """Outputs one judging keeps per side (reference, candidate). A task whose trials, replays, wide trials and timed
    sets would keep more runs fewer of each (`footprint.choose_plan`, down to 2 trials, 1 replay, 1 wide, 1 timed):
    KernelBench's 6 GB outputs times 15 sets would not fit a machine's memory."""
    device_outputs_mb: float = 8.0
    """CUDA outputs of at least this many MB reach the judge as device memory (`sandbox/devmem.py`: an exported
    allocation, copied on the GPU), never through host memory; smaller ones, and all on CPU, through the sealed
    memfd. 0: all through the memfd."""
    gpu_memory_gb: float = 0.0
    """GPU memory the pool admits workers against (0: the device's memory less the judge's own share)."""
    host_memory_gb: float = 0.0
    """Host memory the pool admits workers' outputs and kept references against (0: 80% of what the machine has free,
    less the judge's process and the pre-spawned workers)."""
    memory_limit_gb: float = 16.0
    """Address-space limit of CPU workers (not applied on GPU: CUDA reserves huge virtual ranges)."""

    def __post_init__(self) -> None:
        if self.device not in DEVICES:
            raise ValueError(f"JudgeOptions.device must be one of {DEVICES}, got {self.device!r}")
        if self.trials < 1:
            raise ValueError(f"JudgeOptions.trials must be >= 1, got {self.trials}")
        if self.library_ops not in LIBRARY_OPS:
            raise ValueError(f"JudgeOptions.library_ops must be one of {LIBRARY_OPS}, got {self.library_ops!r}")
        if self.timing_fresh < 0:
            raise ValueError(f"JudgeOptions.timing_fresh must be >= 0, got {self.timing_fresh}")
        if self.timing_sets < 1:
            raise ValueError(f"JudgeOptions.timing_sets must be >= 1, got {self.timing_sets}")

    def resolved_device(self) -> str:
        if self.device != "auto":
            return self.device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def timing_config(self) -> dict:
        return {"warmup": self.warmup, "min_calls": self.min_calls, "max_calls": self.max_calls,
                "budget_s": self.budget_s, "launch_cover": self.launch_cover, "own_pool": self.timing_pool,
                "graphs": self.timing_graphs}  # fmt: skip

    def to_dict(self) -> dict:
        return asdict(self)
