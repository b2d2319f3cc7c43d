"""``python -m centidb``: the command line of :mod:`centidb.cli`."""

from __future__ import annotations

from centidb.cli import run

if __name__ == '__main__':
    run()
