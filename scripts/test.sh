#!/usr/bin/env bash
# The test command of the README and of CI: install, then run every test that needs no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh triton,train,dev,ray   # ray: the Ray backend is tested on a local instance
# pytest exits 5 when it collected nothing: set -e turns that into a failure, as it should be.
python -m pytest -q "$@"
