#!/usr/bin/env bash
# Create .venv/ and install centidb into it (editable, with its compiled key
# codec, which must build: CENTIDB_REQUIRE_SPEEDUPS=1) plus the test tools.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
CENTIDB_REQUIRE_SPEEDUPS=1 .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
.venv/bin/python -c "import centidb.keylib as k; print('centidb installed in .venv; key codec:', k.IMPL)"
