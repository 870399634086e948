"""TRL trainers for both roles and the phase runners the co-evolution loop calls.

`run_coder_phase` (CA-GRPO, `coder`), `run_proposer_phase` (frontier reward, `proposer`), `run_sft` (cold start,
`sft`). Each takes a dataclass config from `config` whose defaults run the tiny model on CPU, saves checkpoints under
its `output_dir` and resumes from them. Real-run presets: `presets`; launch commands: docs/training.md.

Import from the modules: this package imports nothing, so that `config` and `presets` stay free of torch and TRL.
"""
