# Compiled twins of centidb/collection.py: Collection.get and Collection.put,
# the entry points of the common read and write (a Python method's frame
# cost more than the read it starts). Included by _speedups.pyx after
# _records.pxi: they call the compiled reader and writer without a Python
# call. They read only the collection's public ``calls`` object (a
# centidb.records.access.CollectionCalls) and its public attributes.

TWINS += ('_collection_get', '_collection_put')


@cython.binding(True)
def _collection_get(self, key, default=None, *, txn=None, rec=False, encoded=False,
                    raw=False):
    """Mirrors centidb.collection._collection_get."""
    calls = self.calls
    if txn is not None and not (encoded or raw):
        reader = calls.reader
        if type(reader) is RecordReader:
            if rec:
                return (<RecordReader>reader).get_record(txn, key, default)
            return (<RecordReader>reader).get(txn, key, default)
        if rec:
            return reader.get_record(txn, key, default)
        return reader.get(txn, key, default)
    encoded = encoded or raw
    return calls.txns.run(txn, False, calls.records.read, as_key(key), default,
                          encoded, rec)


@cython.binding(True)
def _collection_put(self, rec, key=None, blind=False, txn=None, packer=None):
    """Mirrors centidb.collection._collection_put."""
    calls = self.calls
    if txn is None:
        txn = calls.txns.current_write()
        if txn is None:
            if packer is not None:
                calls.register_packer(packer)
            with calls.txns.begin(True) as own:
                if packer is None:
                    record = calls.writer.write(own, rec, key, blind)
                    if record is not None:
                        return record
                return calls.put_general(own, rec, key, blind, packer)
    if packer is None:
        writer = calls.writer
        if type(writer) is RecordWriter:
            record = (<RecordWriter>writer).write(txn, rec, key, blind)
        else:
            record = writer.write(txn, rec, key, blind)
        if record is not None:
            return record
    return calls.put_general(txn, rec, key, blind, packer)
