"""Follow one put call by call and list the modules it enters, as a stack would show them.

Usage: CENTIDB_NO_SPEEDUPS=1 python dev/put_walk.py [ENGINE]   (default LmdbEngine)

A put of a record with two indexes into a collection that already holds it
(so the old version's entries are read and compared) is traced with
``sys.setprofile`` in pure Python: every Python function call made while it
runs is noted with its module (a package's modules count as the package, as
``tests/test_layers.py`` ranks them). Prints the call tree's module path of
every call and then, for each module, how many times the put *entered* it:
a call from another module into it. A module entered again while an outer
call of it is still running (the stack goes A -> B -> A) is listed as a
re-entry: a layer calling back up.
"""

import os
import sys
import tempfile

import centidb

PACKAGES = ('centidb.cli', 'centidb.models', 'centidb.records', 'centidb.store', 'centidb.engines')


def unit(module):
    """The module's name, or its package's name for the packages ranked as a whole."""
    for package in PACKAGES:
        if module == package or module.startswith(package + '.'):
            return package
    return module


def trace(call):
    """Run ``call()`` and return the list of (depth, module) of each Python call into centidb."""
    events = []
    stack = []

    def profile(frame, event, arg):
        if event == 'call':
            module = unit(frame.f_globals.get('__name__', '?'))
            stack.append(module)
            if module.startswith('centidb'):
                events.append((len(stack), module, frame.f_code.co_name, tuple(stack)))
        elif event == 'return' and stack:
            stack.pop()

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return events


def main():
    engine_name = sys.argv[1] if len(sys.argv) > 1 else 'LmdbEngine'
    with tempfile.TemporaryDirectory() as tmp:
        options = {} if engine_name == 'MemoryEngine' else {'path': os.path.join(tmp, 'db')}
        store = centidb.open(engine_name, **options)
        people = store.collection('people', key_func=lambda p: p['name'])
        people.add_index('city', lambda p: p['city'])
        people.add_index('age', lambda p: p['age'])
        people.put({'name': 'ann', 'city': 'Leeds', 'age': 30})
        events = trace(lambda: people.put({'name': 'ann', 'city': 'York', 'age': 31}))
        store.close()
    entered, reentries = {}, []
    for depth, module, name, stack in events:
        caller = stack[-2] if len(stack) > 1 else None
        if caller != module:
            entered[module] = entered.get(module, 0) + 1
            if module in stack[:-1]:
                reentries.append(' > '.join(stack) + f' ({name})')
        print('  ' * (depth - 1) + f'{module}.{name}')
    print()
    print('module,entries')
    for module, count in entered.items():
        print(f'{module},{count}')
    print(f're-entries (a module entered while an outer call of it runs): {len(reentries)}')
    for line in reentries:
        print('  ' + line)


if __name__ == '__main__':
    main()
