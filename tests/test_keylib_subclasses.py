"""Subclasses of the basic element types encode as their base-type value.

Regression tests: both implementations once encoded a subclass through
``str(x)`` / ``bytes(x)``, which run the subclass's own hooks (a
``(str, Enum)`` member was stored as ``'Color.RED'``), and the twin crashed
on a hook returning ``self`` or read past a short ``UUID.bytes``.
"""

import datetime
import enum
import os
import subprocess
import sys
import textwrap
import uuid

import pytest

from centidb import errors, keylib

IMPLS = keylib.available_implementations()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Color(str, enum.Enum):
    """The common ``(str, Enum)`` idiom: str(Color.RED) == 'Color.RED' on 3.11+."""
    RED = 'red'


class Reprish(str):
    def __str__(self):
        return 'other'


class Bytesish(bytes):
    def __bytes__(self):
        return b'other'


@pytest.mark.parametrize('name', sorted(IMPLS))
def test_str_enum_member_encodes_as_its_value(name):
    impl = IMPLS[name]
    # Bug: encodes (and decodes) as 'Color.RED'.
    assert impl.packs(Color.RED) == impl.packs('red')
    assert impl.unpacks(impl.packs(Color.RED)) == ('red',)


@pytest.mark.parametrize('name', sorted(IMPLS))
def test_str_and_bytes_subclass_hooks_do_not_change_the_value(name):
    impl = IMPLS[name]
    assert impl.packs(Reprish('x')) == impl.packs('x')
    assert impl.packs(Bytesish(b'x')) == impl.packs(b'x')


def test_prefix_range_of_str_enum_matches_its_own_value():
    lo, hi = keylib.prefix_range((Color.RED,))
    # prefix_range also mixes value.encode() (b'red', for the padding width)
    # with packs() (which encodes 'Color.RED').
    assert lo <= keylib.packs(('red', 1)) < hi


_SELF_RETURNING = textwrap.dedent('''
    import sys
    from centidb import keylib
    impl = keylib.available_implementations()[sys.argv[1]]
    class S(%s):
        def %s(self):
            return self
    try:
        impl.packs(S(%r))
    except TypeError:
        pass
    print('survived')
''')


@pytest.mark.parametrize('name', sorted(IMPLS))
@pytest.mark.parametrize('base,hook,value', [('str', '__str__', 'x'),
                                             ('bytes', '__bytes__', b'x')])
def test_subclass_hook_returning_self_raises_type_error_not_crash(name, base, hook, value):
    # Python impl: unbounded recursion -> RecursionError (not TypeError).
    # Twin: unbounded C recursion in put_element -> segfault (rc -11).
    code = _SELF_RETURNING % (base, hook, value)
    proc = subprocess.run([sys.executable, '-c', code, name], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0 and 'survived' in proc.stdout, (proc.returncode, proc.stderr[-300:])


@pytest.mark.skipif('speedups' not in IMPLS, reason='twin not built')
def test_uuid_subclass_with_bad_bytes_gives_same_outcome_in_both_impls():
    # Twin: putn(raw, 16) reads 16 bytes from a 5-byte object (heap over-read
    # that leaks pointer bytes into the key); Python writes a 6-byte key that
    # does not decode. Neither raises.
    class U(uuid.UUID):
        @property
        def bytes(self):
            return b'short'

    def outcome(impl):
        try:
            return impl.packs(U(int=1))
        except Exception as exc:
            return type(exc)

    assert outcome(IMPLS['python']) == outcome(IMPLS['speedups'])


@pytest.mark.parametrize('name', sorted(IMPLS))
def test_datetime_subclass_with_offset_beyond_a_day_is_rejected(name):
    class Odd(datetime.datetime):
        def utcoffset(self):
            return datetime.timedelta(days=2)

    with pytest.raises(errors.KeyEncodingError):
        IMPLS[name].packs(Odd(2020, 1, 1))


class Day(datetime.date):
    """A date subclass whose own hooks would change the value if they were used."""

    def toordinal(self):
        return 1

    @property
    def year(self):
        return 1


@pytest.mark.parametrize('name', sorted(IMPLS))
def test_date_subclass_encodes_as_its_date_value(name):
    impl = IMPLS[name]
    day = Day(2024, 2, 29)
    assert impl.packs(day) == impl.packs(datetime.date(2024, 2, 29))
    assert impl.packs(keylib.Desc(day)) == impl.packs(keylib.Desc(datetime.date(2024, 2, 29)))
    (back,) = impl.unpacks(impl.packs(day))
    assert type(back) is datetime.date and back == datetime.date(2024, 2, 29)
