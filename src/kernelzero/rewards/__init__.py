"""Rewards as pure functions: CA-GRPO for the Coder (`cagrpo`, its hyper-parameters in `config`) and the frontier
reward for the Proposer (`proposer`).

Trainers call these; nothing here knows about TRL, processes or the judge. Import from the modules: this package
imports nothing, so that `config` and `proposer` stay free of torch (only `cagrpo` needs it).
"""
