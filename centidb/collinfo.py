"""A collection's stored metadata, as this session knows it.

:class:`CollectionMeta` keeps a collection's metadata ``dict`` (see
:data:`~centidb.metarecords.CollectionInfo`) and answers from it which
packers the collection's records may use and whether it holds batches; it
writes the changes (a packer first used, the first batch) through the
store's :class:`~centidb.catalog.Catalog`. Each collection holds one.
"""

from __future__ import annotations

from centidb.batches import PackerNotAllowed
from centidb.catalog import Catalog
from centidb.encodings import Encoder
from centidb.engines import EngineTransaction
from centidb.metarecords import CollectionInfo
from centidb.txn import Transaction

__all__ = ['CollectionMeta']

#: Packers any collection's records may use: they only decompress bytes.
_BUILTIN_PACKERS = frozenset({'plain', 'zlib', 'lz4', 'zstd', 'snappy'})
#: Encoders: never a packer of a collection that was not given one as such.
_BUILTIN_ENCODERS = frozenset({'msgpack', 'json', 'pickle'})


class CollectionMeta:
    """One collection's metadata: its packers and whether it holds batches.

    :param catalog: the store's :class:`~centidb.catalog.Catalog`.
    :param name: the collection's name.
    :param info: its metadata ``dict``, as stored.
    :param encoder: the record :class:`~centidb.encodings.Encoder`.
    :param packer: the collection's own packer.
    """

    def __init__(self, catalog: Catalog, name: str, info: CollectionInfo, encoder: Encoder,
                 packer: Encoder) -> None:
        self.catalog = catalog
        self.name = name
        self.coll_id: int = info['id']
        self.encoder = encoder
        self.packer = packer
        #: The metadata ``dict`` (replaced, never changed in place).
        self.info = info
        #: True once the collection holds batches: reads that miss and
        #: every write then look for a batch covering the key (see
        #: :mod:`centidb.batches`).
        self.batched = bool(info.get('batched'))

    def reload(self, info: CollectionInfo) -> None:
        """Take up the metadata as another process left it.

        :param info: the collection's stored metadata ``dict``.
        """
        self.info = info
        self.batched = bool(info.get('batched'))

    def packer_allowed(self, name: str) -> bool:
        """True if the collection's records may use the packer `name`.

        Its own packer, the built-in packers and those recorded in its
        metadata; in a collection from before packers were recorded, any
        packer but the built-in encoders and its own encoder.

        :param name: the packer's name.
        """
        if name == self.packer.name or name in _BUILTIN_PACKERS:
            return True
        recorded = self.info.get('packers')
        if recorded is None:
            return name not in _BUILTIN_ENCODERS and name != self.encoder.name
        return name in recorded

    def packer_of(self, packer_id: int) -> Encoder:
        """The packer a stored value's header byte names.

        :param packer_id: the header byte.
        :raises ~centidb.batches.PackerNotAllowed: if the store never
            numbered it, or the collection's records may not use it.
        :raises ~centidb.errors.UnknownEncoderError: if it is not
            registered in this session.
        """
        name = self.catalog.encoder_name(packer_id)
        if name is None:
            raise PackerNotAllowed(f'its header names packer id {packer_id}, which the '
                                   f'store never numbered')
        if not self.packer_allowed(name):
            raise PackerNotAllowed(f'its header names {name!r}, which is not a packer of '
                                   f'this collection')
        return self.catalog.packer(packer_id, self.name)

    def new_packer(self, packer: Encoder) -> bool:
        """True if `packer` must be recorded (:meth:`use_packer`) once records use it.

        Called before anything is written.

        :param packer: the packer a write is about to use.
        :raises ValueError: for a collection from before packers were
            recorded that may not use it (see :meth:`packer_allowed`).
        """
        if self.packer_allowed(packer.name):
            return False
        if 'packers' not in self.info:
            raise ValueError(f'collection {self.name!r} was created before collections '
                             f'recorded their packers; it cannot take {packer.name!r} '
                             f'as a packer')
        return True

    def use_packer(self, txn: Transaction, packer: Encoder) -> None:
        """Record in the metadata, in `txn`, that the records may use `packer`.

        :param txn: the write transaction that wrote records with it.
        :param packer: a packer :meth:`new_packer` accepted.
        """
        old = self.info
        self.info = dict(old, packers=sorted(set(old['packers']) | {packer.name}))
        self.catalog.save_collection_info(txn, self.name, self.info)
        txn.undo.append(lambda: setattr(self, 'info', old))

    def mark_batched(self, txn: Transaction) -> None:
        """Record in the metadata, in `txn`, that the collection holds batches.

        Written every time: an earlier batch() may have been rolled back.

        :param txn: the write transaction that made a batch.
        """
        self.info = dict(self.info, batched=True)
        self.catalog.save_collection_info(txn, self.name, self.info)
        self.batched = True

    def unbatched(self, etxn: EngineTransaction) -> bool:
        """True if, in `etxn`'s view, the collection holds no batch.

        Then each of its engine keys is one record. Read in `etxn`: another
        process may have batched records since the metadata was read.

        :param etxn: the :class:`~centidb.engines.EngineTransaction` read in.
        """
        if self.batched:
            return False
        info = self.catalog.collection_info(etxn, self.name)
        return info is not None and info['id'] == self.coll_id and not info.get('batched')
