"""Opening a fresh store on each engine, for the document-layer tests."""

import centidb

ENGINE_NAMES = ['ListEngine', 'PlyvelEngine', 'LmdbEngine']


def open_store(name, directory):
    """Open (creating on first use) a store of engine `name` under `directory`."""
    if name == 'ListEngine':
        return centidb.open('ListEngine')
    if name == 'PlyvelEngine':
        return centidb.open('PlyvelEngine', name=str(directory / 'db.ldb'),
                            create_if_missing=True)
    return centidb.open('LmdbEngine', path=str(directory / 'db.lmdb'))
