"""centidb.models.index: index declarations (``index_on``) and ``ModelIndex``, on every engine.

``index_on`` checks its arguments and makes a ``DeclaredIndex``, which the
model class turns into a ``ModelIndex`` when read. ``ModelIndex.group_counts``
mirrors ``Index.group_counts``. The other index queries returning instances
are in test_models_model.py.
"""

from __future__ import annotations

import pytest

import centidb
from centidb.errors import ModelNotBoundError
from centidb.models.index import DeclaredIndex, ModelIndex, index_on


class Member(centidb.Model, collection='members', key='login'):
    login: str
    city: str
    team: str = ''

    by_city = centidb.index_on('city')
    by_city_team = centidb.index_on('city', 'team')


class Unbound(centidb.Model, collection='unbound', key='k'):
    k: int

    by_k = centidb.index_on('k')


MEMBERS = [('ann', 'Oslo', 'red'), ('bob', 'Oslo', 'blue'), ('cy', 'Rome', 'red'),
           ('dee', 'Oslo', 'red'), ('eve', 'Lima', '')]


@pytest.fixture
def members(store):
    Member.bind(store)
    Member.put_many([Member(login=login, city=city, team=team)
                     for login, city, team in MEMBERS])
    return store


def test_group_counts_of_a_model_index(members):
    assert Member.by_city.group_counts() == [(('Lima',), 1), (('Oslo',), 3), (('Rome',), 1)]
    assert Member.by_city.group_counts(reverse=True, max=2) == [(('Rome',), 1), (('Oslo',), 3)]
    assert Member.by_city.group_counts(lo='M', hi='Rome', include=True) == [
        (('Oslo',), 3), (('Rome',), 1)]
    assert Member.by_city.group_counts(startswith='O') == [(('Oslo',), 3)]
    assert Member.by_city_team.group_counts(2, prefix='Oslo') == [
        (('Oslo', 'blue'), 1), (('Oslo', 'red'), 2)]
    assert Member.by_city_team.group_counts(size=1) == Member.by_city.group_counts()
    with members.begin() as txn:
        assert Member.by_city.group_counts(txn=txn, max=1) == [(('Lima',), 1)]
    with pytest.raises(ValueError, match='at least 1'):
        Member.by_city.group_counts(0)
    with pytest.raises(TypeError, match='size must be an int'):
        Member.by_city.group_counts('city')     # type: ignore[arg-type]


def test_group_counts_needs_a_bound_model():
    with pytest.raises(ModelNotBoundError, match='Unbound.bind'):
        Unbound.by_k.group_counts()


# --- declarations --------------------------------------------------------------------

def test_index_on_makes_a_declared_index():
    by_city = index_on('city')
    assert isinstance(by_city, DeclaredIndex)
    assert (by_city.fields, by_city.func, by_city.unique) == (('city',), None, False)
    pair = index_on('city', 'team', unique=True)
    assert (pair.fields, pair.unique) == (('city', 'team'), True)
    assert repr(pair) == "index_on('city', 'team', unique=True)"

    def lower(member):
        return member.login.lower()
    by_func = index_on(lower)
    assert (by_func.fields, by_func.func) == ((), lower)


@pytest.mark.parametrize('on', [(), ('',), (1,), ('a', len), (len, len)])
def test_index_on_refuses_anything_else(on):
    with pytest.raises(TypeError, match='index_on'):
        index_on(*on)


def test_read_from_the_class_a_declared_index_is_a_model_index_named_after_it():
    declared = vars(Member)['by_city']
    assert isinstance(declared, DeclaredIndex) and declared.name == 'by_city'
    found = Member.by_city
    assert isinstance(found, ModelIndex)
    assert (found.model, found.name) == (Member, 'by_city')
    assert repr(found) == '<ModelIndex Member.by_city>'

    class Local(Member, collection='local'):
        pass
    assert Local.by_city.model is Local       # inherited, queried for the subclass


def test_a_model_index_reads_the_bound_collections_index(members):
    index = Member.by_city_team.index
    assert index.name == 'by_city_team'
    assert Member.by_city_team.get(('Oslo', 'red')) == Member(login='ann', city='Oslo',
                                                               team='red')
    assert ('Lima', '') in Member.by_city_team and ('Lima', 'x') not in Member.by_city_team
