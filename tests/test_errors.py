"""centidb.errors: the hierarchy the module documents, and errors that cross processes.

Every exception class derives from :class:`~centidb.errors.CentiError`, and
each one raised (every class but the three family bases) also from the
built-in exception a caller would naturally catch, so generic handlers keep
working. Each survives pickling (a worker process hands it to its parent)
with its type, message and attributes.
"""

import inspect
import pickle

import pytest

from centidb import errors

CLASSES = [cls for _, cls in inspect.getmembers(errors, inspect.isclass)
           if issubclass(cls, BaseException) and cls.__module__ == 'centidb.errors']

#: The family bases: raised only through their subclasses.
BASES = {errors.CentiError, errors.EngineError, errors.StoreError}


def builtin_bases(cls):
    """The built-in exception classes `cls` derives from, beyond ``Exception``."""
    return [base for base in cls.__mro__
            if base.__module__ == 'builtins' and base not in (Exception, BaseException, object)]


def test_the_classes_are_found():
    assert len(CLASSES) > 30 and BASES <= set(CLASSES)


@pytest.mark.parametrize('cls', CLASSES, ids=lambda cls: cls.__name__)
def test_every_error_is_a_centidb_error(cls):
    assert issubclass(cls, errors.CentiError)


@pytest.mark.parametrize('cls', sorted(set(CLASSES) - BASES, key=lambda cls: cls.__name__),
                         ids=lambda cls: cls.__name__)
def test_every_raised_error_is_also_a_builtin_error(cls):
    assert builtin_bases(cls) != [], f'{cls.__name__} derives from no built-in error'


@pytest.mark.parametrize('cls', CLASSES, ids=lambda cls: cls.__name__)
def test_every_error_survives_pickling(cls):
    error = cls('what went wrong')
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is cls and copy.args == error.args and str(copy) == str(error)


def test_a_unique_error_keeps_its_attributes_through_pickling():
    error = errors.UniqueError('taken', index='email', value=('a@b',), key=(7,))
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.index, copy.value, copy.key) == ('email', ('a@b',), (7,))


def test_builtin_bases_finds_them():
    assert builtin_bases(errors.DatabasePermissionError) == [PermissionError, OSError]
    assert builtin_bases(errors.StoreError) == []
