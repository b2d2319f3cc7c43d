# Compiled twins of centidb/collection.py: Collection.get and Collection.put,
# the entry points of the common read and write (a Python method's frame
# cost more than the read it starts). Included by _speedups.pyx after
# _records.pxi: they call the compiled reader and writer without a Python call.

TWINS += ('_collection_get', '_collection_put')


@cython.binding(True)
def _collection_get(self, key, default=None, *, txn=None, rec=False, encoded=False,
                    raw=False):
    """Mirrors centidb.collection._collection_get."""
    if txn is not None and not (encoded or raw):
        reader = self._reader
        if type(reader) is RecordReader:
            if rec:
                return (<RecordReader>reader).get_record(txn, key, default)
            return (<RecordReader>reader).get(txn, key, default)
        if rec:
            return reader.get_record(txn, key, default)
        return reader.get(txn, key, default)
    encoded = encoded or raw
    return self._txns.run(txn, False, self._records.read, as_key(key), default,
                          encoded, rec)


@cython.binding(True)
def _collection_put(self, rec, key=None, blind=False, txn=None, packer=None):
    """Mirrors centidb.collection._collection_put."""
    if txn is None:
        txn = self._txns.current_write()
        if txn is None:
            if packer is not None:
                self._catalog.encoder_id(packer)
            with self._txns.begin(True) as own:
                if packer is None:
                    record = self._writer.write(own, rec, key, blind)
                    if record is not None:
                        return record
                return self._put_general(own, rec, key, blind, packer)
    if packer is None:
        writer = self._writer
        if type(writer) is RecordWriter:
            record = (<RecordWriter>writer).write(txn, rec, key, blind)
        else:
            record = writer.write(txn, rec, key, blind)
        if record is not None:
            return record
    return self._put_general(txn, rec, key, blind, packer)
