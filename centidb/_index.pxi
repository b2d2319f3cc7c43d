# Compiled twin of centidb/index.py: Index.get, the entry point of a read by
# index tuple (a Python method's frame cost more than the read it starts).
# Included by _speedups.pyx after _records.pxi: it calls the compiled reader
# without a Python call. It reads only the index's public ``get_args`` and ``get_many``.

TWINS += ('_index_get',)


@cython.binding(True)
def _index_get(self, tup, default=None, *, rec=False, txn=None):
    """Mirrors centidb.index._index_get."""
    if rec or txn is None:
        return self.get_many((tup,), default, rec=rec, txn=txn)[0]
    calls, prefix, name = self.get_args
    reader = calls.reader
    if type(reader) is RecordReader:
        return (<RecordReader>reader).index_get(txn, prefix, name, tup, default)
    return reader.index_get(txn, prefix, name, tup, default)
