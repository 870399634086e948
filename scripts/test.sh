#!/usr/bin/env bash
# The test command of the README and of CI: install, then run every test that needs no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh triton,train,dev,ray   # ray: the Ray backend is tested on a local instance
# pytest exits 5 when it collected nothing: set -e turns that into a failure, as it should be.
# Two test processes (pytest-xdist), each taking whole files (--dist loadfile): a file's module fixtures (judge
# pools, header builds, the study run) are made once, as in a serial run, and most of a test's time is spent waiting
# on subprocesses (sandbox workers, compilers, the CLI), which leaves the second core idle in a serial run.
# `-n 0` after it runs serially; a single file is quicker as `python -m pytest tests/unit/x.py`.
python -m pytest -q -n 2 --dist loadfile "$@"
