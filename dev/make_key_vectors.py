"""Regenerate tests/key_vectors.csv, the golden key-encoding test vectors.

Run only when the key format deliberately changes (which breaks existing
databases): ``python dev/make_key_vectors.py``. The CSV is used by the
tests (both codec implementations must reproduce every row) and included
by docs/format.rst.
"""

import csv
import datetime
import math
import os
import uuid

os.environ['CENTIDB_NO_SPEEDUPS'] = '1'  # the pure module is the reference

from centidb import keylib  # noqa: E402
from centidb.keylib import Desc  # noqa: E402

UTC = datetime.timezone.utc
PLUS_5H30 = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
MINUS_8H = datetime.timezone(datetime.timedelta(hours=-8))

VECTORS = [
    ('empty key', ()),
    ('None', (None,)),
    ('False', (False,)),
    ('True', (True,)),
    ('int 0', (0,)),
    ('int 1', (1,)),
    ('int 240', (240,)),
    ('int 255', (255,)),
    ('int 256', (256,)),
    ('int 2**63', (2 ** 63,)),
    ('int 2**64 (long form)', (2 ** 64,)),
    ('int -1', (-1,)),
    ('int -2', (-2,)),
    ('int -256', (-256,)),
    ('int -257', (-257,)),
    ('int -2**64 - 1 (long form)', (-2 ** 64 - 1,)),
    ('float 0.0', (0.0,)),
    ('float -0.0', (-0.0,)),
    ('float 1.0', (1.0,)),
    ('float 1.5', (1.5,)),
    ('float 0.1', (0.1,)),
    ('float -0.5', (-0.5,)),
    ('float -1.5', (-1.5,)),
    ('float 2**70', (2.0 ** 70,)),
    ('float +inf', (math.inf,)),
    ('float -inf', (-math.inf,)),
    ('float NaN', (math.nan,)),
    ('bytes empty', (b'',)),
    ('bytes NUL', (b'\x00',)),
    ('bytes 0xff', (b'\xff',)),
    ('bytes 7 bytes', (b'abcdefg',)),
    ('str empty', ('',)),
    ('str a', ('a',)),
    ('str ab', ('ab',)),
    ('str with NUL', ('a\x00',)),
    ('str non-ASCII', ('h\xe9',)),
    ('str non-BMP', ('\U0001f600',)),
    ('str lone surrogate', ('\ud800',)),
    ('UUID', (uuid.UUID('12345678-1234-5678-1234-567812345678'),)),
    ('date min', (datetime.date.min,)),
    ('date epoch', (datetime.date(1970, 1, 1),)),
    ('date max', (datetime.date.max,)),
    ('datetime naive epoch', (datetime.datetime(1970, 1, 1),)),
    ('datetime naive before 1970', (datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),)),
    ('datetime UTC', (datetime.datetime(2026, 11, 21, 12, 0, tzinfo=UTC),)),
    ('datetime +05:30', (datetime.datetime(2026, 11, 21, 17, 30, tzinfo=PLUS_5H30),)),
    ('datetime -08:00', (datetime.datetime(2026, 11, 21, 4, 0, tzinfo=MINUS_8H),)),
    ('Desc int 5', (Desc(5),)),
    ('Desc str ab', (Desc('ab'),)),
    ('Desc None', (Desc(None),)),
    ('Desc date', (Desc(datetime.date(2026, 11, 21)),)),
    ('tuple (date, str)', (datetime.date(2026, 11, 21), 'a')),
    ('tuple (str, int)', ('ab', 1)),
    ('tuple (int, str, None)', (1, 'a', None)),
    ('list of two keys', [('a',), (1,)]),
]


def main():
    path = os.path.join(os.path.dirname(__file__), '..', 'tests', 'key_vectors.csv')
    with open(path, 'w', newline='') as fp:
        writer = csv.writer(fp, lineterminator='\n')
        writer.writerow(['case', 'key', 'bytes'])
        for case, key in VECTORS:
            writer.writerow([case, repr(key), keylib.packs(key).hex(' ')])
    print(f'wrote {len(VECTORS)} vectors to {os.path.normpath(path)}')


if __name__ == '__main__':
    main()
