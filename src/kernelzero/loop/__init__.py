"""The co-evolution loop: its config, the round driver, run records and state, checkpoints, report and export."""
