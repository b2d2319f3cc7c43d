"""Declarative models: classes that declare a collection's fields, key and indexes.

The package holds three modules, lowest first: :mod:`centidb.models.fields`
(what a field declaration means and the checks of its values' types),
:mod:`centidb.models.index` (index declarations and the index queries that
return instances) and :mod:`centidb.models.model` (:class:`Model`: binding
to a store, saving, deleting and reading). Models are introduced in
``docs/models.rst``; the names below are re-exported here.
"""

from centidb.models.fields import Field, field
from centidb.models.index import DeclaredIndex, ModelIndex, index_on
from centidb.models.model import Model

__all__ = ['Model', 'Field', 'field', 'index_on', 'DeclaredIndex', 'ModelIndex']
