# Compiled twin of centidb/index.py: Index.get, the entry point of a read by
# index tuple (a Python method's frame cost more than the read it starts).
# Included by _speedups.pyx after _records.pxi: it calls the compiled reader
# without a Python call.

TWINS += ('_index_get',)


@cython.binding(True)
def _index_get(self, tup, default=None, *, rec=False, txn=None):
    """Mirrors centidb.index._index_get."""
    if rec:
        return self._txns.run(txn, False, self._get_many_in, [as_key(tup)], default,
                              True)[0]
    if txn is None:
        return self._txns.run(None, False, self._get_in, tup, default)
    coll, prefix, name = self._get_args
    reader = coll._reader
    if type(reader) is RecordReader:
        return (<RecordReader>reader).index_get(txn, prefix, name, tup, default)
    return reader.index_get(txn, prefix, name, tup, default)
