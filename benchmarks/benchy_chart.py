"""Draw benchy.csv as a bar chart: records/s by engine and mode, baselines beside.

Usage: python benchmarks/benchy_chart.py benchy.csv docs/benchy.png

One panel per mode, titled with its record count; in each, one bar per
backend (sqlite3 and the raw engine loops in grey, centidb's engines in
colour), labelled with thousands of records per second, for centidb the
ratio to its raw baseline (and for ListEngine, to LmdbEngine), and the
store's size on disk where the table has it (MB of 10^6 bytes). The
baselines' bars in the put_many and batched panels repeat their insert +2
idx and unbatched measurements, as in the table. Needs matplotlib
(``pip install matplotlib``).
"""

from __future__ import annotations

import argparse
import csv
import math

import matplotlib

matplotlib.use('Agg')   # files only, no display
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

#: Bar colour per backend; baselines are grey.
COLOURS = {
    'sqlite3': '#9e9e9e', 'raw lmdb': '#bdbdbd', 'raw plyvel': '#d6d6d6',
    'LmdbEngine': '#1f77b4', 'PlyvelEngine': '#2ca02c', 'ListEngine': '#ff7f0e',
}


def read_table(path):
    """Return (modes in order, backends in order, {(backend, mode): row})."""
    with open(path, newline='') as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f'{path}: no rows')
    missing = {'engine', 'mode', 'records_per_s', 'ratio_vs_raw'} - set(rows[0])
    if missing:
        raise ValueError(f'{path}: not a benchy.csv table, missing columns {sorted(missing)}')
    modes, backends = [], []
    for row in rows:
        if row['mode'] not in modes:
            modes.append(row['mode'])
        if row['engine'] not in backends:
            backends.append(row['engine'])
    return modes, backends, {(row['engine'], row['mode']): row for row in rows}


def draw(table, out, title=None):
    """Write the chart of `table` (from :func:`read_table`) to the PNG `out`."""
    modes, backends, rows = table
    columns = 4 if len(modes) > 4 else len(modes)
    lines = math.ceil(len(modes) / columns)
    fig, axes = plt.subplots(lines, columns, figsize=(3.8 * columns, 0.46 * len(backends) * lines + 1.6),
                             squeeze=False)
    for ax in axes.flat[len(modes):]:
        ax.axis('off')
    for ax, mode in zip(axes.flat, modes):
        names = [b for b in backends if (b, mode) in rows][::-1]   # first on top
        rates = [float(rows[b, mode]['records_per_s']) / 1000 for b in names]
        bars = ax.barh(names, rates, color=[COLOURS.get(b, '#8c564b') for b in names])
        counts = sorted({int(rows[b, mode]['records']) for b in names})
        ax.set_title(f'{mode}\n{"/".join(f"{c:,}" for c in counts)} records', fontsize=9)
        ax.tick_params(labelsize=8)
        ax.set_xlim(0, max(rates) * 2.2)
        for bar, name, rate in zip(bars, names, rates):
            row = rows[name, mode]
            ratios = [f'{row[column]}x {what}' for column, what in
                      (('ratio_vs_raw', 'raw'), ('ratio_vs_lmdbengine', 'Lmdb'))
                      if row.get(column)]
            label = (f'{rate:.1f}k' if rate < 10 else f'{rate:.0f}k') + (
                f'  ({", ".join(ratios)})' if ratios else '')
            if row.get('bytes_on_disk'):
                label += f'  {int(row["bytes_on_disk"]) / 1e6:.3g} MB'
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, ' ' + label,
                    va='center', fontsize=7)
    for ax in axes[-1]:
        if ax.has_data():
            ax.set_xlabel('thousand records/s', fontsize=8)
    fig.suptitle(title or 'centidb benchmark (examples/benchy.py): records per second, '
                 'higher is better', fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('csv', help='benchy.csv written by examples/benchy.py')
    parser.add_argument('png', help='output PNG path')
    parser.add_argument('--title', help='chart title')
    args = parser.parse_args()
    draw(read_table(args.csv), args.png, args.title)


if __name__ == '__main__':
    main()
