"""Outputs that never leave the GPU: a worker hands the judge device memory, not bytes.

KernelBench's level-1 tasks return 6-8 GB outputs. Through host memory each one cost a copy to the host, a fill of
shared pages and a copy back for the comparison, single-threaded: about 4.5 s per output on the H200, ten copies
per judged candidate. Here a worker copies a big output on the device into memory it allocated with CUDA's virtual
memory API (`cuMemCreate`), exports that allocation as a POSIX file descriptor and sends the descriptor over a unix
socket (SCM_RIGHTS); the judge imports it, maps it and copies it on the device into memory of its own. A 6 GB output
then costs two device-to-device copies (milliseconds) instead of seconds of host work.

Why these handles: the legacy `cudaIpcGetMemHandle` handles are looked up by process id and fail across the
sandbox's PID namespace; a VMM allocation exported as a file descriptor needs no process lookup (the descriptor is
the capability), and torch's caching allocator memory cannot be exported this way, hence the worker's own copy.

Trust: the judge copies each imported allocation into memory no worker can reach as soon as it loads a sealed pack
(`Sandbox.load_output`), before it sends the worker anything more: from the worker's report until that copy the
worker waits on its stdin, runs no candidate code, and every kernel it launched has finished (the harness
synchronized before it exported). A forged descriptor (not a CUDA allocation, or smaller than the entry claims)
fails to import or map and is a tampered channel.

Only the driver API's stable C entry points are used, through ctypes (no extra dependency); copies are the driver's
`cuMemcpyDtoD` between mapped addresses, so no foreign pointer is ever wrapped as a torch tensor.
"""

from __future__ import annotations

import ctypes
import os
import socket
import threading

from kernelzero.judge.sandbox.pack import PackError

# cuda.h (CUDA 12 and 13): enum values and structures of the virtual memory management API
_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
_POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_LOCATION_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_READWRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
_GRANULARITY_MINIMUM = 0  # CU_MEM_ALLOC_GRANULARITY_MINIMUM
MAX_EXPORTS = 200  # descriptors one pack may carry (SCM_RIGHTS passes at most 253 per message)


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]  # fmt: skip


class _Prop(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]  # fmt: skip


class _AccessDesc(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class DeviceMemoryError(Exception):
    """A driver call failed (on the judge's side: the descriptor is not what the pack claims)."""


class Driver:
    """The few driver calls this module needs, bound once per process (the worker binds them before candidate code
    runs, so later monkeypatching of ctypes does not reach them)."""

    _lock = threading.Lock()
    _instance: Driver | None = None

    def __init__(self) -> None:
        lib = ctypes.CDLL("libcuda.so.1")
        u64, size_t, p = ctypes.c_ulonglong, ctypes.c_size_t, ctypes.POINTER
        sigs = {
            "cuInit": [ctypes.c_uint],
            "cuDeviceGet": [p(ctypes.c_int), ctypes.c_int],
            "cuDevicePrimaryCtxRetain": [p(ctypes.c_void_p), ctypes.c_int],
            "cuCtxPushCurrent": [ctypes.c_void_p],  # cuCtxPushCurrent_v2 in cuda.h
            "cuCtxPopCurrent": [p(ctypes.c_void_p)],
            "cuMemGetAllocationGranularity": [p(size_t), p(_Prop), ctypes.c_int],
            "cuMemCreate": [p(u64), size_t, p(_Prop), u64],
            "cuMemAddressReserve": [p(u64), size_t, size_t, u64, u64],
            "cuMemMap": [u64, size_t, size_t, u64, u64],
            "cuMemSetAccess": [u64, size_t, p(_AccessDesc), size_t],
            "cuMemUnmap": [u64, size_t],
            "cuMemAddressFree": [u64, size_t],
            "cuMemRelease": [u64],
            "cuMemExportToShareableHandle": [ctypes.c_void_p, u64, ctypes.c_int, u64],
            "cuMemImportFromShareableHandle": [p(u64), ctypes.c_void_p, ctypes.c_int],
            "cuMemcpyDtoD": [u64, u64, size_t],
            "cuCtxSynchronize": [],
        }
        versioned = {"cuCtxPushCurrent": "cuCtxPushCurrent_v2", "cuCtxPopCurrent": "cuCtxPopCurrent_v2",
                     "cuMemcpyDtoD": "cuMemcpyDtoD_v2"}  # fmt: skip
        for name, args in sigs.items():
            fn = getattr(lib, versioned.get(name, name))
            fn.argtypes, fn.restype = args, ctypes.c_int
            setattr(self, name, fn)
        self._call(self.cuInit, 0)
        self._ctx: dict[int, ctypes.c_void_p] = {}

    @classmethod
    def get(cls) -> Driver:
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    @staticmethod
    def _call(fn, *args) -> None:
        rc = fn(*args)
        if rc != 0:
            why = " (out of memory)" if rc == 2 else ""  # CUDA_ERROR_OUT_OF_MEMORY: the judge may retry alone
            raise DeviceMemoryError(f"{fn.__name__} failed with CUDA error {rc}{why}")

    def _prop(self, ordinal: int) -> _Prop:
        prop = _Prop()
        prop.type, prop.requestedHandleTypes = _PINNED, _POSIX_FD
        prop.location = _Location(_LOCATION_DEVICE, ordinal)
        return prop

    def _push(self, ordinal: int) -> None:
        """Make the device's primary context (torch's) current on this thread for the calls that follow."""
        ctx = self._ctx.get(ordinal)
        if ctx is None:
            dev, ctx = ctypes.c_int(), ctypes.c_void_p()
            self._call(self.cuDeviceGet, ctypes.byref(dev), ordinal)
            self._call(self.cuDevicePrimaryCtxRetain, ctypes.byref(ctx), dev)
            self._ctx[ordinal] = ctx
        self._call(self.cuCtxPushCurrent, ctx)

    def _pop(self) -> None:
        self.cuCtxPopCurrent(ctypes.byref(ctypes.c_void_p()))

    def padded(self, nbytes: int, ordinal: int) -> int:
        """`nbytes` rounded up to the device's allocation granularity (at least one granule)."""
        g = ctypes.c_size_t()
        self._call(self.cuMemGetAllocationGranularity, ctypes.byref(g), ctypes.byref(self._prop(ordinal)),
                   _GRANULARITY_MINIMUM)  # fmt: skip
        return max(g.value, -(-nbytes // g.value) * g.value)

    def _map(self, handle: int, size: int, ordinal: int) -> int:
        """Reserve `size` bytes of address space, map `handle` there and allow this device to read and write it."""
        ptr = ctypes.c_ulonglong()
        self._call(self.cuMemAddressReserve, ctypes.byref(ptr), size, 0, 0, 0)
        try:
            self._call(self.cuMemMap, ptr.value, size, 0, handle, 0)
            desc = _AccessDesc(_Location(_LOCATION_DEVICE, ordinal), _READWRITE)
            try:
                self._call(self.cuMemSetAccess, ptr.value, size, ctypes.byref(desc), 1)
            except DeviceMemoryError:
                self.cuMemUnmap(ptr.value, size)
                raise
        except DeviceMemoryError:
            self.cuMemAddressFree(ptr.value, size)
            raise
        return ptr.value

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        """Device-to-device copy on the legacy default stream (ordered after torch's work on it), then wait for all
        of the context's work: the bytes are in place when this returns."""
        if nbytes:
            self._call(self.cuMemcpyDtoD, dst, src, nbytes)
        self._call(self.cuCtxSynchronize)

    def _unmap(self, ptr: int, size: int, handle: int) -> None:
        self.cuMemUnmap(ptr, size)
        self.cuMemAddressFree(ptr, size)
        self.cuMemRelease(handle)


class Exports:
    """The worker's side: device copies of outputs, each in an exportable allocation, until the worker exits."""

    def __init__(self, torch):
        self.torch, self.driver = torch, Driver.get()
        self._live: list[tuple[int, int, int]] = []  # (ptr, size, handle) per export

    def export(self, t) -> int:
        """Copy CUDA tensor `t` (its bytes, in order) into a new exportable allocation on its device; returns the
        allocation's file descriptor (the caller sends it, then closes it). The copy is finished before return."""
        torch, drv = self.torch, self.driver
        ordinal = t.device.index if t.device.index is not None else torch.cuda.current_device()
        nbytes = t.numel() * t.element_size()
        drv._push(ordinal)
        try:
            size = drv.padded(nbytes, ordinal)
            handle = ctypes.c_ulonglong()
            drv._call(drv.cuMemCreate, ctypes.byref(handle), size, ctypes.byref(drv._prop(ordinal)), 0)
            try:
                ptr = drv._map(handle.value, size, ordinal)
            except DeviceMemoryError:
                drv.cuMemRelease(handle.value)
                raise
            self._live.append((ptr, size, handle.value))
            src = t.detach().contiguous()
            torch.cuda.synchronize(ordinal)  # the output's producers, on whatever stream torch ran them
            drv.copy(ptr, src.data_ptr(), nbytes)
            del src
            fd = ctypes.c_int(-1)
            drv._call(drv.cuMemExportToShareableHandle, ctypes.byref(fd), handle.value, _POSIX_FD, 0)
            return fd.value
        finally:
            drv._pop()


    def release(self) -> None:
        """Unmap and free every export so far (the judge's imports, if any are still open, keep their memory)."""
        drv = self.driver
        while self._live:
            drv._unmap(*self._live.pop())


def import_copy(torch, fd: int, nbytes: int, ordinal: int):
    """The judge's side: a uint8 tensor of `nbytes` on device `ordinal`, copied from the allocation exported as `fd`
    (closed here). The copy belongs to the judge; the exported memory is unmapped and released before return.
    Raises DeviceMemoryError when `fd` is not an allocation of at least `nbytes`."""
    drv = Driver.get()
    drv._push(ordinal)
    try:
        handle = ctypes.c_ulonglong()
        drv._call(drv.cuMemImportFromShareableHandle, ctypes.byref(handle), ctypes.c_void_p(fd), _POSIX_FD)
        size = drv.padded(nbytes, ordinal)
        try:
            ptr = drv._map(handle.value, size, ordinal)  # fails for an allocation smaller than the entry claims
        except DeviceMemoryError:
            drv.cuMemRelease(handle.value)
            raise
        try:
            out = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{ordinal}")
            torch.cuda.synchronize(ordinal)  # `out`'s memory is free on every stream of torch's
            drv.copy(out.data_ptr(), ptr, nbytes)
        finally:
            drv._unmap(ptr, size, handle.value)
        return out
    finally:
        drv._pop()
        os.close(fd)


def receive(sock: socket.socket, name: str, sizes: list[int], ordinal: int, timeout_s: float = 30.0) -> list:
    """The judge's side of one pack: receive the descriptors the worker sent with its `name` pack on `sock` and copy
    each allocation (`import_copy`, claimed sizes `sizes`) onto device `ordinal`. Raises PackError when they are not
    exactly what the sealed pack names; descriptors not imported are closed."""
    import torch

    sock.settimeout(timeout_s)
    try:
        tag, fds, _, _ = socket.recv_fds(sock, 64, len(sizes) + 1)
    except OSError as exc:
        raise PackError(f"no device outputs arrived: {exc}") from None
    try:
        if tag != name.encode() or len(fds) != len(sizes):
            raise PackError(f"{len(fds)} device outputs arrived for {tag[:16]!r}, {len(sizes)} expected")
        copies = []
        while fds:
            copies.append(import_copy(torch, fds.pop(0), sizes[len(copies)], ordinal))  # closes it
        return copies
    except DeviceMemoryError as exc:
        if "out of memory" in str(exc):  # the judge's GPU is full, not the pack forged: the judge may retry alone
            raise
        raise PackError(f"a device output did not import: {exc}") from None
    finally:
        for fd in fds:
            os.close(fd)
