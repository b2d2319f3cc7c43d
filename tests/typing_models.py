"""A user's program with models, checked by ``mypy --strict`` in tests/test_typing.py.

The type checker knows each model's fields (``typing.dataclass_transform``):
the constructor takes them as typed keyword arguments, and every read
returns the model's instances, so each helper below returns exactly what
its annotation says without a cast ("Returning Any" fails otherwise). It
also runs: tests/test_typing.py calls :func:`main`.
"""

from __future__ import annotations

import datetime
from typing import Iterator, Optional

import centidb
from centidb.keylib import Key
from centidb.model import ModelIndex


class Book(centidb.Model, collection='books', key='isbn'):
    isbn: str
    title: str
    year: int
    authors: list[str] = centidb.field(default_factory=list)
    added: Optional[datetime.datetime] = None
    copies: int = 1

    by_year = centidb.index_on('year')
    by_author = centidb.index_on('authors')
    by_title = centidb.index_on(lambda book: book.title.lower(), unique=True)


class Loan(centidb.Model, collection='loans'):
    isbn: str
    reader: str

    by_reader = centidb.index_on('reader', 'isbn')


def new_book(isbn: str, title: str, year: int, authors: list[str]) -> Book:
    return Book(isbn=isbn, title=title, year=year, authors=authors)


def book(isbn: str) -> Book | None:
    return Book.get(isbn)


def book_or(isbn: str, default: str) -> Book | str:
    return Book.get(isbn, default)


def books(isbns: list[str]) -> list[Book | None]:
    return Book.get_many(isbns)


def every_book() -> Iterator[Book]:
    return Book.values()


def books_with_keys() -> Iterator[tuple[Key, Book]]:
    return Book.items(reverse=True)


def first_after(isbn: str) -> Book | None:
    return Book.find(isbn)


def year_index() -> ModelIndex[Book]:
    return Book.by_year


def books_of(year: int) -> list[Book]:
    return list(Book.by_year.values(year, year, include=True))


def book_titled(title: str) -> Book | None:
    return Book.by_title.get(title.lower())


def by_author() -> Iterator[tuple[Key, Book]]:
    return Book.by_author.items()


def loans_of(reader: str) -> list[Loan]:
    return list(Loan.by_reader.values(prefix=reader))


def lend(store: centidb.Store, isbn: str, reader: str) -> Key:
    with store.begin(write=True) as txn:
        found = Book.get(isbn, txn=txn)
        if found is None or found.copies == 0:
            raise LookupError(isbn)
        found.copies -= 1
        found.save(txn=txn)
        return Loan(isbn=isbn, reader=reader).save(txn=txn)


def main() -> list[str]:
    """Catalog books, lend one, query by key and index; return lines."""
    lines: list[str] = []
    store = centidb.open('MemoryEngine')
    try:
        collection: centidb.Collection = Book.bind(store)
        Loan.bind(store)
        keys = Book.put_many([new_book('111', 'Dune', 1965, ['Herbert']),
                              new_book('222', 'Emma', 1815, ['Austen'])])
        lines.append(f'put_many: {keys}, in {collection.name}')
        lines.append(f"loan: {lend(store, '111', 'ann')}")
        found = book('111')
        lines.append(f"get: {found.title if found is not None else None}, "
                     f"copies {found.copies if found is not None else None}")
        lines.append(f"default: {book_or('999', 'none')}")
        lines.append(f"get_many: {[b.title if b else None for b in books(['222', '999'])]}")
        lines.append(f'values: {[b.year for b in every_book()]}')
        lines.append(f'items: {[key for key, _ in books_with_keys()]}')
        after = first_after('2')
        lines.append(f"find: {after.title if after is not None else None}")
        lines.append(f'index: {year_index()!r}, {[b.title for b in books_of(1815)]}')
        titled = book_titled('DUNE')
        lines.append(f"unique: {titled.isbn if titled is not None else None}")
        lines.append(f'authors: {[tup for tup, _ in by_author()]}')
        lines.append(f"loans: {[loan.isbn for loan in loans_of('ann')]}")
        emma = found if found is not None else new_book('0', '', 0, [])
        lines.append(f'deleted: {emma.delete()}, count: {Book.count()}')
    finally:
        store.close()
    return lines


if __name__ == '__main__':
    print('\n'.join(main()))
