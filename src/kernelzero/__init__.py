"""KernelZero: self-play training of LLMs that write fast, correct CUDA and Triton kernels.

The pipeline, in reading order: `tasks` (the task format) -> `judge` (sandboxed build, check, timing) ->
`rewards` (CA-GRPO and the Proposer reward) -> `trainers` (TRL subclasses) -> `coevolve` (the loop) -> `report`.
Importing this package is cheap: heavy dependencies (torch, transformers, trl) load inside the modules that need them.
"""

__version__ = "0.1.0"
