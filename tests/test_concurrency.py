"""Several processes on one LMDB store: metadata stays shared truth, nothing is lost.

Each worker is a separate Python process started at the same moment on the
same path (the first ones race to create the store). Every wait is bounded.
"""

import json
import subprocess
import sys
import textwrap

import pytest

import centidb
from centidb.encodings import Encoder

WORKERS = 4
RECORDS = 60
TIMEOUT = 120

# Runs in each worker: argv = path, worker number.
WORKER = textwrap.dedent('''
    import json, sys
    import centidb
    from centidb.encodings import Encoder

    path, me = sys.argv[1], int(sys.argv[2])
    store = centidb.open('LmdbEngine', path=path)
    rev = store.add_encoder(Encoder('rev', lambda b: b[::-1], lambda b: b[::-1]))
    shared = store.collection('shared', key_func=lambda r: (r['who'], r['n']))
    by_w = shared.add_index('w', lambda r: r['w'])
    shared.add_index('group', lambda r: (r['who'], r['n'] %% 7))
    own = store.collection(f'own{me}')
    own.add_index('n', lambda r: r['n'])
    for batch in range(0, %(records)d, 10):
        with store.begin(write=True) as txn:
            for n in range(batch, batch + 10):
                rec = {'who': me, 'n': n, 'w': f'{me}-{n}'}
                shared.put(rec, txn=txn, packer=rev if n %% 3 == 0 else None)
                own.put({'n': n}, txn=txn)
    print(json.dumps({'w': by_w.index_id, 'own0': store.collection('own0').coll_id}))
    store.close()
''') % {'records': RECORDS}


def run_workers(path, count=WORKERS):
    procs = [subprocess.Popen([sys.executable, '-c', WORKER, path, str(me)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for me in range(count)]
    results = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
            pytest.fail('a worker did not finish in time')
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    return results


def test_processes_creating_metadata_and_writing_at_once(tmp_path):
    path = str(tmp_path / 'db.lmdb')
    results = run_workers(path)
    # One id per index and collection, whatever process numbered it; one
    # per encoder too, or the records stored with 'rev' would not decode.
    assert len({json.dumps(result, sort_keys=True) for result in results}) == 1
    with centidb.open('LmdbEngine', path=path) as store:
        store.add_encoder(Encoder('rev', lambda b: b[::-1], lambda b: b[::-1]))
        shared = store.collection('shared', key_func=lambda r: (r['who'], r['n']))
        by_w = shared.add_index('w', lambda r: r['w'])
        shared.add_index('group', lambda r: (r['who'], r['n'] % 7))
        for me in range(WORKERS):
            own = store.collection(f'own{me}')
            own.add_index('n', lambda r: r['n'])
            assert [rec['n'] for rec in own.values()] == list(range(RECORDS))
        assert shared.count() == WORKERS * RECORDS
        for me in range(WORKERS):
            for n in range(RECORDS):
                assert by_w.get(f'{me}-{n}') == {'who': me, 'n': n, 'w': f'{me}-{n}'}
        # Every process's records are in every index: verify() checks the
        # added indexes both ways.
        assert store.verify() == []


def test_a_writer_sees_an_index_another_process_added(tmp_path):
    path = str(tmp_path / 'db.lmdb')
    with centidb.open('LmdbEngine', path=path) as store:
        coll = store.collection('c', key_func=lambda r: r['k'])
        coll.put({'k': 1, 'w': 'A'})
        script = textwrap.dedent('''
            import sys, centidb
            with centidb.open('LmdbEngine', path=sys.argv[1]) as store:
                coll = store.collection('c', key_func=lambda r: r['k'])
                coll.add_index('w', lambda r: r['w'])
                coll.put({'k': 2, 'w': 'B'})
        ''')
        subprocess.run([sys.executable, '-c', script, path], check=True, timeout=TIMEOUT)
        # This process has not added 'w': its next write must not leave it stale.
        with pytest.raises(centidb.errors.IndexNotAddedError, match="'w'"):
            coll.put({'k': 3, 'w': 'C'})
        w = coll.add_index('w', lambda r: r['w'])     # binds to the stored index
        coll.put({'k': 3, 'w': 'C'})
        assert [w.get(x)['k'] for x in 'ABC'] == [1, 2, 3]
        assert store.verify() == []
