# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, binding=False
"""Compiled twins of centidb's hot paths; a shell that includes one file per layer.

* ``_keylib.pxi``: ``packs``, ``unpacks``, ``unpacks_list``, ``count_groups``, mirroring
  ``centidb/keylib.py``;
* ``_encodings.pxi``: ``msgpack_decoder`` and ``msgpack_encoder``, mirroring ``centidb/encodings.py``;
* ``_engines.pxi``: ``FastCalls``, which every engine transaction holds as
  ``fast``, mirroring ``centidb/engines/fastcalls.py``;
* ``_records.pxi``: ``index_entries``, ``Record``, ``RecordWriter`` and
  ``RecordReader``, mirroring ``centidb/records/record.py``;
* ``_collection.pxi``, ``_index.pxi``: the entry points of
  ``Collection.get``/``put`` and ``Index.get``.

The pure-Python modules hold the documentation and are the reference (public
functions are compiled with ``binding=True`` so the chooser can copy their
docstrings): both must produce identical bytes and raise identical exception
types. :data:`TWINS` lists every name provided; ``centidb.impl`` alone
chooses between the two, so do not import this module directly. It imports
only ``centidb.errors`` and ``centidb.keyformat``: the classes it works for
pass in everything else.

The format constants are copied into a ``cdef enum`` for speed;
``FORMAT_CONSTANTS`` exposes the copies so the parity test can compare them
with ``centidb.keyformat``.
"""

import datetime as _dt
import threading as _threading
import uuid as _uuid
from zlib import crc32 as _crc32

cimport cython

from centidb.errors import CentiError, CorruptKeyError, KeyEncodingError, UnsupportedKeyTypeError
from centidb.keyformat import Desc

from cpython.list cimport PyList_AsTuple
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.long cimport (
    PyLong_AsLongLongAndOverflow, PyLong_AsUnsignedLong, PyLong_FromLongLong,
    PyLong_FromUnsignedLongLong,
)
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from cpython.pythread cimport PyThread_get_thread_ident
from libc.math cimport frexp, ldexp, isnan, isinf, signbit, floor
from libc.stdint cimport uint64_t, int64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memcmp, memset

cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object)
    void* PyUnicode_DATA(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t*) except NULL
    void PyObject_GC_UnTrack(void *)

#: The names this module provides, each the twin of the pure-Python name.
TWINS = ('packs', 'unpacks', 'unpacks_list', 'count_groups', 'msgpack_decoder',
         'msgpack_encoder')

include "_keylib.pxi"
include "_encodings.pxi"


# --- the record layer's kernel -------------------------------------------------
# Functions of bytes that pure Python cannot write without a slice object;
# centidb/records/record.py cimports them (_speedups.pxd) and holds their
# pure-Python reference.

cdef bytes body_of(bytes stored, Py_ssize_t trailer):
    """Mirrors centidb.records.record.body_of."""
    return PyBytes_FromStringAndSize(PyBytes_AS_STRING(stored) + 1,
                                     PyBytes_GET_SIZE(stored) - 1 - trailer)
