# Compiled twin of centidb/query.py: count_groups, the loop of group_counts().
# Included by _speedups.pyx after _keylib.pxi, whose decoder it uses. The
# engine keys after a group's first are compared with the group's bound in
# place (memcmp); the bound is the first key's own bytes up to the group's
# last element, which are packs(group, prefix) since decoding accepts only
# the canonical encoding. Of a group's first key, only the group's elements
# are decoded; the rest is checked in place as the decoder would check it.

from cpython.list cimport PyList_AsTuple

TWINS += ('count_groups',)


cdef Py_ssize_t decode_group(bytes key, bytes prefix, Py_ssize_t size, Py_ssize_t parts,
                             list elements) except -2:
    """Decode `key` as unpacks_list does, keeping the first `size` elements
    of its first key in `elements`; return where those elements end, or -1
    if `key` is corrupt or does not pack `parts` keys."""
    cdef Reader r
    cdef Py_ssize_t end = -1, nkeys = 1, count = 0
    try:
        start_reader(&r, key, prefix)
        while r.pos < r.n:
            if r.s[r.pos] == KEY_SEP:
                if end < 0:
                    end = r.pos
                nkeys += 1
                r.pos += 1
                continue
            if nkeys == 1 and count < size:
                elements.append(read_element(&r))
                count += 1
                if count == size:
                    end = r.pos
            else:
                skip_element(&r)
    except CorruptKeyError:
        return -1
    if nkeys != parts:
        return -1
    return r.n if end < 0 else end


cdef inline bint in_group(bytes key, const char *first, Py_ssize_t first_len,
                          unsigned char cap, bint reverse) noexcept:
    """``key >= first`` if `reverse`, else ``key < first + bytes([cap])``."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(key)
    cdef const char *k = PyBytes_AS_STRING(key)
    cdef int c = memcmp(k, first, n if n < first_len else first_len)
    if reverse:
        return c > 0 or (c == 0 and n >= first_len)
    if c != 0:
        return c < 0
    return n <= first_len or <unsigned char>k[first_len] < cap


@cython.binding(True)
def count_groups(chunks, bytes prefix, Py_ssize_t size, bint reverse, max, Py_ssize_t parts,
                 group_of):
    """Mirrors centidb.query.count_groups."""
    cdef list groups = []
    cdef list elements
    cdef Py_ssize_t limit = -1 if max is None else max
    cdef Py_ssize_t n = 0, first_len = 0
    cdef unsigned char cap = 0
    cdef bytes head = None      # the group's first engine key; its bound starts it
    cdef bytes key
    cdef object group = None
    if limit == 0:
        return groups
    for chunk in chunks:
        for item in chunk:
            if type(item) is not bytes:
                raise TypeError(f'an engine key must be bytes, not {type(item).__name__!r}')
            key = <bytes>item
            if head is not None and in_group(key, PyBytes_AS_STRING(head), first_len, cap,
                                             reverse):
                n += 1
                continue
            if head is not None:
                groups.append((group, n))
                if len(groups) == limit:
                    return groups
            elements = []
            first_len = decode_group(key, prefix, size, parts, elements)
            if first_len >= 0:
                group = PyList_AsTuple(elements)
                head = key
                cap = 0x80 if len(elements) == size else KEY_SEP + 1
            else:
                # Corrupt: the caller's decoder raises its error (or, if it
                # accepts the key after all, gives the group, bounded as the
                # pure code bounds it).
                group = group_of(key, size)
                head = pack_entry(group, prefix, b'')
                first_len = PyBytes_GET_SIZE(head)
                cap = 0x80 if len(group) == size else KEY_SEP + 1
            n = 1
    if head is not None:
        groups.append((group, n))
    return groups
