"""``ModelIndex.group_counts`` and ``Model.delete_many``, on every engine.

Both mirror the collection calls (``Index.group_counts``,
``Collection.delete_many``) and take or return what a model does: index
tuples and counts, keys or instances, deleted instances.
"""

from __future__ import annotations

import pytest

import centidb
from centidb.errors import ModelNotBoundError, UnsupportedKeyTypeError


class Member(centidb.Model, collection='members', key='login'):
    login: str
    city: str
    team: str = ''

    by_city = centidb.index_on('city')
    by_city_team = centidb.index_on('city', 'team')


class Memo(centidb.Model, collection='memos'):    # counter keys
    text: str

    by_text = centidb.index_on('text')


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


def test_delete_many_by_key_and_by_instance(members):
    dee = Member.get('dee')
    deleted = Member.delete_many(['ann', ('bob',), dee, 'zed', 'ann'])
    assert deleted == [Member(login='ann', city='Oslo', team='red'),
                       Member(login='bob', city='Oslo', team='blue'), dee, None, None]
    assert [m.login for m in Member.values()] == ['cy', 'eve']
    assert Member.by_city.group_counts() == [(('Lima',), 1), (('Rome',), 1)]
    assert Member.by_city_team.count() == 2
    assert Member.delete_many([]) == []


def test_delete_many_is_all_or_nothing(members):
    with pytest.raises(UnsupportedKeyTypeError):
        Member.delete_many(['ann', object()])
    with pytest.raises(TypeError, match=r'takes keys or Member instances, not Memo'):
        Member.delete_many(['ann', Memo(text='x')])
    assert Member.count() == len(MEMBERS) and Member.by_city.count() == len(MEMBERS)
    with pytest.raises(RuntimeError):
        with members.begin(write=True):
            assert len(Member.delete_many(['ann', 'bob'])) == 2    # joins the transaction
            assert Member.count() == 3
            raise RuntimeError('abort')
    assert Member.count() == len(MEMBERS)
    with members.begin(write=True) as txn:
        Member.delete_many(['cy'], txn=txn)
    assert Member.get('cy') is None and Member.by_city.get('Rome') is None


def test_delete_many_with_counter_keys(store):
    Memo.bind(store)
    memos = [Memo(text=text) for text in 'abc']
    Memo.put_many(memos)
    with pytest.raises(ValueError, match='never saved'):
        Memo.delete_many([memos[0], Memo(text='new')])
    assert Memo.count() == 3
    deleted = Memo.delete_many([memos[0], (3,)])
    assert deleted == [Memo(text='a'), Memo(text='c')]
    assert [key for key, _ in Memo.items()] == [(2,)]
    assert deleted[1].save() == (3,)        # a deleted instance keeps its number
    assert list(Memo.by_text.keys()) == [(2,), (3,)]


def test_delete_many_needs_a_bound_model():
    with pytest.raises(ModelNotBoundError):
        Unbound.delete_many([1])
