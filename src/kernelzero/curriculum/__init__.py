"""The curriculum: validating proposed tasks, the task pool with its hard pool, and the Coder's frontier.

Read in this order: `validate` (is a proposed module a usable task; `similarity` for duplicates and KernelBench
near-copies), `pool` (the tasks, their origin and the Coder's record on each), `frontier` (l(m), per-API success
rates and the Proposer's batch rewards, pure functions), `propose` (the `kernelzero propose` pipeline), `report`
(the frontier heat-map). Importing this package does not import torch.
"""
