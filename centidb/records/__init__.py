"""The record layer: how records and their index entries are stored, read and written.

A stored record is one engine key (the collection prefix and the packed key
tuple) whose value is a header byte (the packer's id), the packer's output
of the encoded bytes and, in a collection that keeps checksums, a CRC-32 trailer; plus one
engine key per index entry (the index prefix, the packed index tuple,
``KEY_SEP``, the packed record key) with an empty value.

Its modules, lowest first (each imports only modules listed before it):

* :mod:`~centidb.records.fastpath`: an engine transaction's unchecked calls;
* :mod:`~centidb.records.record`: :class:`Record`, index entries and the
  common-case writer;
* :mod:`~centidb.records.reader`: the common-case reader;
* :mod:`~centidb.records.entry`: the entry points of ``get`` and ``put``;
* :mod:`~centidb.records.limits`: writes checked against the engine's limits;
* :mod:`~centidb.records.savepoint`: engine writes that can be rolled back;
* :mod:`~centidb.records.entries`: index entries: finding, splitting, deleting, replacing;
* :mod:`~centidb.records.writing`: the general writes;
* :mod:`~centidb.records.access`: one collection's record paths.

``fastpath``, ``record``, ``reader`` and ``entry`` are compiled as they are when centidb is built
(``.pxd`` files beside them; :data:`centidb.impl.PURE_MODE`).

The package calls the key codec, the encodings, the batches, the store
transactions and the engines; never a layer above. This module re-exports
the names the layers above use.
"""

from centidb.records.reader import RecordReader
from centidb.records.record import Record, RecordWriter, as_key, index_entries

__all__ = ['Record', 'RecordWriter', 'RecordReader', 'index_entries', 'as_key']
