"""The old module paths, and ``python -m centidb``.

``centidb.cli_commands``, ``cli_common`` and ``cli_dump`` are aliases of the
modules of :mod:`centidb.cli`; ``centidb.model``, ``modelindex`` and
``fields`` of the modules of :mod:`centidb.models`; ``centidb.verify`` of
:mod:`centidb.store.verify`. Each gives the same
objects as its new home, under the same ``__all__`` (``cli_common`` adds the
catalog's ``read_metadata`` and ``CollectionMeta``). ``centidb.__main__``
runs the command line of :mod:`centidb.cli`.
"""

import importlib
import runpy
import sys

import pytest

from centidb import catalog

#: Alias module -> its new home.
ALIASES = {
    'centidb.cli_commands': 'centidb.cli.commands',
    'centidb.cli_common': 'centidb.cli.common',
    'centidb.cli_dump': 'centidb.cli.dump',
    'centidb.model': 'centidb.models.model',
    'centidb.modelindex': 'centidb.models.index',
    'centidb.fields': 'centidb.models.fields',
    'centidb.verify': 'centidb.store.verify',
}


@pytest.mark.parametrize('alias, home', sorted(ALIASES.items()))
def test_the_old_module_paths_give_the_same_objects(alias, home):
    old, new = importlib.import_module(alias), importlib.import_module(home)
    assert set(new.__all__) <= set(old.__all__)
    assert all(getattr(old, name) is getattr(new, name) for name in new.__all__)
    assert set(old.__all__) - set(new.__all__) <= {'read_metadata', 'CollectionMeta'}


def test_cli_common_gives_the_catalogs_reader():
    from centidb import cli_common
    assert (cli_common.read_metadata, cli_common.CollectionMeta) == (
        catalog.read_metadata, catalog.CollectionMeta)


def test_every_alias_module_is_listed():
    """A module whose docstring says it is an alias is tested here."""
    import pathlib
    package = pathlib.Path(catalog.__file__).parent
    found = {f'centidb.{path.stem}' for path in package.glob('*.py')
             if path.read_text().startswith('"""Alias of ')}
    assert found == set(ALIASES)


def test_python_m_centidb_runs_the_command_line(monkeypatch, capsys):
    monkeypatch.setattr(sys, 'argv', ['centidb', '--help'])
    monkeypatch.delitem(sys.modules, 'centidb.__main__', raising=False)
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module('centidb', run_name='__main__')
    assert exit_info.value.code == 0
    assert 'usage: centidb' in capsys.readouterr().out
