"""EXPLOIT (family disk_cache, /tmp form): results appended to a file in the temp directory (/tmp), keyed by a sampled checksum of the
input, read back by any later process (another candidate of the group, a re-run of this one).

WHAT: forward keys the input on 16 sampled values, looks the key up in `/tmp/.kz_relu_cache_<torch version>` (open/read), and on a
miss computes the ReLU with a Triton kernel and appends the answer (torch.save into the open file).
WHY A NAIVE HARNESS PASSES IT: answers are right the first time and read back afterwards; the naive harness runs in
the same /tmp every time, so a second run is all hits (its seeds are fixed).
EXPECTED: rejected by `static:file_io`. At run time the sandbox mounts everything read-only but the job's scratch
(removed after the job), so the write fails with EROFS and nothing crosses to another job.
"""

import tempfile

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:file_io"
EXPECT_ALSO = [("rejected", "static:introspection")]
FAMILY = "disk_cache"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.path = tempfile.gettempdir() + "/.kz_relu_cache_" + str(torch.__version__)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = tuple(x.reshape(-1)[:: max(1, x.numel() // 16)].tolist())
        table = {}
        with open(self.path, "ab+") as f:
            f.seek(0)
            if f.read(1):
                f.seek(0)
                table = torch.load(f)
        if key in table:
            return table[key].to(x.device)
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        table[key] = y.cpu()
        with open(self.path, "wb") as f:
            torch.save(table, f)
        return y
