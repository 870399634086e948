"""The judge's side of memory: the admission gate, a task's plan by output size, `too_large`, what a worker needs.

`Judge` inherits these (`MemoryPlanning`); the sizes and the gate themselves are `footprint`'s. Also here: the
trial seeds and the replay plan, which a plan shrinks.
"""

from __future__ import annotations

import gc
import random
import time
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING

import torch

from kernelzero.judge.footprint import (
    GB,
    WORKER_GPU,
    WORKER_HOST,
    Footprint,
    MemoryGate,
    Plan,
    choose_plan,
    host_memory_bytes,
)

if TYPE_CHECKING:
    from kernelzero.judge.core import Reference

LEASE_BYTES = GB  # a task keeping more outputs than this reserves a candidate's share with its reference
WARM_GPU = 2 * GB // 3  # an idle pre-spawned worker's CUDA context on its GPU (624 MB measured on the H200)
GROWTH = 64 * 2**20  # free device memory rising by more than this is a worker's memory coming back, not noise
FRESH_MAX_IN_BYTES = 256 * 2**20  # inputs above this get no fresh timing sets (`JudgeOptions.timing_fresh`)


def _seeds(n: int) -> list[int]:
    rng = random.SystemRandom()  # os.urandom: nothing in a candidate's process can predict these
    return [rng.randrange(1, 2**31 - 1) for _ in range(n)]


def _replay_plan(trials: int) -> list[list[int]]:
    """Replay trials, drawn here (unseen by candidates): [trial, perturbation seed], perturbed ones right after
    their plain twin so a cache keyed on the buffer sees the same pointer and almost the same contents."""
    rng = random.SystemRandom()
    j = rng.randrange(max(1, trials - 1))  # not the last trial: a "return the last output" cache fails at once
    k = rng.randrange(trials)
    return [[j, 0], [j, _seeds(1)[0]], [k, 0], [k, _seeds(1)[0]], [j, _seeds(1)[0]]]


def _nbytes(tensors: list) -> int:
    """Bytes of the tensors in a list (other entries, e.g. None, count 0)."""
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def _gpu_bytes(ref: Reference) -> int:
    """Bytes of the tensors `ref` keeps on a device, not in host memory (its outputs came over on the GPU)."""
    return _nbytes([t for t in ref.tensors() if t.device.type != "cpu"])


def _gb(n: int | None) -> float | None:
    return None if n is None else round(n / GB, 3)


def _put(memory: dict[str, float], **figures: int | None) -> None:
    """Set `Verdict.memory` figures given in bytes, as GB; unknown ones (None) are left out."""
    memory.update({k: _gb(v) for k, v in figures.items() if v is not None})


def _memory_figures(ref: Reference, on_device: bool) -> dict[str, float]:
    """The reference's figures for `Verdict.memory` (the candidate's are added as they arrive); `on_device`: its
    outputs crossed on the GPU (`sandbox/devmem.py`), not in host memory."""
    kept = ref.footprint.out_bytes * ref.plan.sets if ref.footprint and ref.plan and not on_device else 0
    host = (ref.rss_peak or 0) + kept
    memory: dict[str, float] = {}
    _put(memory, ref_gpu=ref.gpu_peak, ref_host=host or None)
    return memory


def held_elsewhere(index: int) -> int:
    """Device bytes that processes other than this one hold on GPU `index` now, as the driver counts them: a trainer's
    model beside the judge, or a judge started while another still runs. Left out of the gate, they let workers be
    admitted into memory that is not there: a candidate that runs out of it is rerun alone, after waiting up to 30 s
    (`_await_free_gpu`) for free memory that the other process never gives back, and the queue waits behind it. On an
    80 GB H100, a second judge started while the first's process still held its memory lost 60 s of a 120 s pass so.
    This process's own CUDA context (about 0.5 GB) counts here too, on top of the judge's 4 GB share: a safe half GB."""
    free, total = torch.cuda.mem_get_info(index)
    return max(0, total - free - torch.cuda.memory_reserved(index))


class MemoryPlanning:
    """Mixed into `Judge`: admission by memory and the plan of a task's trials (attributes are the Judge's)."""

    def gate(self) -> MemoryGate:
        """The admission gate this judge's workers pass (a pool shares one across its judges); made on first use."""
        with self._lock:
            if self._gate is None:
                self._gate = MemoryGate(self.capacities(warm_workers=0))
            return self._gate

    def set_gate(self, gate: MemoryGate, gpu_key: str) -> None:
        self._gate, self.gpu_key = gate, gpu_key

    def capacities(self, warm_workers: int, warm_here: int = 0) -> dict[str, int]:
        """This judge's resources in a gate: its GPU, the references it may keep there, and the host's memory.
        `warm_workers`: idle pre-spawned workers in all (host memory); `warm_here`: those on this judge's GPU."""
        caps = {"host": self._host_capacity(warm_workers)}
        if self.device == "cuda":
            caps[self.gpu_key] = self._gpu_capacity(warm_here)
            caps[f"refs:{self.gpu_key}"] = int(self.options.reference_device_gb * GB)
            caps[self._big_key] = 1  # one big task's reference at a time (`_admit_reference`)
        return caps

    @property
    def _big_key(self) -> str:
        return f"big:{self.gpu_key}"

    def _own_gpu(self, ref: Reference) -> int:
        """Device bytes `ref` holds in the gate for its own outputs (a big task's, kept on the GPU: `_settle`)."""
        return max(0, ref.holds.get(self.gpu_key, 0) - (ref.lease or {}).get(self.gpu_key, 0))

    def _whole_gpu(self, need: dict[str, int], ref: Reference) -> bool:
        """Whether a candidate admitted with `need` holds all the GPU its task's reference leaves: its estimate was
        clamped there, so it may use more, and the references kept in their own budget leave first
        (`_await_free_gpu`): a 7.5 GB RMSNorm's candidate, its copies in the judge and its reference's outputs
        together take 106 of the GPU's 140 GB."""
        cap = self.gate().capacity.get(self.gpu_key)
        return cap is not None and need.get(self.gpu_key, 0) + self._own_gpu(ref) >= cap

    def _gpu_capacity(self, warm_workers: int = 0) -> int:
        """Device bytes this judge's workers may take: the GPU's memory less what other processes hold there when
        the gate is made (`held_elsewhere`), the judge's own context, comparison chunks and kept references, and the
        CUDA contexts of `warm_workers` idle pre-spawned workers (624 MB each on the H200: sixteen of them, uncounted,
        were the 10 GB a 7.5 GB RMSNorm's comparison ran short of), or `gpu_memory_gb` when set."""
        o = self.options
        if o.gpu_memory_gb:
            return int(o.gpu_memory_gb * GB)
        index = torch.device(self.compare_device or "cuda").index or 0
        total = torch.cuda.get_device_properties(index).total_memory
        return int(total - held_elsewhere(index) - (o.reference_device_gb + 4) * GB - warm_workers * WARM_GPU)

    def _host_capacity(self, warm_workers: int) -> int:
        """Host bytes admitted workers may take: 80% of what the machine has free, less the judge's own process with
        its reference cache and `warm_workers` idle pre-spawned workers (about 0.5 GB each measured on the H200), or
        `host_memory_gb`."""
        o = self.options
        if o.host_memory_gb:
            return int(o.host_memory_gb * GB)
        spare = int(0.8 * host_memory_bytes()) - warm_workers * GB - int((o.reference_cache_gb + 4) * GB)
        return max(4 * GB, spare)

    def _too_large(self, fp: Footprint | None) -> str | None:
        """Why a task cannot be judged on this machine at all, in one line, or None."""
        if fp is None:
            return None
        gate = self.gate()
        least = choose_plan(self._full_plan(), fp.out_bytes, 0)
        sizes = (f"inputs {fp.in_bytes / GB:.1f} GB, outputs {fp.out_bytes / GB:.1f} GB, parameters "
                 f"{fp.param_bytes / GB:.1f} GB")  # fmt: skip
        on_device = self._on_device(fp)
        # One copy of the kept outputs, the worker's: a need past the gate's capacity is clamped to it, so such a task
        # runs with the GPU to itself, where the judge's copies fit beside it (KernelBench's 8 GB L1/L2 norms).
        gpu, host = fp.gpu_need(plan=least if on_device else None, copies=1), fp.host_need(least, on_device)
        if self.device == "cuda" and gpu > gate.capacity[self.gpu_key]:
            return (f"the task needs about {gpu / GB:.0f} GB of GPU memory ({sizes}), more than the "
                    f"{gate.capacity[self.gpu_key] / GB:.0f} GB one job may use on this GPU")  # fmt: skip
        if host > gate.capacity["host"]:
            return (f"the task needs about {host / GB:.0f} GB of host memory for its outputs "
                    f"({sizes}), more than the {gate.capacity['host'] / GB:.0f} GB the judge may use")  # fmt: skip
        return None

    def _on_device(self, fp: Footprint | None) -> bool:
        """Whether this task's outputs reach the judge on the GPU (`sandbox/devmem.py`): CUDA, and big enough."""
        mb = self.options.device_outputs_mb
        return self.device == "cuda" and mb > 0 and fp is not None and fp.out_bytes >= mb * 2**20

    def _full_plan(self) -> Plan:
        o = self.options
        return Plan(o.trials, len(_replay_plan(o.trials)), 2, o.timing_sets, o.timing_fresh)

    def _plan(self, ref: Reference) -> None:
        """Shrink `ref`'s seeds, replays, wide trials and timing sets to the plan its output size allows. The timing's
        fresh sets (one more set of inputs and outputs each, on both sides) only come with a full plan and inputs of
        at most FRESH_MAX_IN_BYTES (the memory gate counts their outputs in the plan, their inputs in its slack)."""
        full = self._full_plan()
        fp = ref.footprint
        plan = choose_plan(full, fp.out_bytes if fp is not None else None, self.options.kept_output_gb * GB)
        if fp is None or fp.in_bytes > FRESH_MAX_IN_BYTES:
            plan = replace(plan, fresh=0)
        ref.plan = plan
        ref.fresh_seeds = _seeds(plan.fresh)  # drawn with the plan: only the plan knows how many fit
        if replace(plan, fresh=full.fresh) == full:  # the full plan, fresh sets or not
            return
        ref.seeds = ref.seeds[: plan.trials]
        last = plan.trials - 1  # the last trial's buffer, new contents: the probe a pointer-keyed cache fails
        ref.replay = ([[last, _seeds(1)[0]]] if plan.replays == 1 else
                      [[0, 0], [0, _seeds(1)[0]], [last, _seeds(1)[0]]][: plan.replays])  # fmt: skip
        ref.wide = ref.wide[: plan.wide]
        ref.timing_seeds = ref.timing_seeds[: plan.timing_sets]

    def _needs(self, fp: Footprint | None, plan: Plan, alone: bool, measured: int | None = None,
               copies: int = 2) -> dict[str, int]:  # fmt: skip
        """What one worker of this task holds: GPU (its footprint, or the reference's measured peak), host (its
        outputs); `alone`: the whole GPU, for a run that ran out of memory beside others."""
        gate = self.gate()
        on_device = self._on_device(fp)
        need = {"host": fp.host_need(plan, on_device) if fp is not None else WORKER_HOST + 4 * GB}
        if self.device == "cuda":
            gpu = (fp.gpu_need(measured, plan if on_device else None, copies) if fp is not None
                   else max(WORKER_GPU + (measured or 0), 8 * GB))  # fmt: skip
            need[self.gpu_key] = gate.capacity[self.gpu_key] if alone else gpu
        return need

    # ------------------------------------------------------------------ kept references
    def _keep(self, ref: Reference) -> None:
        """Keep `ref`'s tensors on the compare GPU when they fit beside the other references there
        (`reference_device_gb`, a budget of its own in the gate, held for as long as `ref` lives: a candidate still
        judged against an evicted reference keeps it alive); every compare then copies only the candidate's outputs
        there. Else they stay in host memory, bounded by the cache (`reference_cache_gb`). Never blocks: a reference
        waiting for memory that only its own candidates could free would deadlock the pool."""
        n = ref.nbytes
        if not n or ref.error is not None:
            return
        gate = self.gate()
        held = None
        # Its own budget, never held against a waiting worker, and never clamped: a 38 GB reference held as the
        # budget's 32 GB hid 6 GB from the gate. One larger than the budget stays under its task's own hold
        # (`_settle`), where its candidates' admission counts it.
        if self.compare_device not in (None, "cpu") and n <= gate.capacity.get(f"refs:{self.gpu_key}", 0):
            with self._lock:
                self._evict_from_device(gate, n)
            # jump: only `_keep` asks for this budget, so workers waiting in the gate (a big task's reference,
            # say) are no reason to refuse it; refused, a 32 GB reference crossed to the host at ~1.5 GB/s
            held = gate.acquire({f"refs:{self.gpu_key}": n}, block=False, jump=True)
        on_gpu = _gpu_bytes(ref)
        if held is None and (not on_gpu or self._own_gpu(ref) >= on_gpu):
            return  # where they are: host memory, or the GPU under the big task's own hold (`_settle`)
        # Outputs that came over on the device (devmem), found no room in the budget and are held by nothing in the
        # gate go to host memory (a small task's: `_evict` bounds them). A big task's stayed on the GPU: moved here,
        # unseen by the gate, KernelBench's 6.4 GB activations filled the host's 125 GB in a minute.
        target = self.compare_device if held is not None else "cpu"
        copies: dict[int, torch.Tensor] = {}  # an unperturbed replay is its trial's tensor: one copy of it

        def move(t: torch.Tensor) -> torch.Tensor:
            if id(t) not in copies:
                copies[id(t)] = t.to(target)
            return copies[id(t)]

        def moved(tensors: list) -> list:
            return [move(t) if isinstance(t, torch.Tensor) else t for t in tensors]

        ref.outputs = [moved(ts) for ts in ref.outputs]
        ref.replay_outputs = [moved(ts) for ts in ref.replay_outputs]
        ref.wide_outputs = [moved(ts) for ts in ref.wide_outputs]
        ref.timed_outputs = [(s, moved(ts)) for s, ts in ref.timed_outputs]
        if held is not None:
            ref.on_device = True
            weakref.finalize(ref, gate.release_later, held)
            # what held its outputs where they came from (host pages, device copies) goes: the budget holds them now
            gone = {k: v - (ref.lease or {}).get(k, 0) for k, v in ref.holds.items() if k in ("host", self.gpu_key)}
            ref.holds.update({k: v - gone.get(k, 0) for k, v in ref.holds.items()})  # the lease, a token: kept
            gate.release(gone)

    def _evict(self) -> None:
        """Drop least recently used references past `reference_cache_gb` (a long run meets thousands of tasks). An
        evicted task gets a fresh reference, with fresh seeds, when it comes back. References on the GPU count against
        their own budget there instead (`_evict_from_device`); one in host memory is dropped whatever its age, so
        idle references never hold more host memory than the budget (a 30 GB one lives only while its candidates are
        judged). Called under `self._lock`."""
        budget = self.options.reference_cache_gb * 2**30
        unheld = [r for r in self._refs.values() if not r.on_device and not any(r.holds.values())]
        total = sum(r.nbytes for r in unheld)
        for key, ref in list(self._refs.items()):  # least recently used first
            if total <= budget:
                break
            if not ref.on_device and not any(ref.holds.values()):
                del self._refs[key]
                self._ref_locks.pop(key, None)
                total -= ref.nbytes

    def _await_free_gpu(self, timeout_s: float = 30.0, less: int = 0, still_s: float = 5.0) -> float:
        """Before a reference or candidate reruns with the GPU to itself: drop the idle references kept there and
        this process's cached blocks, then wait (at most `timeout_s`) until the device's free memory, as the driver
        counts it, covers the gate's whole capacity: a killed worker's memory comes back some time after the process
        is gone, and a rerun that started before that ran out of memory again (KernelBench's 7.5 GB RMSNorm right
        after LogSoftmax). `less`: bytes of the task's own reference kept on the GPU, which stay. It stops early once
        free memory has not grown for `still_s`: what is missing then is held by another process (a trainer's
        model grown since the gate was made), and the whole queue waits behind this rerun for nothing.
        Returns the free GB it last saw."""
        gate = self.gate()
        with self._lock:
            self._evict_from_device(gate, gate.capacity.get(f"refs:{self.gpu_key}", 0))
        gc.collect()
        torch.cuda.empty_cache()
        index = torch.device(self.compare_device or "cuda").index or 0
        start = time.monotonic()
        most, grew = 0, start  # the most free memory seen, and when it last grew (by more than noise)
        while True:
            free, now = torch.cuda.mem_get_info(index)[0], time.monotonic()
            if free >= gate.capacity[self.gpu_key] - less or now > start + timeout_s:
                return free / GB
            if free > most + GROWTH:
                most, grew = free, now
            elif now - grew > still_s:
                return free / GB
            time.sleep(0.1)

    def _evict_from_device(self, gate: MemoryGate, n: int) -> None:
        """Drop least recently used references on the GPU until `n` more bytes fit its reference budget (their bytes
        come back once no candidate is judged against them). Called under `self._lock`."""
        key = f"refs:{self.gpu_key}"
        for k, ref in list(self._refs.items()):
            if key not in gate.held or gate.held[key] + n <= gate.capacity[key]:
                break
            if ref.on_device:
                del self._refs[k]
                self._ref_locks.pop(k, None)
                del ref
                gc.collect(0)

    # ------------------------------------------------------------------ a task's lease
    def _admit_reference(self, ref: Reference, alone: bool) -> dict[str, int]:
        """Hold the reference worker's memory; for a big task (kept outputs over LEASE_BYTES) also one candidate's
        share, the task's lease, so its candidates can always run beside the reference outputs it keeps in host
        memory (a reference waiting for memory only its candidates free would deadlock the pool). Idle big
        references are dropped first: their holds come back once no candidate uses them.
        One big task's reference lives at a time (the gate's `big:` token, held until it dies): each keeps its
        outputs (6-30 GB on KernelBench's level 1) while its candidates wait for memory, and eight of them in flight
        held the machine's whole memory with no candidate able to run."""
        need = self._needs(ref.footprint, ref.plan, alone, copies=1)
        fp = ref.footprint
        if fp is not None and ref.plan is not None and fp.out_bytes * ref.plan.sets > LEASE_BYTES:
            ref.lease = self._needs(fp, ref.plan, False)
            need = {k: need.get(k, 0) + ref.lease.get(k, 0) for k in need.keys() | ref.lease.keys()}
            need[self._big_key] = 1
            self._drop_leases()
        return self.gate().acquire(need, on_wait=self._drop_leases)  # idle leases go when anything waits

    def _drop_leases(self) -> None:
        """Drop the big tasks' references from the cache: each holds its lease until no candidate uses it."""
        with self._lock:  # (no loop variable: one would keep the last reference alive while we wait)
            for key in [k for k, r in self._refs.items() if r.lease is not None]:
                del self._refs[key]
        if self.device == "cuda":  # a dropped reference's device copies, once freed, go back to the driver: the
            torch.cuda.empty_cache()  # gate counts them free, and a worker in another process needs them there

    def _settle(self, ref: Reference, held: dict[str, int]) -> None:
        """After the reference's worker ends: a big task's reference keeps its lease and the host bytes of the
        outputs it keeps (released when it is garbage collected or moves to the GPU); everything else goes back."""
        gate = self.gate()
        if not held:
            return
        if ref.error is not None or ref.lease is None:
            ref.lease = None
            gate.release(held)
            return
        # The worker's share of what it handed over passes to the judge's copies, where they are: host memory (a
        # memfd), or this GPU (`sandbox/devmem.py`), where `_keep` leaves those the references' budget cannot take.
        # They exist, so they are counted first; the lease, a reservation, gets what is left (a need clamped to the
        # GPU's capacity may leave less than both; a short lease is topped up by its candidate).
        on_gpu = _gpu_bytes(ref)
        kept = {"host": ref.nbytes - on_gpu, self.gpu_key: on_gpu}
        kept = {k: max(0, min(v, held.get(k, 0))) for k, v in kept.items() if k in held}
        lease = {k: max(0, min(v, held.get(k, 0) - kept.get(k, 0))) for k, v in ref.lease.items()}
        ref.lease, ref.holds = lease, {k: lease.get(k, 0) + kept.get(k, 0) for k in lease.keys() | kept.keys()}
        if held.get(self._big_key):
            ref.holds[self._big_key] = held[self._big_key]  # until it dies: the next big task's reference waits
        gate.release({k: v - ref.holds.get(k, 0) for k, v in held.items()})
        weakref.finalize(ref, gate.release_later, ref.holds)  # what it holds when it dies (`_keep` may take host back)

    def _admit_candidate(self, ref: Reference, admitted, alone: bool = False) -> dict[str, int]:
        """Admit one candidate of `ref`'s task into `admitted` (an ExitStack): through the task's lease when it is
        free and covers the candidate's need, else by that need in the gate (plus the reference's host-resident
        outputs, for a small task whose reference holds nothing). `alone`: the whole GPU."""
        gate = self.gate()
        need = self._needs(ref.footprint, ref.plan or self._full_plan(), alone, ref.gpu_peak)
        own = self._own_gpu(ref)  # the reference's outputs stay on the GPU while it runs: never wait for those
        if own and self.gpu_key in need:
            need[self.gpu_key] = min(need[self.gpu_key], gate.capacity.get(self.gpu_key, 0) - own)
        # The big task's candidates go first: the next big task's reference, waiting for this one's token at the head
        # of the queue, waits for them (queued behind it, they would wait for each other forever).
        first = bool(ref.holds.get(self._big_key))
        if first:  # at its end, a reference no candidate is using dies now, not at a waiter's next second
            admitted.callback(lambda: self.gate().waiting and self._drop_leases())
        if ref.lease is not None and ref.lease_lock.acquire(blocking=False):
            admitted.callback(ref.lease_lock.release)
            lease = ref.lease
            # The lease was sized from the footprint, before the reference ran (KernelBench's 8 GB pooling: lease
            # 37 GB, measured peak 81 GB). What it lacks is taken only if it fits now: candidates holding their
            # leases while waiting for more deadlocked the pool (four of them held 73 of 104 GB, each waiting).
            extra = {k: v - lease.get(k, 0) for k, v in gate.clamp(need).items() if v > lease.get(k, 0)}
            more = gate.acquire(extra, block=False, jump=first) if extra else {}
            if more is not None:
                if more:
                    admitted.callback(gate.release, more)
                return {k: lease.get(k, 0) + more.get(k, 0) for k in lease.keys() | more.keys()}
            self._give_up_lease(ref)  # then wait holding nothing, like any candidate
        if not ref.on_device and not ref.holds:
            need["host"] += ref.nbytes
        held = gate.acquire(need, on_wait=self._drop_leases, jump=first)
        admitted.callback(gate.release, held)
        return held

    def _give_up_lease(self, ref: Reference) -> None:
        """Return `ref`'s lease to the gate for good (its candidates are then admitted by their own needs) and drop
        it from the cache like any big reference (`_drop_leases`): what else it holds (its outputs' host bytes) stays
        until the candidates judged against it end. Kept, with no lease for `_drop_leases` to find and holds that
        keep `_evict` off it, it would live, outputs and all, for the whole run. Called with `ref.lease_lock` held."""
        lease, ref.lease = ref.lease, None
        for k, v in lease.items():
            ref.holds[k] = ref.holds.get(k, 0) - v  # the finalizer releases what is left of the same dict
        self.gate().release(lease)
        with self._lock:
            for key in [k for k, r in self._refs.items() if r is ref]:
                del self._refs[key]
