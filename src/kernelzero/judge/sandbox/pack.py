"""The output channel's file format: tensors of any size written into a memfd one by one, read back without a copy.

A worker's outputs (trials, replays, wide trials, timed outputs) go into its sandbox's memfd as they are produced:
each tensor's bytes at a page-aligned offset, copied straight from the device into the mapped file (one copy, no
serializer, no second copy in the worker's heap), then a JSON trailer describing the object (lists, dicts, strings,
numbers, None, and tensors as `{"__t": index}` into a table of dtype, shape, offset) and the trailer's length in its
last 8 bytes. The harness seals the file (`process.SEALS`) before it reports; from then on nobody can change it.

The judge maps the sealed file privately and read-only in spirit (copy-on-write: nothing writes it) and builds each
tensor over the mapping (`torch.frombuffer`): a 6 GB output costs no copy and no parse, and the comparison reads it in
chunks (`check.compare`). A forged trailer cannot point outside the file or claim a dtype we do not know: `read`
checks every entry and raises PackError, which the judge reports as a tampered channel.

On a GPU, big CUDA outputs do not go into the file at all: their entries (`[dtype, shape, index, nbytes, "device"]`)
name device allocations whose descriptors the harness sends beside the sealed file (`devmem.py`); `read` checks
those entries before it asks for the allocations and takes exactly as many as the trailer names.

Whole-bundle serialization (one `torch.save` of every trial's outputs) is what failed on KernelBench's 6-8 GB tasks:
the zip writer past 6 GiB and the worker's file size limit past 8 GiB.
"""

from __future__ import annotations

import functools
import json
import mmap
import os
import struct
from typing import Any

_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
ALIGN = 4096  # each tensor starts on a page: the reader's views are aligned for every dtype
_TRAILER_LEN = struct.Struct("<Q")
MAX_TRAILER = 64 * 2**20
DEVICE = "device"  # an entry's fifth field: its bytes are in a device allocation passed beside the file (devmem)
MAX_DEVICE = 200  # device entries per pack (one SCM_RIGHTS message carries at most 253 descriptors)
# dtypes a pack may hold, by the name the trailer uses (torch's own, without the prefix)
DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
          "complex64", "complex128")  # fmt: skip


class PackError(Exception):
    """The file is not a well-formed pack (truncated, forged, or an entry outside the file)."""


class PackWriter:
    """Appends tensors to memfd `fd` (from offset 0) and finally writes the trailer describing `obj`.

    Not thread-safe; the harness owns one per output name. `add` copies a tensor (any device) into the file and
    returns its placeholder; `finish(obj)` writes the trailer for an object whose tensors are those placeholders.
    """

    def __init__(self, fd: int, bytes_view, ftruncate=os.ftruncate, stage=None, export=None):
        """bytes_view(buffer, count=, offset=): a uint8 tensor over a buffer (`torch.frombuffer` with dtype uint8,
        bound by the harness before candidate code runs). stage: a pinned uint8 host tensor through which device
        tensors are copied piece by piece (a DMA into pinned memory, then a memcpy into the file's pages), or None
        for a direct copy. export(t): the file descriptor of a device copy of `t` (`devmem.Exports.export`), or None
        for a tensor that goes into the file; a device entry names its descriptor, not bytes of the file."""
        self.fd, self._bytes_view, self._ftruncate, self._stage = fd, bytes_view, ftruncate, stage
        self._export = export
        self.entries: list[list] = []
        self.fds: list[int] = []  # descriptors of device copies, in entry order (sent beside the sealed file)
        self.end = 0
        self._ftruncate(fd, 0)

    def add(self, t) -> dict:
        """Copy tensor `t` into the file (or, when big and on a GPU, into an exported device allocation); returns
        `{"__t": index}` to put in the object where `t` goes."""
        dtype = str(t.dtype).removeprefix("torch.")
        if dtype not in DTYPES:
            raise PackError(f"cannot pack dtype {dtype}")
        nbytes = t.numel() * t.element_size()
        fd = self._export(t) if self._export is not None and len(self.fds) < MAX_DEVICE else None
        if fd is not None:
            self.fds.append(fd)
            self.entries.append([dtype, list(t.shape), len(self.fds) - 1, nbytes, DEVICE])
            return {"__t": len(self.entries) - 1}
        offset = -(-self.end // ALIGN) * ALIGN
        if nbytes:
            self._ftruncate(self.fd, offset + nbytes)
            start = offset - offset % mmap.ALLOCATIONGRANULARITY
            # MAP_POPULATE: the kernel allocates the pages at once instead of one fault per 4 KB page
            mm = mmap.mmap(self.fd, offset + nbytes - start, offset=start, flags=mmap.MAP_SHARED | _POPULATE)
            try:
                dst = self._bytes_view(mm, count=nbytes, offset=offset - start)
                stage = self._stage
                if stage is not None and nbytes > stage.numel():  # (the harness gives GPU workers one)
                    src = t.detach().contiguous().reshape(-1).view(stage.dtype)
                    for i in range(0, nbytes, stage.numel()):  # pinned: the DMA runs at the link's speed
                        n = min(stage.numel(), nbytes - i)
                        stage[:n].copy_(src[i : i + n])
                        dst[i : i + n].copy_(stage[:n])
                    del src
                else:
                    dst.view(t.dtype).view(t.shape).copy_(t.detach())  # one copy, device to the file's pages
                del dst
            finally:
                mm.close()
        self.entries.append([dtype, list(t.shape), offset, nbytes])
        self.end = offset + nbytes
        return {"__t": len(self.entries) - 1}

    def finish(self, obj: Any) -> None:
        """Write the trailer (the object with its placeholders, and the tensor table) after the last tensor."""
        trailer = json.dumps({"obj": obj, "tensors": self.entries}).encode()
        self._ftruncate(self.fd, self.end)
        os.pwrite(self.fd, trailer + _TRAILER_LEN.pack(len(trailer)), self.end)


def pack(fd: int, torch, obj: Any) -> None:
    """Write `obj` (tensors anywhere in lists, tuples and dicts) into `fd` as one pack (unsealed)."""
    writer = PackWriter(fd, functools.partial(torch.frombuffer, dtype=torch.uint8))
    writer.finish(placeholders(obj, writer.add))


def placeholders(obj: Any, add) -> Any:
    """`obj` with every tensor replaced by `add(tensor)` (tuples become lists, as in JSON)."""
    if isinstance(obj, (list, tuple)):
        return [placeholders(x, add) for x in obj]
    if isinstance(obj, dict):
        return {str(k): placeholders(v, add) for k, v in obj.items()}
    if hasattr(obj, "untyped_storage"):  # a tensor; duck-typed so this module needs no torch at import
        return add(obj)
    return obj


def read(fd: int, torch, device_copies=None) -> Any:
    """The object packed in `fd`, its tensors viewing a private mapping of the file (valid after `fd` closes).

    device_copies(sizes): the device allocations the pack's device entries name (their claimed sizes in index
    order), as flat uint8 tensors the judge owns (`Sandbox.load_output` receives and copies them); None where no
    device channel exists (a pack naming one is refused)."""
    size = os.fstat(fd).st_size
    if size < _TRAILER_LEN.size:
        raise PackError("the file is empty or truncated")
    (n,) = _TRAILER_LEN.unpack(os.pread(fd, _TRAILER_LEN.size, size - _TRAILER_LEN.size))
    body_end = size - _TRAILER_LEN.size
    if n > min(MAX_TRAILER, body_end):
        raise PackError(f"trailer length {n} does not fit the file")
    try:
        trailer = json.loads(os.pread(fd, n, body_end - n))
        obj, table = trailer["obj"], trailer["tensors"]
    except (ValueError, KeyError, TypeError) as exc:
        raise PackError(f"unreadable trailer: {exc}") from None
    data_end = body_end - n
    mm = mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE) if data_end else None
    entries = _entries(table)
    on_device = [isinstance(e, list) and len(e) == 5 for e in entries]  # `[dtype, shape, index, nbytes, "device"]`
    n_device = sum(on_device)
    if n_device and device_copies is None:
        raise PackError("the pack names device allocations, but this judge has no device channel")
    if n_device > MAX_DEVICE:
        raise PackError(f"the pack names {n_device} device allocations, more than {MAX_DEVICE}")
    sizes = {e[2]: _device_size(torch, e) for e, dev in zip(entries, on_device) if dev}
    if sorted(sizes) != list(range(n_device)):
        raise PackError("the device entries do not name allocations 0..n-1 once each")
    copies = device_copies([sizes[i] for i in range(n_device)]) if n_device else []
    tensors = [_device_tensor(torch, copies, e) if dev else _tensor(torch, mm, e, data_end)
               for e, dev in zip(entries, on_device)]  # fmt: skip

    def build(x: Any) -> Any:
        if isinstance(x, list):
            return [build(v) for v in x]
        if isinstance(x, dict):
            if set(x) == {"__t"}:
                i = x["__t"]
                if type(i) is not int or not 0 <= i < len(tensors):
                    raise PackError(f"tensor reference {i!r} outside the table")
                return tensors[i]
            return {k: build(v) for k, v in x.items()}
        return x

    return build(obj)


def _entries(table: Any) -> list:
    if not isinstance(table, list):
        raise PackError("the tensor table is not a list")
    return table


def _dtype_and_bytes(torch, entry: Any, dtype_name: Any, shape: Any) -> tuple[Any, int]:
    """An entry's torch dtype and the bytes its shape holds; PackError for an unknown dtype or a malformed shape."""
    if dtype_name not in DTYPES or not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise PackError(f"malformed tensor entry {entry!r}")
    dtype = getattr(torch, dtype_name)
    numel = 1
    for d in shape:
        numel *= d
    return dtype, numel * torch.empty((), dtype=dtype).element_size()


def _device_size(torch, entry: list) -> int:
    """The bytes of a device entry `[dtype, shape, index, nbytes, "device"]`, checked before any allocation is
    received for it."""
    dtype_name, shape, index, nbytes, kind = entry
    _, size = _dtype_and_bytes(torch, entry, dtype_name, shape)
    if kind != DEVICE or type(index) is not int or type(nbytes) is not int or size != nbytes:
        raise PackError(f"malformed device entry {entry!r}")
    return nbytes


def _device_tensor(torch, copies: list, entry: list):
    """A device entry over the index-th received copy (entries checked by `_device_size`)."""
    dtype_name, shape, index, nbytes, _ = entry
    dtype = getattr(torch, dtype_name)
    flat = copies[index]
    if flat.numel() != nbytes:
        raise PackError(f"device entry {entry!r} does not match its allocation")
    return flat.view(dtype).view(shape) if nbytes else torch.empty(shape, dtype=dtype, device=flat.device)


def _tensor(torch, mm: mmap.mmap | None, entry: Any, data_end: int):
    try:
        dtype_name, shape, offset, nbytes = entry
    except (TypeError, ValueError):
        raise PackError(f"malformed tensor entry {entry!r}") from None
    dtype, size = _dtype_and_bytes(torch, entry, dtype_name, shape)
    if type(offset) is not int or type(nbytes) is not int or offset < 0 or offset % ALIGN or nbytes < 0:
        raise PackError(f"malformed tensor entry {entry!r}")
    if size != nbytes or offset + nbytes > data_end:
        raise PackError(f"tensor entry {entry!r} does not match its size or lies outside the file")
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(mm, dtype=torch.uint8, count=nbytes, offset=offset).view(dtype).view(shape)
