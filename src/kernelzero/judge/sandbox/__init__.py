"""Where untrusted code runs: the sandboxed worker process, its job kinds, the typed messages it exchanges with the
judge, and the GPU timing lock the workers share."""
