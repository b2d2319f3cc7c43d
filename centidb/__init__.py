"""centidb: an embedded, indexed document-collection database.

``centidb.open(engine_name, **engine_options)`` opens a
:class:`~centidb.store.Store`; ``store.collection(name, key_func=...)`` gives a
:class:`~centidb.collection.Collection` whose records can be indexed with
``add_index``. The key codec is :mod:`centidb.keylib`, the storage engines are
in :mod:`centidb.engines`, record encoders and packers in
:mod:`centidb.encodings`, exceptions in :mod:`centidb.errors`.
"""

# First: its import hook decides how the modules in impl.PURE_MODE load.
from centidb import impl  # noqa: F401
from centidb.collection import Collection
from centidb.expr import F
from centidb.index import Index
from centidb.keylib import Desc
from centidb.models import Model, field, index_on
from centidb.records import Record
from centidb.store import Store, Transaction, open
from centidb.txn import Change

__version__ = '0.1.0'

__all__ = ['open', 'Store', 'Transaction', 'Collection', 'Index', 'Record',
           'Desc', 'Change', 'Model', 'field', 'index_on', 'F', '__version__']
