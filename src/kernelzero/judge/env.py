"""The environment fingerprint stamped on every verdict, so results from different machines are never mixed."""

from __future__ import annotations

import functools
import platform
import subprocess


@functools.cache
def fingerprint(device: str, allow_tf32: bool, isolation: str) -> dict:
    import torch

    info = {
        "device": device,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "precision": "tf32" if allow_tf32 else "fp32-strict",
        "isolation": isolation,
    }
    try:
        import triton

        info["triton"] = triton.__version__
    except ImportError:
        info["triton"] = None
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
        info["capability"] = ".".join(map(str, torch.cuda.get_device_capability(0)))
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10)  # fmt: skip
            info["driver"] = out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired, IndexError):
            info["driver"] = None
    else:
        info["gpu"] = None
        info["cpu"] = platform.processor() or platform.machine()
    return info
