"""centidb.models.model: declarative models, on every engine.

Declaring fields, keys and indexes; binding to a store (again after a
reopen); saving, loading and deleting instances; a field changed after
construction is checked at save; transactions and joining; put_many and
delete_many; queries on keys and indexes returning instances; unique
indexes. The field type checks are in test_models_fields.py, index
declarations and group counts in test_models_index.py.
"""

from __future__ import annotations

import datetime
import decimal
import sys
import uuid
from typing import Any, ClassVar, Dict, List, Literal, Optional, Tuple, Union

import pytest

import centidb
from centidb.errors import (
    KeyKindMismatchError, ModelNotBoundError, StoreError, UniqueError, UnsupportedKeyTypeError,
)
from centidb.models import fields, model
from centidb.models import index as modelindex
from centidb.models.model import DeclaredIndex, Field, ModelIndex

from stores import contents, fails_cleanly


class User(centidb.Model, collection='users', key='email'):
    email: str
    name: str
    age: int = 0
    tags: list[str] = centidb.field(default_factory=list)
    nickname: Optional[str] = None

    kind: ClassVar[str] = 'person'      # not a field

    by_age = centidb.index_on('age')
    by_tag = centidb.index_on('tags')                   # multi-entry: one per tag
    by_name = centidb.index_on(lambda user: user.name.lower(), unique=True)


class Person(centidb.Model, collection='people', key=('surname', 'name')):
    surname: str
    name: str
    city: str = ''

    by_city_surname = centidb.index_on('city', 'surname')


class Event(centidb.Model, collection='events',
            key=lambda event: (event.day, centidb.Desc(event.seq))):
    day: str
    seq: int
    what: str = ''


class Note(centidb.Model):          # counter keys, collection 'Note'
    text: str
    labels: list[str] = centidb.field(default_factory=list)

    by_label = centidb.index_on('labels')


def bind_all(store):
    for model in (User, Person, Event, Note):
        model.bind(store)


def stored(store, name):
    """The records of collection `name` as any program reads them."""
    return dict(store.collection(name).items())


# --- declaring -----------------------------------------------------------------------

def test_the_constructor_takes_fields_as_keywords():
    user = User(email='a@x', name='Ann')
    assert (user.age, user.tags, user.nickname) == (0, [], None)
    assert User(email='b', name='B').tags is not user.tags      # a new list each
    assert repr(user) == "User(email='a@x', name='Ann', age=0, tags=[], nickname=None)"
    assert user == User(email='a@x', name='Ann') and user != User(email='a@x', name='Bo')
    assert user != Person(surname='a@x', name='Ann')
    with pytest.raises(TypeError, match="missing the field 'name'"):
        User(email='a@x')
    with pytest.raises(TypeError, match="unexpected keyword argument 'nmae'"):
        User(email='a@x', name='Ann', nmae='x')
    with pytest.raises(TypeError):
        User('a@x', 'Ann')  # type: ignore[misc]
    with pytest.raises(TypeError, match='unhashable'):
        hash(user)


def test_declarations_are_read_from_the_class_body():
    schema = User._model_schema
    assert list(schema.fields) == ['email', 'name', 'age', 'tags', 'nickname']
    assert list(schema.indexes) == ['by_age', 'by_tag', 'by_name']
    assert schema.collection == 'users' and schema.key == ('email',)
    assert Note._model_schema.collection == 'Note' and Note._model_schema.key is None
    assert User.kind == 'person' and User.age == 0
    assert not hasattr(User, 'email') and not hasattr(User, 'tags')
    assert isinstance(vars(User)['by_age'], DeclaredIndex)
    assert isinstance(User.by_age, ModelIndex)
    assert repr(User.by_age) == '<ModelIndex User.by_age>'
    assert repr(vars(User)['by_name']).endswith('unique=True)')
    assert repr(vars(Person)['by_city_surname']) == "index_on('city', 'surname')"


def test_a_subclass_inherits_fields_indexes_and_key():
    class Admin(User, collection='admins'):
        level: int = 1

    assert list(Admin._model_schema.fields) == ['email', 'name', 'age', 'tags', 'nickname', 'level']
    assert list(Admin._model_schema.indexes) == ['by_age', 'by_tag', 'by_name']
    assert Admin._model_schema.key == ('email',) and Admin._model_schema.collection == 'admins'
    assert Admin(email='a', name='b').level == 1

    class Adult(User, collection='adults'):
        age: int = 18                           # redeclared: it keeps its place

    assert list(Adult._model_schema.fields) == list(User._model_schema.fields)
    assert Adult(email='a', name='b').age == 18 and User.age == 0


@pytest.mark.parametrize('body, message', [
    ('tags: list = []', 'mutable default'),
    ('save: int = 0', 'taken by centidb.Model'),
    ('by_x = centidb.index_on("nope")', "index 'by_x' names 'nope'"),
    ('x: int = centidb.index_on("x")', 'both a field and an index'),
])
def test_bad_declarations_fail_at_class_creation(body, message):
    with pytest.raises(TypeError, match=message):
        exec(f'class Bad(centidb.Model):\n    x: int = 0\n    {body}\n', {'centidb': centidb})


@pytest.mark.parametrize('keywords, message', [
    ({'key': 'nope'}, "key names 'nope'"),
    ({'key': ()}, 'key must be'),
    ({'key': 3}, 'key must be'),
    ({'collection': ''}, 'collection must be'),
])
def test_bad_class_keywords(keywords, message):
    with pytest.raises(TypeError, match=message):
        type('Bad', (centidb.Model,), {'__annotations__': {'x': 'int'}}, **keywords)


def test_index_on_and_field_check_their_arguments():
    with pytest.raises(TypeError, match='field names, or one function'):
        centidb.index_on()
    with pytest.raises(TypeError, match='field names, or one function'):
        centidb.index_on('a', len)
    with pytest.raises(TypeError, match='not both'):
        centidb.field(default=1, default_factory=list)  # type: ignore[call-overload]
    assert isinstance(centidb.field(default=1), Field)


def test_names_defined_below_are_importable_from_the_model_module():
    assert (model.Field, model.field) == (fields.Field, fields.field)
    assert (centidb.field, centidb.index_on) == (fields.field, modelindex.index_on)
    assert (model.index_on, model.DeclaredIndex, model.ModelIndex) == (
        modelindex.index_on, modelindex.DeclaredIndex, modelindex.ModelIndex)
    assert set(model.__all__) == {'Model', 'ModelIndex', 'DeclaredIndex', 'Field', 'field',
                                  'index_on'}


# --- binding -------------------------------------------------------------------------

def test_bind_opens_the_collection_and_adds_the_indexes(store):
    users = User.bind(store)
    assert users is store.collection('users')
    assert sorted(users.indices) == ['by_age', 'by_name', 'by_tag']
    assert users.indices['by_name'].unique is True
    assert users.indices['by_age'].unique is False
    assert User.bind(store) is users            # binding again changes nothing
    assert User.by_age.index is users.indices['by_age']


def test_an_unbound_model_says_what_to_do():
    class Lonely(centidb.Model):
        x: int
        by_x = centidb.index_on('x')

    with pytest.raises(ModelNotBoundError, match=r'call Lonely.bind\(store\) first'):
        Lonely(x=1).save()
    with pytest.raises(ModelNotBoundError, match='not bound'):
        Lonely.get(1)
    with pytest.raises(ModelNotBoundError, match='not bound'):
        list(Lonely.values())
    with pytest.raises(ModelNotBoundError, match='not bound'):
        Lonely.by_x.count()
    assert issubclass(ModelNotBoundError, StoreError)
    assert issubclass(ModelNotBoundError, RuntimeError)     # what it was before
    with pytest.raises(TypeError, match='base class'):
        centidb.Model.bind(centidb.open('MemoryEngine'))
    with pytest.raises(TypeError, match='needs a Store'):
        Lonely.bind('store')    # type: ignore[arg-type]


def test_an_index_dropped_after_binding_says_to_bind_again(store):
    class Dropped(centidb.Model, key='x'):
        x: int
        by_x = centidb.index_on('x')

    Dropped.bind(store).drop_index('by_x')
    with pytest.raises(ModelNotBoundError, match=r"index 'by_x' .* not added .* again"):
        Dropped.by_x.get(1)
    Dropped.bind(store)
    assert Dropped.by_x.get(1) is None


def test_an_unsupported_field_type_fails_at_bind(store):
    class Odd(centidb.Model):
        x: set[int]

    with pytest.raises(TypeError, match=r'Odd.x: the field type set\[int\] is not supported'):
        Odd.bind(store)
    assert 'Odd' not in store.collections()


def test_reopening_and_binding_again(reopen):
    store = reopen()
    bind_all(store)
    User(email='a', name='Ann', tags=['x']).save()
    Note(text='one', labels=['l']).save()
    Person(surname='smith', name='ann', city='Leeds').save()
    store.close()

    store = reopen()
    try:
        bind_all(store)
        assert User.get('a') == User(email='a', name='Ann', tags=['x'])
        assert [n.text for n in Note.by_label.values('l')] == ['one']
        assert Note(text='two').save() == (2,)
        with pytest.raises(UniqueError):
            User(email='b', name='ANN').save()
        assert Person.by_city_surname.get(('Leeds', 'smith')).name == 'ann'
        assert store.verify() == []
    finally:
        store.close()


def test_binding_to_a_collection_open_with_another_key_function_fails(store):
    store.collection('Note', key_func=lambda rec: rec['text'])
    with pytest.raises(ValueError, match='already open in this store with another key'):
        Note.bind(store)


def test_the_key_kind_is_checked_on_reopen(reopen):
    store = reopen()
    Note.bind(store)
    store.close()
    store = reopen()
    try:
        class Note2(centidb.Model, collection='Note', key='text'):
            text: str
        with pytest.raises(KeyKindMismatchError):
            Note2.bind(store)
        store.collection('Keyed', key_func=lambda rec: rec['text'])
    finally:
        store.close()
    store = reopen()
    try:
        class Keyed(centidb.Model):
            text: str
        Keyed.bind(store)     # a keyed collection opened without its function
        fails_cleanly(store, KeyKindMismatchError, Keyed(text='x').save)
    finally:
        store.close()


# --- saving, loading, deleting -------------------------------------------------------

def test_records_are_plain_dicts(store):
    bind_all(store)
    assert User(email='a', name='Ann', tags=['x']).save() == ('a',)
    assert stored(store, 'users') == {('a',): {'email': 'a', 'name': 'Ann', 'age': 0,
                                               'tags': ['x'], 'nickname': None}}
    assert store.collection('users').indices['by_tag'].get('x')['name'] == 'Ann'


def test_save_get_delete_with_a_key_field(store):
    bind_all(store)
    ann = User(email='a', name='Ann')
    ann.save()
    ann.age = 41
    assert ann.save() == ('a',)                 # replaced
    assert User.count() == 1
    assert User.get('a') == ann and User.get(('a',)) == ann
    assert User.get('zz') is None and User.get('zz', 'none') == 'none'
    assert User.get_many(['a', 'zz']) == [ann, None]
    assert ann.delete() is True
    assert ann.delete() is False
    assert User.get('a') is None
    assert store.collection('users').indices['by_age'].count() == 0


def test_a_key_of_several_fields(store):
    bind_all(store)
    assert Person(surname='smith', name='ann').save() == ('smith', 'ann')
    Person(surname='smith', name='bob').save()
    Person(surname='smithers', name='carl').save()
    assert [p.name for p in Person.values(prefix='smith')] == ['ann', 'bob']
    assert Person.get(('smith', 'bob')).surname == 'smith'
    assert Person(surname='smith', name='bob').delete()
    assert list(Person.keys()) == [('smith', 'ann'), ('smithers', 'carl')]


def test_a_key_function_of_the_instance(store):
    bind_all(store)
    for seq in (1, 3, 2):
        Event(day='mon', seq=seq).save()
    assert [e.seq for e in Event.values(prefix='mon')] == [3, 2, 1]
    assert Event.get(('mon', centidb.Desc(2))).seq == 2
    assert Event(day='mon', seq=2).delete()
    assert Event.count() == 2


def test_counter_keys(store):
    bind_all(store)
    first, second = Note(text='a'), Note(text='b')
    assert first.save() == (1,) and second.save() == (2,)
    first.text = 'A'
    assert first.save() == (1,)                 # it kept its number
    loaded = Note.get(2)
    loaded.text = 'B'
    assert loaded.save() == (2,)
    assert [n.text for n in Note.values()] == ['A', 'B']
    assert first.delete() and not first.delete()
    assert first.save() == (1,)                 # saved again under its number
    with pytest.raises(ValueError, match='never saved'):
        Note(text='new').delete()
    from_index = Note.find(2)
    assert from_index.delete() and list(Note.keys()) == [(1,)]


def test_a_missing_field_in_a_stored_record(store):
    bind_all(store)
    users = store.collection('users')
    users.put({'email': 'old', 'name': 'Old'})              # written before age and tags
    assert User.get('old') == User(email='old', name='Old')
    assert User.by_age.get(0).email == 'old'                # indexed at the default
    with pytest.raises(ValueError, match='no value for the field User.name'):
        users.put({'email': 'bad', 'age': 3})   # the by_name function reads an instance
    notes = store.collection('Note')
    notes.put({'labels': []})
    with pytest.raises(ValueError, match='no value for the field Note.text'):
        Note.get(1)
    assert notes.put(['not', 'a', 'dict']).key == (2,)
    with pytest.raises(ValueError, match='holds a list where Note expects a dict'):
        Note.get(2)


# --- type checks ---------------------------------------------------------------------

def test_a_field_changed_after_construction_is_checked(store):
    bind_all(store)
    ann = User(email='a', name='Ann')
    ann.save()
    ann.age = 'old'         # type: ignore[assignment]
    fails_cleanly(store, TypeError, ann.save, match="User.age must be int, not str")
    assert User.get('a').age == 0


# --- transactions --------------------------------------------------------------------

def test_txn_everywhere(store):
    bind_all(store)
    with store.begin(write=True) as txn:
        User(email='a', name='Ann', age=3).save(txn=txn)
        assert User.get('a', txn=txn).age == 3
        assert [u.email for u in User.by_age.values(3, txn=txn)] == ['a']
        assert User.count(txn=txn) == 1 and User.find(txn=txn).name == 'Ann'
        User.put_many([User(email='b', name='Bo')], txn=txn)
        assert User.get_many(['a', 'b'], txn=txn)[1].name == 'Bo'
        assert User.by_name.get('bo', txn=txn).email == 'b'
        assert User(email='a', name='x').delete(txn=txn)
        txn.abort()
    assert User.count() == 0 and store.collection('users').indices['by_age'].count() == 0


def test_calls_join_the_threads_write_transaction(store):
    bind_all(store)
    with store.begin(write=True) as txn:
        User(email='a', name='Ann').save()
        assert [u.email for u in User.values()] == ['a']
        assert User.by_tag.count() == 0
        assert [k for k, _ in User.by_age.items()] == [(0,)]
        txn.abort()
    assert User.count() == 0
    with store.begin(write=True):
        User(email='a', name='Ann').save()
    assert User.get('a').name == 'Ann'


@pytest.mark.parametrize('joined', [False, True])
def test_a_counter_key_is_forgotten_when_the_transaction_aborts(store, joined):
    bind_all(store)
    note, batch = Note(text='a'), [Note(text='b'), Note(text='c')]
    with store.begin(write=True) as txn:
        given = None if joined else txn
        assert note.save(txn=given) == (1,)
        assert Note.put_many(batch, txn=given) == [(2,), (3,)]
        txn.abort()
    other = Note(text='other')
    assert other.save() == (1,)                 # the counter went back too
    assert note.save() == (2,)                  # not (1,): that is other's now
    assert [n.save() for n in batch] == [(3,), (4,)]
    assert [n.text for n in Note.values()] == ['other', 'a', 'b', 'c']


def test_a_unique_index(store):
    bind_all(store)
    ann = User(email='a', name='Ann')
    ann.save()
    ann.age = 5
    ann.save()                  # its own index tuple: fine
    error = fails_cleanly(store, UniqueError, User(email='b', name='ANN').save)
    assert error.index == 'by_name' and error.key == ('a',)
    with store.begin(write=True) as txn:
        User(email='c', name='Cy').save(txn=txn)
        before = contents(store, txn)
        with pytest.raises(UniqueError):
            User(email='d', name='cy').save(txn=txn)
        assert contents(store, txn) == before     # the transaction is as it was
    assert [u.email for u in User.values()] == ['a', 'c']


# --- put_many ------------------------------------------------------------------------

def test_put_many(store):
    bind_all(store)
    users = [User(email=e, name=e.upper(), tags=['t']) for e in 'cab']
    assert User.put_many(users) == [('c',), ('a',), ('b',)]
    assert [u.name for u in User.by_tag.values('t')] == ['A', 'B', 'C']
    fails_cleanly(store, UniqueError,
                  lambda: User.put_many([User(email='d', name='D'), User(email='e', name='d')]))
    with pytest.raises(TypeError, match='takes User instances, not Note'):
        User.put_many([Note(text='x')])  # type: ignore[list-item]
    assert User.put_many([]) == []


def test_put_many_with_counter_keys(store):
    bind_all(store)
    saved = Note(text='saved')
    saved.save()
    saved.text = 'changed'
    assert Note.put_many([Note(text='new'), saved, Note(text='newer')]) == [(2,), (1,), (3,)]
    assert [n.text for n in Note.values()] == ['changed', 'new', 'newer']


# --- queries -------------------------------------------------------------------------

@pytest.fixture
def users(store):
    bind_all(store)
    User.put_many([
        User(email='ann@x', name='Ann', age=41, tags=['ops', 'admin']),
        User(email='bob@x', name='Bob', age=35, tags=['ops']),
        User(email='cy@y', name='Cy', age=35),
        User(email='dee@y', name='Dee', age=52, tags=['admin']),
    ])
    return store


def test_key_queries_return_instances(users):
    assert [u.name for u in User.values()] == ['Ann', 'Bob', 'Cy', 'Dee']
    assert [u.name for u in User.values(startswith='c')] == ['Cy']
    assert [u.name for u in User.values('bob@x', 'dee@y')] == ['Bob', 'Cy']
    assert [u.name for u in User.values('bob@x', 'dee@y', include=True, reverse=True,
                                        max=2)] == ['Dee', 'Cy']
    assert [(k, u.age) for k, u in User.items(max=2)] == [(('ann@x',), 41), (('bob@x',), 35)]
    assert list(User.keys(lo='c')) == [('cy@y',), ('dee@y',)]
    assert User.count(startswith='b') == 1
    assert User.find(startswith='d').name == 'Dee'
    assert User.find('z') is None and User.find('z', default=0) == 0


def test_index_queries_return_instances(users):
    assert [u.name for u in User.by_age.values()] == ['Bob', 'Cy', 'Ann', 'Dee']
    assert [(t, u.name) for t, u in User.by_age.items(35, 35, include=True)] == [
        ((35,), 'Bob'), ((35,), 'Cy')]
    assert list(User.by_tag.keys('admin', 'admin', include=True)) == [('ann@x',), ('dee@y',)]
    assert User.by_tag.count(prefix='ops') == 2 and User.by_tag.count() == 4
    assert User.by_age.get(35).name == 'Bob'
    assert User.by_age.get(99) is None and User.by_age.get(99, 'none') == 'none'
    assert [u and u.name for u in User.by_name.get_many(['dee', 'zed'])] == ['Dee', None]
    assert User.by_name.has('cy') and 'cy' in User.by_name and 'zed' not in User.by_name
    assert User.by_age.find(40).name == 'Ann'
    assert User.by_age.find(reverse=True).name == 'Dee'
    assert User.by_age.find(60, default=0) == 0


def test_index_queries_on_counter_keys_keep_the_keys(store):
    bind_all(store)
    Note.put_many([Note(text='a', labels=['x']), Note(text='b', labels=['x', 'y'])])
    found = list(Note.by_label.values('x', 'x', include=True))
    assert [n.text for n in found] == ['a', 'b']
    found[0].text = 'A'
    assert found[0].save() == (1,)
    assert [(t, n.text) for t, n in Note.by_label.items(reverse=True)] == [
        (('y',), 'b'), (('x',), 'b'), (('x',), 'A')]
    assert Note.by_label.get('y').delete()
    assert [n.text for n in Note.values()] == ['A']
    assert Note.by_label.get_many(['x', 'y']) == [Note(text='A', labels=['x']), None]


def test_an_abandoned_index_query_ends_its_read_transaction(store, monkeypatch):
    bind_all(store)
    Note.put_many([Note(text=str(n), labels=['x']) for n in range(3)])
    begun = []

    def begin(write=False):
        begun.append(type(store).begin(store, write))
        return begun[-1]
    monkeypatch.setattr(store, 'begin', begin)
    values = Note.by_label.values()
    assert next(values).text == '0'
    assert [txn.write for txn in begun] == [False] and begun[0].engine_txn is not None
    values.close()
    assert begun[0].engine_txn is None
    with store.begin(write=True) as txn:     # joined: no transaction of its own
        assert [n.text for n in Note.by_label.values(txn=None)] == ['0', '1', '2']
    assert len(begun) == 2 and txn.write


# --- delete_many ---------------------------------------------------------------------

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
