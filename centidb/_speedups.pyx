# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, binding=False
"""The compiled key codec and the compiled kernel; a shell that includes one file each.

* ``_keylib.pxi``: the key codec's twin: ``packs``, ``unpacks``,
  ``unpacks_list``, ``count_groups``, mirroring ``centidb/keylib.py``, and
  the C functions ``pack_entry``, ``split_first`` and ``first_key_end``
  that the compiled record layer cimports (``_speedups.pxd``);
* ``_kernel.pxi``: the kernel, a few functions that take data and return
  data, each with a pure-Python form of the same name: ``may_nest_deeper``
  (of ``centidb/msgpackcodec.py``), and ``body_of`` and ``rejoined`` (of
  ``centidb/records/kernel.py``; cimported, as are ``seal`` and ``intact``).

Everything else that is compiled is compiled from its own source (the
modules in :data:`centidb.impl.PURE_MODE`). The pure-Python forms hold the
documentation and are the reference (public functions are compiled with
``binding=True`` so the chooser can copy their docstrings): both must
produce identical bytes and raise identical exception types. :data:`TWINS`
lists every Python name provided; ``centidb.impl`` alone chooses between
the two, so do not import this module directly. It imports only
``centidb.errors`` and ``centidb.keyformat``.

The format constants are copied into a ``cdef enum`` for speed;
``FORMAT_CONSTANTS`` exposes the copies so the parity test can compare them
with ``centidb.keyformat``.
"""

import datetime as _dt
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
TWINS = ('packs', 'unpacks', 'unpacks_list', 'count_groups', 'may_nest_deeper')

include "_keylib.pxi"
include "_kernel.pxi"
