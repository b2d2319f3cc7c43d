# Twin of centidb/keylib.py: the key codec. Included by _speedups.pyx.

# Copies of centidb.keyformat (on-disk format; checked by the parity test).
cdef enum:
    KEY_SEP = 0x01
    TAG_NONE = 0x05
    TAG_NEG_INF = 0x10
    TAG_NEG_BIG = 0x11
    TAG_NEG_ONE = 0x1A
    TAG_ZERO = 0x1B
    TAG_POS_BIG = 0x24
    TAG_POS_INF = 0x25
    TAG_NAN = 0x26
    TAG_BYTES = 0x30
    TAG_STR = 0x31
    TAG_DATE = 0x37
    TAG_DATETIME = 0x38
    TAG_UUID = 0x39
    TAG_DESC = 0x40
    DESC_END = 0xFF
    INT_SMALL_MAX_BYTES = 8
    SUFFIX_BOOL = 0x80
    SUFFIX_NEG_ZERO = 0x81
    SUFFIX_FLOAT = 0x82
    DT_NAIVE = 0x00
    DT_AWARE = 0x01
    DATE_BYTES = 3

DT_INSTANT_BIAS_ = 1 << 63
DT_OFFSET_BIAS_ = 1 << 39

FORMAT_CONSTANTS = {
    'KEY_SEP': KEY_SEP, 'TAG_NONE': TAG_NONE, 'TAG_NEG_INF': TAG_NEG_INF,
    'TAG_NEG_BIG': TAG_NEG_BIG, 'TAG_NEG_ONE': TAG_NEG_ONE, 'TAG_ZERO': TAG_ZERO,
    'TAG_POS_BIG': TAG_POS_BIG, 'TAG_POS_INF': TAG_POS_INF, 'TAG_NAN': TAG_NAN,
    'TAG_BYTES': TAG_BYTES, 'TAG_STR': TAG_STR, 'TAG_DATE': TAG_DATE,
    'TAG_DATETIME': TAG_DATETIME,
    'TAG_UUID': TAG_UUID, 'TAG_DESC': TAG_DESC, 'DESC_END': DESC_END,
    'INT_SMALL_MAX_BYTES': INT_SMALL_MAX_BYTES, 'SUFFIX_BOOL': SUFFIX_BOOL,
    'SUFFIX_NEG_ZERO': SUFFIX_NEG_ZERO, 'SUFFIX_FLOAT': SUFFIX_FLOAT,
    'DT_NAIVE': DT_NAIVE, 'DT_AWARE': DT_AWARE, 'DATE_BYTES': DATE_BYTES,
    'DT_INSTANT_BIAS': DT_INSTANT_BIAS_, 'DT_OFFSET_BIAS': DT_OFFSET_BIAS_,
}

cdef bytes _INVERT = bytes(range(255, -1, -1))
cdef bytes _ENTRY_SEP = bytes([KEY_SEP])
cdef object _EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
cdef object _MAX_ORDINAL = _dt.date.max.toordinal()
cdef long _MAX_DATE_ORDINAL = _dt.date.max.toordinal()
cdef object _US_PER_DAY = 86400 * 1000000
cdef object _FLOAT_EXACT_LIMIT = 2 ** 53
cdef enum:
    MAX_FRACTION_GROUPS = 154
cdef str _SUPPORTED = ('None, bool, int, float, bytes, str, uuid.UUID, '
                       'datetime.date, datetime.datetime, centidb.keylib.Desc')

cdef enum:
    STACK_SIZE = 256


# --- output buffer -------------------------------------------------------------

cdef struct Buf:
    unsigned char *p
    Py_ssize_t n
    Py_ssize_t cap
    bint heap


cdef inline void buf_init(Buf *b, unsigned char *stack, Py_ssize_t size) noexcept:
    """Start an empty buffer in caller-provided stack space."""
    b.p = stack
    b.n = 0
    b.cap = size
    b.heap = False


cdef int buf_reserve(Buf *b, Py_ssize_t extra) except -1:
    cdef Py_ssize_t need = b.n + extra
    cdef Py_ssize_t cap
    cdef unsigned char *p
    if need <= b.cap:
        return 0
    cap = b.cap * 2
    if cap < need:
        cap = need
    if b.heap:
        p = <unsigned char *>realloc(b.p, cap)
    else:
        p = <unsigned char *>malloc(cap)
        if p != NULL:
            memcpy(p, b.p, b.n)
    if p == NULL:
        raise MemoryError()
    b.p = p
    b.cap = cap
    b.heap = True
    return 0


cdef inline int put1(Buf *b, unsigned char c) except -1:
    if b.n >= b.cap:
        buf_reserve(b, 1)
    b.p[b.n] = c
    b.n += 1
    return 0


cdef int putn(Buf *b, const unsigned char *s, Py_ssize_t n) except -1:
    buf_reserve(b, n)
    memcpy(b.p + b.n, s, n)
    b.n += n
    return 0


# --- encoding ------------------------------------------------------------------

cdef int put7(Buf *b, const unsigned char *s, Py_ssize_t n) except -1:
    """Mirrors keylib._pack7."""
    cdef Py_ssize_t i
    cdef unsigned int acc = 0
    cdef int bits = 0
    cdef unsigned char *out
    buf_reserve(b, (8 * n + 6) // 7)
    out = b.p + b.n
    for i in range(n):
        acc = ((acc << 8) | s[i]) & 0x7FFF
        bits += 8
        while bits >= 7:
            bits -= 7
            out[0] = 0x80 | ((acc >> bits) & 0x7F)
            out += 1
    if bits:
        out[0] = 0x80 | ((acc << (7 - bits)) & 0x7F)
        out += 1
    b.n = out - b.p
    return 0


cdef int put_uint_be(Buf *b, uint64_t v, int length, unsigned char mask) except -1:
    cdef int i
    buf_reserve(b, length)
    for i in range(length):
        b.p[b.n + i] = <unsigned char>((v >> (8 * (length - 1 - i))) & 0xFF) ^ mask
    b.n += length
    return 0


cdef inline int byte_length(uint64_t v) noexcept:
    cdef int n = 0
    while v:
        n += 1
        v >>= 8
    return n


cdef int put_int64(Buf *b, int64_t v) except -1:
    """Mirrors keylib._encode_int_part for values that fit in 64 bits."""
    cdef uint64_t magnitude
    cdef int length
    if v >= 0:
        magnitude = <uint64_t>v
        length = byte_length(magnitude)
        put1(b, TAG_ZERO + length)
        put_uint_be(b, magnitude, length, 0)
    else:
        magnitude = <uint64_t>(-(v + 1))
        length = byte_length(magnitude)
        put1(b, TAG_NEG_ONE - length)
        put_uint_be(b, magnitude, length, 0xFF)
    return 0


cdef int put_bigint(Buf *b, object n) except -1:
    """Mirrors keylib._encode_int_part for any int."""
    cdef bytes magnitude_bytes, length_bytes
    cdef int overflow = 0
    cdef long long small = PyLong_AsLongLongAndOverflow(n, &overflow)
    if not overflow:
        return put_int64(b, small)
    negative = n < 0
    magnitude = -n - 1 if negative else n
    length = (magnitude.bit_length() + 7) >> 3
    if length <= INT_SMALL_MAX_BYTES:
        put1(b, (TAG_NEG_ONE - length) if negative else (TAG_ZERO + length))
    else:
        length_bytes = length.to_bytes((length.bit_length() + 7) >> 3, 'big')
        if negative:
            put1(b, TAG_NEG_BIG)
            put1(b, 0xFF - len(length_bytes))
            length_bytes = length_bytes.translate(_INVERT)
        else:
            put1(b, TAG_POS_BIG)
            put1(b, len(length_bytes))
        putn(b, <const unsigned char *>PyBytes_AS_STRING(length_bytes), len(length_bytes))
    magnitude_bytes = magnitude.to_bytes(length, 'big')
    if negative:
        magnitude_bytes = magnitude_bytes.translate(_INVERT)
    putn(b, <const unsigned char *>PyBytes_AS_STRING(magnitude_bytes), length)
    return 0


cdef int put_double(Buf *b, double d) except -1:
    """Mirrors keylib._encode_float."""
    cdef int exponent, nbits, ngroups, g, t, j, shift
    cdef double mantissa
    cdef uint64_t m, fraction, above
    cdef unsigned char group
    cdef bint negative
    if isnan(d):
        return put1(b, TAG_NAN)
    if isinf(d):
        return put1(b, TAG_POS_INF if d > 0 else TAG_NEG_INF)
    if d == 0.0:
        put1(b, TAG_ZERO)
        return put1(b, SUFFIX_NEG_ZERO if signbit(d) else SUFFIX_FLOAT)
    negative = d < 0
    mantissa = frexp(-d if negative else d, &exponent)
    # |d| == m * 2**-nbits exactly, with m odd when nbits > 0.
    m = <uint64_t>ldexp(mantissa, 53)
    nbits = 53 - exponent
    while nbits > 0 and not (m & 1):
        m >>= 1
        nbits -= 1
    if nbits <= 0:
        if -nbits < 10 and m < (<uint64_t>1 << 53):
            put_int64(b, -(<int64_t>(m << -nbits)) if negative else <int64_t>(m << -nbits))
        else:
            put_bigint(b, int(d))
        return put1(b, SUFFIX_FLOAT)
    above = (m >> nbits) if nbits < 64 else 0
    fraction = m & ((<uint64_t>1 << nbits) - 1) if nbits < 64 else m
    if negative:
        # floor(-x) == -(int part) - 1; the fraction becomes 1 - fraction,
        # whose bits are those of (fraction - 1) inverted within nbits.
        put_int64(b, -<int64_t>above - 1)
        fraction -= 1
    else:
        put_int64(b, <int64_t>above)
    put1(b, SUFFIX_FLOAT)
    ngroups = (nbits + 6) // 7
    buf_reserve(b, ngroups)
    for g in range(ngroups):
        group = 0
        for t in range(7):
            j = nbits - 1 - (7 * g + t)
            group <<= 1
            if j >= 0:
                if j < 64:
                    group |= (fraction >> j) & 1
                if negative:
                    group ^= 1
        b.p[b.n] = 0x80 | group
        b.n += 1
    return 0


cdef int put_datetime(Buf *b, object x) except -1:
    """Mirrors keylib._encode_datetime."""
    cdef bytes chunk
    wall_us = (((x.toordinal() - _EPOCH_ORDINAL) * 86400
                + x.hour * 3600 + x.minute * 60 + x.second) * 1000000
               + x.microsecond)
    offset = x.utcoffset()
    put1(b, TAG_DATETIME)
    if offset is None:
        chunk = (wall_us + DT_INSTANT_BIAS_).to_bytes(8, 'big')
        putn(b, <const unsigned char *>PyBytes_AS_STRING(chunk), 8)
        put1(b, DT_NAIVE)
    else:
        offset_us = ((offset.days * 86400 + offset.seconds) * 1000000
                     + offset.microseconds)
        if not -_US_PER_DAY < offset_us < _US_PER_DAY:
            raise KeyEncodingError(f'UTC offset {offset!r} of {x!r} is not within a day')
        chunk = (wall_us - offset_us + DT_INSTANT_BIAS_).to_bytes(8, 'big')
        putn(b, <const unsigned char *>PyBytes_AS_STRING(chunk), 8)
        put1(b, DT_AWARE)
        chunk = (offset_us + DT_OFFSET_BIAS_).to_bytes(5, 'big')
        putn(b, <const unsigned char *>PyBytes_AS_STRING(chunk), 5)
    return 0


cdef int put_str(Buf *b, object x) except -1:
    cdef Py_ssize_t size
    cdef const char *utf8
    cdef bytes encoded
    put1(b, TAG_STR)
    if PyUnicode_IS_COMPACT_ASCII(x):
        return put7(b, <const unsigned char *>PyUnicode_DATA(x), PyUnicode_GET_LENGTH(x))
    try:
        utf8 = PyUnicode_AsUTF8AndSize(x, &size)
    except UnicodeEncodeError:
        encoded = x.encode('utf-8', 'surrogatepass')
        return put7(b, <const unsigned char *>PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded))
    return put7(b, <const unsigned char *>utf8, size)


cdef int put_element(Buf *b, object x) except -1:
    """Mirrors keylib._encode_element."""
    cdef type kind = type(x)
    cdef int overflow = 0
    cdef long long small
    cdef Py_ssize_t start, i
    if kind is str:
        return put_str(b, x)
    if kind is int:
        small = PyLong_AsLongLongAndOverflow(x, &overflow)
        if overflow:
            return put_bigint(b, x)
        return put_int64(b, small)
    if x is None:
        return put1(b, TAG_NONE)
    if kind is bool:
        put_int64(b, 1 if x else 0)
        return put1(b, SUFFIX_BOOL)
    if kind is float:
        return put_double(b, PyFloat_AS_DOUBLE(x))
    if kind is bytes:
        put1(b, TAG_BYTES)
        return put7(b, <const unsigned char *>PyBytes_AS_STRING(x), PyBytes_GET_SIZE(x))
    if kind is Desc:
        value = (<object>x).value
        if isinstance(value, Desc):
            raise UnsupportedKeyTypeError('Desc cannot wrap another Desc')
        put1(b, TAG_DESC)
        start = b.n
        put_element(b, value)
        for i in range(start, b.n):
            b.p[i] ^= 0xFF
        return put1(b, DESC_END)
    if isinstance(x, _dt.datetime):
        return put_datetime(b, x)
    if isinstance(x, _dt.date):
        put1(b, TAG_DATE)
        return put_uint_be(b, <uint64_t>_dt.date.toordinal(x), DATE_BYTES, 0)
    if isinstance(x, _uuid.UUID):
        raw = x.bytes
        if type(raw) is not bytes or PyBytes_GET_SIZE(raw) != 16:
            raise KeyEncodingError(f'{kind.__name__}.bytes must be 16 bytes, not {raw!r:.40}')
        put1(b, TAG_UUID)
        return putn(b, <const unsigned char *>PyBytes_AS_STRING(raw), 16)
    # Mirrors keylib: the base type's own conversion, whatever the subclass overrides.
    if isinstance(x, int):
        return put_element(b, int.__int__(x))
    if isinstance(x, float):
        return put_element(b, float.__float__(x))
    if isinstance(x, str):
        return put_element(b, str.__str__(x))
    if isinstance(x, bytes):
        return put_element(b, bytes(memoryview(x)))
    raise UnsupportedKeyTypeError(
        f'cannot encode key element of type {kind.__name__!r} '
        f'({x!r:.60}); supported types: {_SUPPORTED}')


cdef inline int check_prefix(object prefix) except -1:
    if type(prefix) is not bytes:
        raise TypeError(f'prefix must be bytes, not {type(prefix).__name__!r}')
    return 0


cdef bytes pack_entry(object value, bytes prefix, bytes tail):
    """Mirrors keylib.pack_entry (for the compiled record layer)."""
    cdef unsigned char stack[STACK_SIZE]
    cdef Buf b
    check_prefix(prefix)
    if tail is None:
        raise TypeError("can't concat NoneType to bytes")
    buf_init(&b, stack, STACK_SIZE)
    try:
        putn(&b, <const unsigned char *>PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix))
        if isinstance(value, tuple):
            for element in <tuple>value:
                put_element(&b, element)
        else:
            put_element(&b, value)
        putn(&b, <const unsigned char *>PyBytes_AS_STRING(tail), PyBytes_GET_SIZE(tail))
        return PyBytes_FromStringAndSize(<char *>b.p, b.n)
    finally:
        if b.heap:
            free(b.p)


@cython.binding(True)
def packs(key, prefix=b''):
    """Mirrors keylib.packs."""
    cdef unsigned char stack[STACK_SIZE]
    cdef Buf b
    cdef Py_ssize_t i
    check_prefix(prefix)
    if type(key) is not list:
        return pack_entry(key, prefix, b'')
    if not key:
        raise ValueError('packs() needs at least one key in a list of keys')
    buf_init(&b, stack, STACK_SIZE)
    try:
        putn(&b, <const unsigned char *>PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix))
        for i, one_key in enumerate(<list>key):
            if i:
                put1(&b, KEY_SEP)
            if isinstance(one_key, tuple):
                for element in <tuple>one_key:
                    put_element(&b, element)
            else:
                put_element(&b, one_key)
        return PyBytes_FromStringAndSize(<char *>b.p, b.n)
    finally:
        if b.heap:
            free(b.p)


# --- decoding ------------------------------------------------------------------

cdef object corrupt(str message, Py_ssize_t pos):
    return CorruptKeyError(f'invalid key encoding: {message} at offset {pos}')


cdef struct Reader:
    const unsigned char *s
    Py_ssize_t n
    Py_ssize_t pos
    unsigned char mask      # 0xFF inside a Desc element, else 0


cdef inline int need(Reader *r, Py_ssize_t size) except -1:
    if r.n - r.pos < size:
        raise corrupt(f'truncated: {size} bytes needed, {r.n - r.pos} left', r.pos)
    return 0


cdef inline unsigned char at(Reader *r, Py_ssize_t i) noexcept:
    return r.s[i] ^ r.mask


cdef bytes take(Reader *r, Py_ssize_t size):
    cdef bytes chunk
    cdef Py_ssize_t i
    cdef unsigned char *p
    need(r, size)
    # Allocate fresh (never a cached one-byte object) before writing into it.
    chunk = PyBytes_FromStringAndSize(NULL, size)
    p = <unsigned char *>PyBytes_AS_STRING(chunk)
    for i in range(size):
        p[i] = r.s[r.pos + i] ^ r.mask
    r.pos += size
    return chunk


cdef object read_int_part(Reader *r, unsigned char tag):
    """Mirrors keylib._decode_int_part."""
    cdef Py_ssize_t length, width, i
    cdef bint negative
    cdef uint64_t v = 0
    cdef unsigned char first
    if TAG_ZERO <= tag <= TAG_ZERO + INT_SMALL_MAX_BYTES:
        length = tag - TAG_ZERO
        negative = False
    elif TAG_NEG_ONE - INT_SMALL_MAX_BYTES <= tag <= TAG_NEG_ONE:
        length = TAG_NEG_ONE - tag
        negative = True
    else:
        negative = tag == TAG_NEG_BIG
        need(r, 1)
        width = at(r, r.pos)
        if negative:
            width = 0xFF - width
        r.pos += 1
        length_bytes = take(r, width)
        if negative:
            length_bytes = length_bytes.translate(_INVERT)
        if not width or length_bytes[0] == 0:
            raise corrupt('non-canonical integer length', r.pos - width - 1)
        big_length = int.from_bytes(length_bytes, 'big')
        if big_length <= INT_SMALL_MAX_BYTES:
            raise corrupt('non-canonical long integer', r.pos - width - 1)
        if big_length > r.n - r.pos:
            raise corrupt(f'truncated: {big_length} bytes needed, {r.n - r.pos} left', r.pos)
        magnitude = take(r, big_length)
        if negative:
            magnitude = magnitude.translate(_INVERT)
        if magnitude[0] == 0:
            raise corrupt('non-canonical integer (leading zero byte)', r.pos - big_length)
        value = int.from_bytes(magnitude, 'big')
        return -value - 1 if negative else value
    need(r, length)
    for i in range(length):
        v = (v << 8) | (at(r, r.pos + i) ^ (0xFF if negative else 0))
    if length:
        first = at(r, r.pos) ^ (0xFF if negative else 0)
        if first == 0:
            raise corrupt('non-canonical integer (leading zero byte)', r.pos)
    r.pos += length
    if negative:
        if v < (<uint64_t>1 << 63):
            return PyLong_FromLongLong(-<int64_t>v - 1)
        return -PyLong_FromUnsignedLongLong(v) - 1
    return PyLong_FromUnsignedLongLong(v)


cdef object exact_float(object int_part, object fraction, Py_ssize_t ngroups, Py_ssize_t pos):
    """Mirrors the exact arithmetic of keylib._decode_number_suffix."""
    cdef object shift = 7 * ngroups
    numerator = (int_part << shift) + fraction
    denominator = (<object>1) << shift
    try:
        value = numerator / denominator
    except OverflowError:
        raise corrupt('number too large for a float', pos) from None
    exact_num, exact_den = value.as_integer_ratio()
    if exact_num * denominator != numerator * exact_den:
        raise corrupt('fraction is not exactly representable as a float', pos)
    return value


cdef object read_number_suffix(Reader *r, object int_part, Py_ssize_t element_start):
    """Mirrors keylib._decode_number_suffix."""
    cdef unsigned char suffix
    cdef Py_ssize_t start, end, ngroups, i
    cdef uint64_t small_fraction = 0
    cdef double candidate
    cdef unsigned char stack[64]
    cdef Buf check
    if r.pos >= r.n or at(r, r.pos) < 0x80:
        return int_part
    suffix = at(r, r.pos)
    r.pos += 1
    if suffix == SUFFIX_BOOL:
        if not (int_part == 0 or int_part == 1):
            raise corrupt('bool with value other than 0 or 1', r.pos - 1)
        return int_part == 1
    if suffix == SUFFIX_NEG_ZERO:
        if int_part != 0:
            raise corrupt('negative-zero marker after non-zero integer', r.pos - 1)
        return -0.0
    if suffix != SUFFIX_FLOAT:
        raise corrupt(f'unknown number suffix 0x{suffix:02x}', r.pos - 1)
    start = r.pos
    end = start
    while end < r.n and at(r, end) >= 0x80:
        end += 1
    r.pos = end
    ngroups = end - start
    if ngroups > MAX_FRACTION_GROUPS:
        raise corrupt('float fraction longer than any double has', start)
    if ngroups and at(r, end - 1) == 0x80:
        raise corrupt('non-canonical float fraction', end - 1)
    if ngroups <= 9 and -_FLOAT_EXACT_LIMIT < int_part < _FLOAT_EXACT_LIMIT:
        for i in range(start, end):
            small_fraction = (small_fraction << 7) | (at(r, i) & 0x7F)
        candidate = <double>(<int64_t>int_part) + ldexp(<double>small_fraction, -7 * <int>ngroups)
        # Accept the candidate only if it re-encodes to exactly these bytes;
        # otherwise the exact path decides (and rejects corrupt input).
        buf_init(&check, stack, 64)
        try:
            put_double(&check, candidate)
            if check.n == end - element_start:
                for i in range(check.n):
                    if check.p[i] != at(r, element_start + i):
                        break
                else:
                    return candidate
        finally:
            if check.heap:
                free(check.p)
    cdef object fraction = 0
    for i in range(start, end):
        fraction = (fraction << 7) | <object>(at(r, i) & 0x7F)
    return exact_float(int_part, fraction, ngroups, start)


cdef bytes read_7bit(Reader *r, Py_ssize_t start, Py_ssize_t end):
    """Mirrors keylib._unpack7."""
    cdef Py_ssize_t ngroups = end - start
    cdef Py_ssize_t nbytes = (7 * ngroups) >> 3
    cdef Py_ssize_t i, k = 0
    cdef unsigned int acc = 0
    cdef int bits = 0
    cdef bytes out
    cdef unsigned char *p
    if ngroups % 8 == 1:
        raise corrupt('string has a dangling 7-bit group', end - 1)
    out = PyBytes_FromStringAndSize(NULL, nbytes)
    p = <unsigned char *>PyBytes_AS_STRING(out)
    for i in range(start, end):
        acc = ((acc << 7) | (at(r, i) & 0x7F)) & 0x7FFF
        bits += 7
        if bits >= 8:
            bits -= 8
            p[k] = (acc >> bits) & 0xFF
            k += 1
    if acc & ((1u << bits) - 1):
        raise corrupt('string padding bits are not zero', end - 1)
    return out


cdef object read_datetime(Reader *r):
    """Mirrors keylib._decode_datetime."""
    instant = int.from_bytes(take(r, 8), 'big') - DT_INSTANT_BIAS_
    need(r, 1)
    kind = at(r, r.pos)
    r.pos += 1
    if kind == DT_NAIVE:
        offset_us = 0
        tzinfo = None
    elif kind == DT_AWARE:
        offset_us = int.from_bytes(take(r, 5), 'big') - DT_OFFSET_BIAS_
        if not -_US_PER_DAY < offset_us < _US_PER_DAY:
            raise corrupt('UTC offset out of range', r.pos - 5)
        tzinfo = _dt.timezone(_dt.timedelta(microseconds=offset_us))
    else:
        raise corrupt(f'unknown datetime zone kind 0x{kind:02x}', r.pos - 1)
    days, day_us = divmod(instant + offset_us, _US_PER_DAY)
    ordinal = days + _EPOCH_ORDINAL
    if not 1 <= ordinal <= _MAX_ORDINAL:
        raise corrupt('datetime out of range', r.pos)
    date = _dt.date.fromordinal(ordinal)
    seconds, microsecond = divmod(day_us, 1000000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return _dt.datetime(date.year, date.month, date.day, hour, minute, second,
                        microsecond, tzinfo)


cdef object read_date(Reader *r):
    """Mirrors keylib._decode_date."""
    cdef Py_ssize_t start = r.pos, i
    cdef long ordinal = 0
    need(r, DATE_BYTES)
    for i in range(DATE_BYTES):
        ordinal = (ordinal << 8) | at(r, start + i)
    if not 1 <= ordinal <= _MAX_DATE_ORDINAL:
        raise corrupt('date out of range', start)
    r.pos += DATE_BYTES
    return _dt.date.fromordinal(ordinal)


cdef object read_element(Reader *r):
    """Mirrors keylib._decode_element."""
    cdef Py_ssize_t start = r.pos
    cdef Py_ssize_t end
    cdef unsigned char tag = at(r, r.pos)
    cdef bytes raw
    r.pos += 1
    if tag == TAG_STR or tag == TAG_BYTES:
        end = r.pos
        while end < r.n and at(r, end) >= 0x80:
            end += 1
        raw = read_7bit(r, r.pos, end)
        r.pos = end
        if tag == TAG_BYTES:
            return raw
        try:
            return PyUnicode_DecodeUTF8(PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw),
                                        'surrogatepass')
        except UnicodeDecodeError:
            raise corrupt('string is not valid UTF-8', start + 1) from None
    if TAG_NEG_BIG <= tag <= TAG_POS_BIG:
        int_part = read_int_part(r, tag)
        return read_number_suffix(r, int_part, start)
    if tag == TAG_NONE:
        return None
    if tag == TAG_POS_INF:
        return float('inf')
    if tag == TAG_NEG_INF:
        return float('-inf')
    if tag == TAG_NAN:
        return float('nan')
    if tag == TAG_DATETIME:
        return read_datetime(r)
    if tag == TAG_DATE:
        return read_date(r)
    if tag == TAG_UUID:
        return _uuid.UUID(bytes=take(r, 16))
    if tag == TAG_DESC and r.mask == 0:
        if r.pos >= r.n:
            raise corrupt('truncated Desc element', r.pos)
        if <unsigned char>(r.s[r.pos] ^ 0xFF) == TAG_DESC:
            raise corrupt('nested Desc element', r.pos)
        r.mask = 0xFF
        try:
            value = read_element(r)
        finally:
            r.mask = 0
        if r.pos >= r.n or r.s[r.pos] != DESC_END:
            raise corrupt('Desc element is not terminated', r.pos)
        r.pos += 1
        return Desc(value)
    raise corrupt(f'unknown tag 0x{tag:02x}', start)


cdef int skip_element(Reader *r) except -1:
    """Step over the element at r.pos, raising the CorruptKeyError read_element
    would raise; a str or bytes element (outside Desc) is checked in place,
    with no object made."""
    cdef Py_ssize_t start = r.pos, end = r.pos + 1, i
    cdef unsigned char tag = r.s[r.pos]
    cdef unsigned int acc = 0, c
    cdef int bits = 0, pending = 0
    cdef unsigned char lo = 0x80, hi = 0xBF
    cdef bint utf8 = tag == TAG_STR, bad = False
    if r.mask or (tag != TAG_STR and tag != TAG_BYTES):
        read_element(r)
        return 0
    while end < r.n and r.s[end] >= 0x80:
        end += 1
    if (end - start - 1) % 8 == 1:
        raise corrupt('string has a dangling 7-bit group', end - 1)
    for i in range(start + 1, end):
        acc = ((acc << 7) | (r.s[i] & 0x7F)) & 0x7FFF
        bits += 7
        if bits < 8:
            continue
        bits -= 8
        if not utf8 or bad:
            continue
        # UTF-8 as PyUnicode_DecodeUTF8(..., 'surrogatepass') accepts it.
        c = (acc >> bits) & 0xFF
        if pending:
            if c < lo or c > hi:
                bad = True
            pending -= 1
            lo, hi = 0x80, 0xBF
        elif c >= 0x80:
            if 0xC2 <= c <= 0xDF:
                pending = 1
            elif 0xE0 <= c <= 0xEF:
                pending = 2
                if c == 0xE0:
                    lo = 0xA0
            elif 0xF0 <= c <= 0xF4:
                pending = 3
                if c == 0xF0:
                    lo = 0x90
                elif c == 0xF4:
                    hi = 0x8F
            else:
                bad = True
    if acc & ((1u << bits) - 1):
        raise corrupt('string padding bits are not zero', end - 1)
    if bad or pending:
        raise corrupt('string is not valid UTF-8', start + 1)
    r.pos = end
    return 0


cdef bytes as_bytes(object data):
    if type(data) is bytes:
        return <bytes>data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f'data must be bytes, not {type(data).__name__!r}')


cdef int start_reader(Reader *r, bytes buf, object prefix) except -1:
    cdef Py_ssize_t prefix_len
    check_prefix(prefix)
    prefix_len = PyBytes_GET_SIZE(prefix)
    r.s = <const unsigned char *>PyBytes_AS_STRING(buf)
    r.n = PyBytes_GET_SIZE(buf)
    r.mask = 0
    if prefix_len and (r.n < prefix_len or
                       memcmp(r.s, PyBytes_AS_STRING(prefix), prefix_len) != 0):
        raise CorruptKeyError(f'data does not start with the prefix {prefix!r}')
    r.pos = prefix_len
    return 0


@cython.binding(True)
def unpacks(data, prefix=b''):
    """Mirrors keylib.unpacks."""
    cdef Reader r
    cdef list elements = []
    cdef bytes buf = as_bytes(data)
    cdef Py_ssize_t nkeys
    start_reader(&r, buf, prefix)
    while r.pos < r.n:
        if r.s[r.pos] == KEY_SEP:
            nkeys = len(unpacks_list(buf, prefix))
            raise CorruptKeyError(
                f'data holds {nkeys} keys; use unpacks_list() to decode it')
        elements.append(read_element(&r))
    return tuple(elements)


cdef tuple split_first(bytes data, bytes prefix):
    """Mirrors keylib.split_first (for the compiled record layer)."""
    cdef Reader r
    cdef list elements = []
    start_reader(&r, data, prefix)
    while r.pos < r.n:
        if r.s[r.pos] == KEY_SEP:
            return tuple(elements), r.pos + 1
        elements.append(read_element(&r))
    return tuple(elements), 0


cdef Py_ssize_t first_key_end(bytes data, bytes prefix) except -1:
    """Mirrors keylib.first_key_end (for the compiled record layer)."""
    cdef Reader r
    start_reader(&r, data, prefix)
    while r.pos < r.n:
        if r.s[r.pos] == KEY_SEP:
            return r.pos + 1
        skip_element(&r)
    return 0


@cython.binding(True)
def unpacks_list(data, prefix=b''):
    """Mirrors keylib.unpacks_list."""
    cdef Reader r
    cdef list keys = []
    cdef list elements = []
    cdef bytes buf = as_bytes(data)
    start_reader(&r, buf, prefix)
    while r.pos < r.n:
        if r.s[r.pos] == KEY_SEP:
            keys.append(tuple(elements))
            elements = []
            r.pos += 1
        else:
            elements.append(read_element(&r))
    keys.append(tuple(elements))
    return keys


# --- counting groups ------------------------------------------------------------
# count_groups, the loop of group_counts(), twin of keylib.count_groups. The
# engine keys after a group's first are compared with the group's bound in
# place (memcmp); the bound is the first key's own bytes up to the group's
# last element, which are packs(group, prefix) since decoding accepts only
# the canonical encoding. Of a group's first key, only the group's elements
# are decoded; the rest is checked in place as the decoder would check it.


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
    """Mirrors keylib.count_groups."""
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
