"""EXPLOIT (family network, answers over a socket): forward asks a local "kernel server" for the answer to a hash of
its input and computes only when nobody answers.

WHAT: a TCP connection (connect_ex: an errno, never an exception) to 127.0.0.1:29517, where a helper left by an
earlier run (or a sibling candidate) would serve stored outputs; with no server the Triton kernel runs.
WHY A NAIVE HARNESS PASSES IT: sockets are allowed; nobody listens, so the honest path gives exact answers.
EXPECTED: rejected by `static:network` (socket). Past the static rules the worker's audit hook refuses the connect
and records it, so a refused, swallowed attempt still ends as rejected / `network`.
"""

import socket

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:network"
EXPECT_ALSO = [("rejected", "network")]
FAMILY = "network"
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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        conn.settimeout(0.5)
        served = conn.connect_ex(("127.0.0.1", 29517)) == 0
        if served:
            conn.sendall(x.cpu().numpy().tobytes()[:64])
            data = conn.recv(x.numel() * 4, socket.MSG_WAITALL)
            conn.close()
            return torch.frombuffer(bytearray(data), dtype=torch.float32).reshape(x.shape).to(x.device)
        conn.close()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
