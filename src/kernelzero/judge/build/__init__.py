"""The CUDA build accelerator: a farm of CPU build workers, split host/device builds, precompiled headers,
and the bridge that binds a candidate's functions without pybind11 in its translation unit."""
