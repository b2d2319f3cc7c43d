"""A user's program, checked by ``mypy --strict`` in tests/test_typing.py.

It calls the API a typical program uses, with the annotations such a program
writes. Under ``--strict`` each call must be typed (no "untyped call"), and
each helper returns what it received from centidb, so a call that returns
``Any`` where the API promises a type fails too ("Returning Any"). It also
runs: tests/test_typing.py calls :func:`main`.
"""

from __future__ import annotations

from typing import Any, Iterator

import centidb
from centidb.encodings import ZLIB_PACKER, Encoder, make_json_encoder
from centidb.keylib import Key


def by_city(person: dict[str, Any]) -> str:
    return str(person['city'])


def person_key(person: dict[str, Any]) -> Key:
    return (person['surname'], person['name'])


def open_store() -> centidb.Store:
    return centidb.open('MemoryEngine')


def people_of(store: centidb.Store) -> centidb.Collection:
    return store.collection('people', key_func=person_key)


def notes_of(store: centidb.Store) -> centidb.Collection:
    encoder: Encoder = make_json_encoder()
    return store.collection('notes', encoder=encoder, packer=ZLIB_PACKER)


def city_index(people: centidb.Collection) -> centidb.Index:
    return people.add_index('city', by_city)


def add_person(people: centidb.Collection, person: dict[str, Any]) -> centidb.Record:
    return people.put(person)


def add_people(people: centidb.Collection, rows: list[dict[str, Any]]) -> list[Key]:
    return people.put_many(rows)


def remove_people(people: centidb.Collection, keys: list[Key]) -> list[centidb.Record | None]:
    return people.delete_many(keys)


def watch(store: centidb.Store, people: centidb.Collection) -> list[centidb.Change]:
    """Keep every change committed; refuse people without a city."""
    seen: list[centidb.Change] = []

    @store.on_commit
    def remember(changes: list[centidb.Change]) -> None:
        seen.extend(changes)

    @people.before_write
    def has_city(key: Key, person: dict[str, Any] | None) -> None:
        if person is not None and not person.get('city'):
            raise ValueError(f'{key} has no city')

    return seen


def is_stored(people: centidb.Collection, key: Key) -> bool:
    return key in people


def stored_at(people: centidb.Collection, key: Key) -> Any:
    return people[key]


def first_key(people: centidb.Collection) -> Key | None:
    return next(people.keys(), None)


def last_item(people: centidb.Collection) -> tuple[Key, Any] | None:
    return next(people.items(reverse=True), None)


def first_value(people: centidb.Collection, surname: str) -> Any:
    return next(people.values(prefix=surname), None)


def keys_in(index: centidb.Index, city: str) -> Iterator[Key]:
    return index.keys(prefix=city)


def how_many(people: centidb.Collection) -> int:
    return people.count()


def per_city(index: centidb.Index) -> list[tuple[Key, int]]:
    return index.group_counts()


def per_surname(people: centidb.Collection) -> list[tuple[Key, int]]:
    return people.group_counts()


def first_in_each(index: centidb.Index, cities: list[str]) -> list[Any]:
    return index.get_many(cities)


def entries_of(index: centidb.Index, city: str) -> Iterator[tuple[Key, Key]]:
    return index.pairs(prefix=city)


def has_city(index: centidb.Index, city: str) -> bool:
    return index.has(city)


def found_in(people: centidb.Collection, surname: str) -> Any:
    return people.find(prefix=surname)


def next_visit(store: centidb.Store) -> int:
    return store.counter('visits')


def names_in(store: centidb.Store) -> list[str]:
    return store.collections()


def main() -> list[str]:
    """Store two people, read them back by key and by index; return lines."""
    lines: list[str] = []
    store = open_store()
    try:
        people = people_of(store)
        notes_of(store)
        city = city_index(people)
        with store.begin(write=True) as txn:
            people.put({'surname': 'smith', 'name': 'ann', 'city': 'Leeds'}, txn=txn)
            people.put({'surname': 'jones', 'name': 'dee', 'city': 'Bath'}, txn=txn)
        found = people.get(('smith', 'ann'))
        lines.append(f"get: {found['city'] if found is not None else None}")
        lines.append(f'first key: {first_key(people)}')
        lines.append(f'last item: {last_item(people)}')
        lines.append(f"first value: {first_value(people, 'jones')}")
        dee = city.get('Bath')
        lines.append(f"index get: {dee['name'] if dee is not None else None}")
        lines.append(f"index keys: {list(keys_in(city, 'Leeds'))}")
        lines.append(f'per city: {per_city(city)}')
        eve = add_person(people, {'surname': 'brown', 'name': 'eve', 'city': 'Hull'})
        added = add_people(people, [{'surname': 'green', 'name': 'fay', 'city': 'Hull'},
                                    {'surname': 'white', 'name': 'gil', 'city': 'York'}])
        lines.append(f'put: {eve.key}, put_many: {added}')
        lines.append(f'per surname: {per_surname(people)}')
        firsts = first_in_each(city, ['Hull', 'Rome'])
        lines.append(f"index get_many: {[p['name'] if p is not None else None for p in firsts]}")
        lines.append(f"index pairs: {list(entries_of(city, 'Hull'))}, "
                     f"has: {has_city(city, 'York')}")
        lines.append(f"in: {is_stored(people, ('green', 'fay'))}, "
                     f"getitem: {stored_at(people, ('green', 'fay'))['city']}")
        seen = watch(store, people)
        gone = remove_people(people, [('brown', 'eve'), *added])
        lines.append(f'changes: {[(change.collection, change.key) for change in seen]}')
        lines.append(f'delete_many: {[rec.key if rec is not None else None for rec in gone]}')
        lines.append(f"find: {found_in(people, 'smith')}")
        lines.append(f'counter: {next_visit(store)}, {next_visit(store)}')
        lines.append(f'collections: {names_in(store)}')
        lines.append(f'count: {how_many(people)}')
    finally:
        store.close()
    return lines


if __name__ == '__main__':
    print('\n'.join(main()))
