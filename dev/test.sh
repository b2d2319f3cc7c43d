#!/usr/bin/env bash
# Run the whole test suite twice: with the compiled codec required, then with
# pure Python forced. Extra arguments go to pytest (e.g. -x, -k name).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== pass 1/2: compiled key codec (CENTIDB_REQUIRE_SPEEDUPS=1)"
CENTIDB_REQUIRE_SPEEDUPS=1 .venv/bin/python -m pytest -q "$@"
echo "== pass 2/2: pure-Python key codec (CENTIDB_NO_SPEEDUPS=1)"
CENTIDB_NO_SPEEDUPS=1 .venv/bin/python -m pytest -q "$@"
