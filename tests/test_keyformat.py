"""centidb.keyformat: the key encoding's constants keep the layout rules they state.

Every tag is a byte below 0x80 and above ``KEY_SEP``; the kinds' tags rise
in the order of kinds, as the table in ``docs/format.rst`` gives them; the
tags of small integer parts do not reach the tags of big ones; the
suffixes after a number's integer part are 0x80 or more. The codec's
behaviour on these bytes is tested in ``test_keylib.py``, and the compiled
twin's copy of the constants in ``test_keylib_parity.py``.
"""

import os
import re

from centidb import keyformat as kf

FORMAT_RST = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          'docs', 'format.rst')

#: The tags of each kind, lowest first, in the order of kinds.
KINDS = [
    ('``None``', [kf.TAG_NONE]),
    ('numbers', [kf.TAG_NEG_INF, kf.TAG_NEG_BIG, kf.TAG_NEG_ONE, kf.TAG_ZERO,
                 kf.TAG_POS_BIG, kf.TAG_POS_INF, kf.TAG_NAN]),
    ('``bytes``', [kf.TAG_BYTES]),
    ('``str``', [kf.TAG_STR]),
    ('``date``', [kf.TAG_DATE]),
    ('``datetime``', [kf.TAG_DATETIME]),
    ('``uuid.UUID``', [kf.TAG_UUID]),
    ('``Desc(x)``', [kf.TAG_DESC]),
]


def test_every_tag_is_below_0x80_and_above_the_key_separator():
    tags = {name: value for name, value in kf.FORMAT_CONSTANTS.items() if name.startswith('TAG_')}
    assert len(tags) == sum(len(values) for _, values in KINDS)
    assert all(kf.KEY_SEP < value < 0x80 for value in tags.values()), tags


def test_tags_rise_with_the_kinds_and_within_numbers():
    flat = [tag for _, tags in KINDS for tag in tags]
    assert flat == sorted(flat) and len(set(flat)) == len(flat)


def test_small_integer_tags_stay_between_the_big_ones():
    lowest_small = kf.TAG_NEG_ONE - kf.INT_SMALL_MAX_BYTES
    highest_small = kf.TAG_ZERO + kf.INT_SMALL_MAX_BYTES
    assert kf.TAG_NEG_BIG < lowest_small and highest_small < kf.TAG_POS_BIG
    assert kf.TAG_ZERO == kf.TAG_NEG_ONE + 1


def test_number_suffixes_sort_after_every_tag():
    suffixes = [kf.SUFFIX_BOOL, kf.SUFFIX_NEG_ZERO, kf.SUFFIX_FLOAT]
    assert min(suffixes) >= 0x80 and len(set(suffixes)) == 3
    assert kf.DESC_END == 0xFF


def test_the_format_page_gives_the_same_tags():
    with open(FORMAT_RST, encoding='utf-8') as f:
        text = f.read()
    rows = re.findall(r'^\d+ +(\S+) +(0x[0-9A-F]{2})(?: \.\. (0x[0-9A-F]{2}))?', text, re.M)
    documented = [(kind, int(lo, 16), int(hi or lo, 16)) for kind, lo, hi in rows]
    assert documented == [(kind, tags[0], tags[-1]) for kind, tags in KINDS]
