"""centidb.models, the package: its re-exports, and dates end to end.

The package re-exports what ``centidb`` does of it (its old module paths,
``centidb.model`` and the others, are tested in ``test_aliases.py``).

Models keyed and indexed on ``datetime.date`` fields, on every engine: a
``date`` field is a key element of its own kind (see docs/format.rst):
saving, loading, key ranges and index ranges by date work end to end, and
a ``datetime`` in a ``date`` field is a different key.
"""

from __future__ import annotations

import datetime
from typing import Optional

import centidb
from centidb import Desc, models
from centidb.models import fields, model
from centidb.models import index as modelindex

D = datetime.date


class Reading(centidb.Model, collection='readings', key=('day', 'station')):
    day: datetime.date
    station: str
    mm: float = 0.0

    by_station_day = centidb.index_on('station', 'day')


class Holiday(centidb.Model, collection='holidays', key='day'):
    day: datetime.date
    name: str
    observed: Optional[datetime.date] = None

    by_observed = centidb.index_on('observed')
    by_newest = centidb.index_on(lambda h: Desc(h.day))


def test_a_date_key_saves_and_loads(store):
    Holiday.bind(store)
    assert Holiday(day=D(2026, 12, 25), name='Christmas').save() == (D(2026, 12, 25),)
    Holiday(day=D(2026, 1, 1), name='New Year', observed=D(2026, 1, 2)).save()
    Holiday(day=D(1, 1, 1), name='first').save()
    Holiday(day=D(9999, 12, 31), name='last').save()
    got = Holiday.get(D(2026, 12, 25))
    assert got == Holiday(day=D(2026, 12, 25), name='Christmas')
    assert type(got.day) is datetime.date
    assert Holiday.get(D(2026, 12, 26)) is None
    assert [h.name for h in Holiday.values()] == ['first', 'New Year', 'Christmas', 'last']
    assert list(Holiday.keys(D(2026, 1, 1), D(2027, 1, 1))) == [(D(2026, 1, 1),),
                                                                (D(2026, 12, 25),)]
    # A datetime at midnight is another key: a different kind of element.
    assert Holiday.get(datetime.datetime(2026, 12, 25)) is None
    assert Holiday.get(D(2026, 12, 25)).delete()
    assert Holiday.count() == 3


def test_a_date_index_ranges_by_date(store):
    Holiday.bind(store)
    Holiday.put_many([
        Holiday(day=D(2026, 1, 1), name='a', observed=D(2026, 1, 2)),
        Holiday(day=D(2026, 5, 1), name='b', observed=D(2026, 5, 1)),
        Holiday(day=D(2026, 7, 4), name='c', observed=D(2026, 7, 3)),
        Holiday(day=D(2026, 12, 25), name='d'),          # None: no entry
    ])
    assert [h.name for h in Holiday.by_observed.values(D(2026, 1, 2), D(2026, 7, 3))] == [
        'a', 'b']
    assert [h.name for h in Holiday.by_observed.values(D(2026, 5, 1), D(2026, 7, 3),
                                                       include=True)] == ['b', 'c']
    assert Holiday.by_observed.get(D(2026, 7, 3)).name == 'c'
    assert Holiday.by_observed.count() == 3
    assert [h.name for h in Holiday.by_newest.values()] == ['d', 'c', 'b', 'a']
    assert [h.name for h in Holiday.by_newest.values(Desc(D(2026, 7, 4)),
                                                     Desc(D(2026, 1, 1)))] == ['c', 'b']
    found = [(tup, h.name) for tup, h in Holiday.by_newest.items(max=1)]
    assert found == [((Desc(D(2026, 12, 25)),), 'd')]


def test_a_key_of_a_date_and_a_str(store):
    Reading.bind(store)
    for day in (1, 2, 3):
        for station in ('north', 'south'):
            Reading(day=D(2026, 3, day), station=station, mm=day / 2).save()
    assert Reading.get((D(2026, 3, 2), 'south')).mm == 1.0
    assert [r.station for r in Reading.values(prefix=D(2026, 3, 2))] == ['north', 'south']
    assert [r.day.day for r in Reading.by_station_day.values(prefix='south')] == [1, 2, 3]
    assert [r.day.day for r in Reading.by_station_day.values(
        ('north', D(2026, 3, 2)), ('north', D(2026, 3, 9)))] == [2, 3]
    assert Reading.by_station_day.count(prefix=('north', D(2026, 3, 3))) == 1


# --- the package ------------------------------------------------------------------------

def test_the_package_reexports_the_model_names():
    assert set(models.__all__) == {'Model', 'Field', 'field', 'index_on', 'DeclaredIndex',
                                   'ModelIndex'}
    homes = {'Model': model, 'Field': fields, 'field': fields, 'index_on': modelindex,
             'DeclaredIndex': modelindex, 'ModelIndex': modelindex}
    assert all(getattr(models, name) is getattr(homes[name], name) for name in models.__all__)
    assert (centidb.Model, centidb.field, centidb.index_on) == (
        models.Model, models.field, models.index_on)
