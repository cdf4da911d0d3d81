/* The C runtime of kfmt's native backend: what every generated _native.c includes.
 *
 * Hand-written, format-independent helpers: big-endian loads, Kafka varints, CRC-32 and CRC-32C, the decode
 * context (limits read once per call from kfmt.runtime.options.DecodeOptions), and filling the slots of the
 * generated value classes.  Nothing here knows a format; the generated decoders call these.
 *
 * The contract with the generated code: a decoder returns KF_OK with its value, KF_FALLBACK when anything
 * is unusual (no Python error set: the python backend's checked decoder then decodes the same bytes and
 * raises the exact CodecError), or KF_ERROR with a Python exception set that must propagate as it stands
 * (MemoryError, a decompression limit already located).
 */
#ifndef KFMT_NATIVE_H
#define KFMT_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#define KF_OK 0
#define KF_FALLBACK 1
#define KF_ERROR (-1)

/* ------------------------------------------------------------------ loads */

static inline int64_t kf_i8(const uint8_t *p) { return (int8_t)p[0]; }
static inline int64_t kf_u8(const uint8_t *p) { return p[0]; }
static inline int64_t kf_i16(const uint8_t *p) { return (int16_t)(((uint16_t)p[0] << 8) | p[1]); }
static inline int64_t kf_u16(const uint8_t *p) { return ((uint16_t)p[0] << 8) | p[1]; }
static inline uint32_t kf_be32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return __builtin_bswap32(v);
}
static inline int64_t kf_i32(const uint8_t *p) { return (int32_t)kf_be32(p); }
static inline int64_t kf_u32(const uint8_t *p) { return kf_be32(p); }
static inline int64_t kf_i64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return (int64_t)__builtin_bswap64(v);
}

/* Kafka's varint (ByteUtils.java): base-128 little-endian groups, at most maxlen bytes, the value masked to
 * 32 or 64 bits; non-minimal encodings accepted.  Returns 0, or 1 when truncated or too long. */
static inline int kf_uvarint(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int maxlen, uint64_t *out) {
    Py_ssize_t p = *pos;
    if (p < end && b[p] < 0x80) {
        *out = b[p];
        *pos = p + 1;
        return 0;
    }
    uint64_t r = 0;
    int shift = 0;
    Py_ssize_t limit = end - p < maxlen ? end : p + maxlen;
    while (p < limit) {
        uint8_t x = b[p++];
        r |= (uint64_t)(x & 0x7F) << shift;
        if (!(x & 0x80)) {
            *out = maxlen == 5 ? (r & 0xFFFFFFFFu) : r;
            *pos = p;
            return 0;
        }
        shift += 7;
    }
    return 1;
}

static inline int64_t kf_zigzag32(uint64_t u) {
    uint32_t v = (uint32_t)u;
    return (int32_t)((v >> 1) ^ (0u - (v & 1u)));
}
/* A string field's str, as the python backend makes it (UTF-8, undecodable bytes by surrogateescape). Short
 * ASCII strings repeat (header keys, topic and group names): the last one seen in each of 64 slots is reused
 * when the bytes are the same (a str is immutable: an equal object is the same value), saving an allocation
 * and a decode per record. Under the GIL; the cache holds at most 64 strings of at most 32 bytes. */
#define KF_TEXT_SLOTS 64
static PyObject *kf_text_cache[KF_TEXT_SLOTS];
static inline PyObject *kf_text(const uint8_t *p, Py_ssize_t n) {
    if (n < 1 || n > 32) return PyUnicode_DecodeUTF8((const char *)p, n, "surrogateescape");
    uint32_t h = (uint32_t)n * 2654435761u ^ (uint32_t)p[0] * 40503u ^ (uint32_t)p[n - 1] * 9973u ^ (uint32_t)p[n / 2];
    PyObject **slot = &kf_text_cache[(h ^ (h >> 7)) % KF_TEXT_SLOTS];
    PyObject *c = *slot;
    if (c != NULL && PyUnicode_GET_LENGTH(c) == n && memcmp(PyUnicode_DATA(c), p, (size_t)n) == 0) return Py_NewRef(c);
    PyObject *s = PyUnicode_DecodeUTF8((const char *)p, n, "surrogateescape");
    if (s != NULL && PyUnicode_IS_COMPACT_ASCII(s)) Py_XSETREF(*slot, Py_NewRef(s)); /* ASCII: its data is the bytes */
    return s;
}

/* A float64 read as its 8 bytes' big-endian bits (kf_i64), boxed */
static inline PyObject *kf_float_from_bits(int64_t v) {
    double d;
    memcpy(&d, &v, 8);
    return PyFloat_FromDouble(d);
}

/* Whether o is a str equal to the ASCII string s (None and anything else are equal to nothing) */
static inline int kf_str_eq(PyObject *o, const char *s) {
    return o != NULL && PyUnicode_Check(o) && PyUnicode_CompareWithASCIIString(o, s) == 0;
}

/* An unknown tagged field kept as the python backend keeps it: (tag, bytes) appended to list */
static inline int kf_tag_append(PyObject *list, uint64_t tag, const uint8_t *p, Py_ssize_t n) {
    PyObject *t = Py_BuildValue("(Ky#)", (unsigned long long)tag, (const char *)p, n);
    if (t == NULL) return -1;
    int r = PyList_Append(list, t);
    Py_DECREF(t);
    return r;
}

static inline int64_t kf_zigzag64(uint64_t v) { return (int64_t)((v >> 1) ^ (0u - (v & 1u))); }
static inline int64_t kf_wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t kf_wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }

/* ------------------------------------------------------------------ checksums */

static uint32_t kf_crc32_table[8][256];
static uint32_t kf_crc32c_table[8][256];
static int kf_have_sse42;

static void kf_tables(uint32_t t[8][256], uint32_t poly) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int s = 1; s < 8; s++) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
}

/* slicing-by-8 over a reflected CRC table (both CRC-32 and CRC-32C are reflected) */
static uint32_t kf_crc_sw(uint32_t t[8][256], const uint8_t *p, Py_ssize_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= c;
        c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
            t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xFF];
    return c ^ 0xFFFFFFFFu;
}

#if defined(__x86_64__)
/* CRC-32C with the SSE 4.2 instruction. An instruction's result is ready three cycles after it starts but one can
 * start each cycle, so a long input is taken as three lanes of KF_CRC_LANE bytes at a time, each lane's CRC of its
 * own (the first continuing the input's, the others from 0), joined as the CRC is linear: the CRC of A then B is
 * the CRC of A followed by |B| zero bytes, xor the CRC of B from 0; following with KF_CRC_LANE zero bytes is a
 * linear map of the 32 register bits, a table per register byte (made on first use). */
#define KF_CRC_LANE 512
static uint32_t kf_crc32c_zeros[4][256];
static int kf_crc32c_zeros_made;

__attribute__((target("sse4.2"))) static uint64_t kf_crc32c_run(uint64_t c, const uint8_t *p, Py_ssize_t n) {
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}

__attribute__((target("sse4.2"))) static void kf_crc32c_zeros_make(void) {
    uint32_t bit[32];
    for (int i = 0; i < 32; i++) { /* each register bit followed by a lane of zero bytes */
        uint64_t c = (uint64_t)1 << i;
        for (int k = 0; k < KF_CRC_LANE / 8; k++) c = __builtin_ia32_crc32di(c, 0);
        bit[i] = (uint32_t)c;
    }
    for (int t = 0; t < 4; t++)
        for (int b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int j = 0; j < 8; j++)
                if (b >> j & 1) v ^= bit[8 * t + j];
            kf_crc32c_zeros[t][b] = v;
        }
    kf_crc32c_zeros_made = 1;
}

static inline uint32_t kf_crc32c_lane_on(uint32_t c) {
    return kf_crc32c_zeros[0][c & 255] ^ kf_crc32c_zeros[1][c >> 8 & 255] ^ kf_crc32c_zeros[2][c >> 16 & 255] ^
           kf_crc32c_zeros[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t kf_crc32c_hw(const uint8_t *p, Py_ssize_t n) {
    uint64_t c = 0xFFFFFFFFu;
    if (n >= 3 * KF_CRC_LANE && !kf_crc32c_zeros_made) kf_crc32c_zeros_make();
    while (n >= 3 * KF_CRC_LANE) {
        uint64_t c1 = 0, c2 = 0;
        for (const uint8_t *end = p + KF_CRC_LANE; p < end; p += 8) {
            uint64_t a, b, d;
            memcpy(&a, p, 8), memcpy(&b, p + KF_CRC_LANE, 8), memcpy(&d, p + 2 * KF_CRC_LANE, 8);
            c = __builtin_ia32_crc32di(c, a);
            c1 = __builtin_ia32_crc32di(c1, b);
            c2 = __builtin_ia32_crc32di(c2, d);
        }
        c = kf_crc32c_lane_on(kf_crc32c_lane_on((uint32_t)c) ^ (uint32_t)c1) ^ (uint32_t)c2;
        p += 2 * KF_CRC_LANE;
        n -= 3 * KF_CRC_LANE;
    }
    return (uint32_t)kf_crc32c_run(c, p, n) ^ 0xFFFFFFFFu;
}
#endif

static inline uint32_t kf_crc32c(const uint8_t *p, Py_ssize_t n) {
#if defined(__x86_64__)
    if (kf_have_sse42) return kf_crc32c_hw(p, n);
#endif
    return kf_crc_sw(kf_crc32c_table, p, n);
}
static inline uint32_t kf_crc32(const uint8_t *p, Py_ssize_t n) { return kf_crc_sw(kf_crc32_table, p, n); }

static void kf_init_checksums(void) {
    kf_tables(kf_crc32_table, 0xEDB88320u);
    kf_tables(kf_crc32c_table, 0x82F63B78u);
#if defined(__x86_64__)
    __builtin_cpu_init();
    kf_have_sse42 = __builtin_cpu_supports("sse4.2") && getenv("KFMT_NATIVE_NO_HW_CRC") == NULL;
#endif
}

/* ------------------------------------------------------------------ the decode context */

struct kf_cols_s;
struct kf_facts_s;
typedef struct {
    PyObject *opts;         /* borrowed: the DecodeOptions of this call */
    struct kf_cols_s *cols; /* Arrow-direct decoding: the columns rows go to */
    int verify_crc;
    long long max_bytes, max_headers, max_records, max_memory, max_depth, max_decompressed, max_ratio;
    long long spent;        /* estimated bytes of nested arrays decoded into the current element */
    int depth;              /* compressed wrappers being decoded around the current entry */
    PyObject *src;          /* borrowed: the object decoded (decode_from's buf), NULL when unknown */
    const uint8_t *base;    /* its bytes: positions in it are positions in src */
    PyObject **whole;       /* where the caller keeps src as one view for kf_view (NULL: a view made per call) */
    struct kf_facts_s *facts; /* a check walk's sink for what it passes (generator.ir.walk's facts), or NULL */
} kf_ctx;

/* ------------------------------------------------------------------ a check walk's facts (generator.ir.walk) */

#define KF_FACT_CODE (-1)    /* an error code other than 0: ``pos`` holds it */
#define KF_FACT_RECORDS (-2) /* a record set: its bytes [pos, pos + len) */

typedef struct {
    int32_t id; /* a fact id of the format (its walk's), or KF_FACT_CODE, KF_FACT_RECORDS */
    int64_t pos, len; /* where its bytes are, and how many (-1: null; an array's element: 0) */
} kf_fact;

typedef struct kf_facts_s {
    const uint8_t *want; /* want[id] != 0: the walk tells this id's facts (NULL: none) */
    Py_ssize_t nwant;
    kf_fact *ev; /* what it told, in the order it passed them */
    size_t n, cap;
    int lost; /* memory ran out: the facts are not whole */
} kf_facts;

static inline void kf_fact_add(kf_facts *fx, int32_t id, int64_t pos, int64_t len) {
    if (fx->n == fx->cap) {
        size_t cap = fx->cap ? 2 * fx->cap : 64;
        kf_fact *ev = PyMem_Realloc(fx->ev, cap * sizeof(kf_fact));
        if (ev == NULL) {
            fx->lost = 1;
            return;
        }
        fx->ev = ev, fx->cap = cap;
    }
    fx->ev[fx->n++] = (kf_fact){id, pos, len};
}

static inline void kf_fact_want(kf_facts *fx, int32_t id, int64_t pos, int64_t len) {
    if (id < fx->nwant && fx->want[id]) kf_fact_add(fx, id, pos, len);
}

static inline void kf_fact_code(kf_facts *fx, const uint8_t *p) {
    int64_t v = (int16_t)(((uint16_t)p[0] << 8) | p[1]);
    if (v) kf_fact_add(fx, KF_FACT_CODE, v, 0);
}

static inline void kf_fact_records(kf_facts *fx, int64_t pos, int64_t len) { kf_fact_add(fx, KF_FACT_RECORDS, pos, len); }

static int kf_opt(PyObject *opts, const char *name, long long *out) {
    PyObject *v = PyObject_GetAttrString(opts, name);
    if (v == NULL) return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* The limits of the last DecodeOptions read (a frozen value: read once per object, kept alive while cached) */
static PyObject *kf_opts_seen;
static kf_ctx kf_opts_vals;

/* Read the limits of ``opts``; returns 0, or 1 (fall back: unusual options) with no error set. */
static int kf_ctx_init(kf_ctx *cx, PyObject *opts) {
    if (opts == kf_opts_seen && opts != NULL) {
        *cx = kf_opts_vals;
    } else {
        long long crc;
        if (kf_opt(opts, "verify_crc", &crc) || kf_opt(opts, "max_bytes", &cx->max_bytes) ||
            kf_opt(opts, "max_headers", &cx->max_headers) || kf_opt(opts, "max_records", &cx->max_records) ||
            kf_opt(opts, "max_memory", &cx->max_memory) || kf_opt(opts, "max_depth", &cx->max_depth) ||
            kf_opt(opts, "max_decompressed", &cx->max_decompressed) || kf_opt(opts, "max_ratio", &cx->max_ratio)) {
            PyErr_Clear();
            return 1;
        }
        cx->verify_crc = crc != 0;
        if (strcmp(Py_TYPE(opts)->tp_name, "DecodeOptions") == 0) { /* kfmt's frozen options: cached */
            Py_INCREF(opts);
            Py_XSETREF(kf_opts_seen, opts);
            kf_opts_vals = *cx;
        }
    }
    cx->opts = opts;
    cx->cols = NULL;
    cx->spent = 0;
    cx->depth = 0;
    cx->src = NULL;
    cx->base = NULL;
    cx->whole = NULL;
    cx->facts = NULL;
    return 0;
}

/* A record set (a blob with ``view``): a read-only view of the input's bytes ``[pos, pos + n)`` of ``b``, which
 * keeps the input alive, instead of a copy; a copy where ``b`` is not the input's own bytes (a buffer decoded
 * from it), the input is not known, or it is not bytes (an mmap's view could be written to). */
static PyObject *kf_view(kf_ctx *cx, const uint8_t *b, Py_ssize_t pos, Py_ssize_t n) {
    if (cx->src == NULL || b != cx->base || !PyBytes_CheckExact(cx->src))
        return PyBytes_FromStringAndSize((const char *)b + pos, n);
    if (cx->whole != NULL && *cx->whole != NULL) return PySequence_GetSlice(*cx->whole, pos, pos + n);
    PyObject *whole = PyMemoryView_FromObject(cx->src);
    if (whole == NULL) return NULL;
    PyObject *part = PySequence_GetSlice(whole, pos, pos + n);
    if (cx->whole != NULL)
        *cx->whole = whole; /* the caller's, released when its decode ends */
    else
        Py_DECREF(whole);
    return part;
}

/* ------------------------------------------------------------------ decompression, the common shapes

 * Kafka's usual payloads are decompressed here by the codec libraries' own functions, skipping the
 * python framing code around them: xerial snappy blocks and raw snappy (python-snappy), Kafka's LZ4 frame
 * with independent blocks and no block checksums (lz4.block), a payload that is exactly one zstd frame (zstandard). The result is
 * what kfmt.runtime.compression.decompress returns, and only returned when it is certain to be: anything
 * else (a limit reached, an unusual flag, damage, a library error) answers NULL with no error set and the
 * caller hands the payload to that function, whose result or error is exact. Gzip: one member inflated
 * whole by zlib-ng within min(max_decompressed, 1 MiB), which no allowance refuses. */

static PyObject *kf_snappy_uncompress, *kf_lz4_block_decompress, *kf_zstd_class, *kf_k_uncompressed_size,
    *kf_k_max_output_size, *kf_s_unzstd, *kf_inflate_obj, *kf_s_decompress, *kf_s_eof, *kf_s_unused_data,
    *kf_s_unconsumed_tail, *kf_gzip_wbits;
static int kf_fast_state; /* 0: not looked up yet, 1: ready, -1: unavailable */

static PyObject *kf_attr_of(const char *module, const char *name) {
    PyObject *m = PyImport_ImportModule(module);
    if (m == NULL) return NULL;
    PyObject *r = PyObject_GetAttrString(m, name);
    Py_DECREF(m);
    return r;
}

static int kf_fast_ready(void) {
    if (kf_fast_state == 0) {
        kf_snappy_uncompress = kf_attr_of("snappy", "uncompress");
        kf_lz4_block_decompress = kf_attr_of("lz4.block", "decompress");
        kf_zstd_class = kf_attr_of("zstandard", "ZstdDecompressor");
        PyObject *lib = kf_attr_of("kfmt.runtime.compression", "_inflate_lib"); /* zlib-ng, as the python code */
        kf_inflate_obj = lib == NULL ? NULL : PyObject_GetAttrString(lib, "decompressobj");
        Py_XDECREF(lib);
        kf_k_uncompressed_size = Py_BuildValue("(s)", "uncompressed_size"); /* keyword names, as tuples */
        kf_k_max_output_size = Py_BuildValue("(s)", "max_output_size");
        kf_s_unzstd = PyUnicode_InternFromString("kfmt.unzstd");
        kf_s_decompress = PyUnicode_InternFromString("decompress");
        kf_s_eof = PyUnicode_InternFromString("eof");
        kf_s_unused_data = PyUnicode_InternFromString("unused_data");
        kf_s_unconsumed_tail = PyUnicode_InternFromString("unconsumed_tail");
        kf_gzip_wbits = PyLong_FromLong(31);
        kf_fast_state = kf_snappy_uncompress && kf_lz4_block_decompress && kf_zstd_class && kf_k_uncompressed_size &&
                                kf_k_max_output_size && kf_s_unzstd && kf_inflate_obj && kf_s_decompress && kf_s_eof &&
                                kf_s_unused_data && kf_s_unconsumed_tail && kf_gzip_wbits
                            ? 1
                            : -1;
        PyErr_Clear();
    }
    return kf_fast_state == 1;
}

/* decompressed bytes allowed for ``n`` compressed bytes (compression.allowance) */
static inline long long kf_allowance(const kf_ctx *cx, long long n) {
    long long r = n > (1LL << 40) / (cx->max_ratio > 0 ? cx->max_ratio : 1) ? (1LL << 40) : n * cx->max_ratio;
    if (r < (1LL << 20)) r = 1LL << 20;
    return r < cx->max_decompressed ? r : cx->max_decompressed;
}

/* f(view of p[0:n], **{kw[0]: kwv}) or f(view); ``kw`` a one-name tuple made once */
static PyObject *kf_call_view(PyObject *f, const uint8_t *p, Py_ssize_t n, PyObject *kw, PyObject *kwv) {
    PyObject *view = PyMemoryView_FromMemory((char *)p, n, PyBUF_READ);
    if (view == NULL) return NULL;
    PyObject *args[2] = {view, kwv};
    PyObject *r = PyObject_Vectorcall(f, args, 1, kw);
    Py_DECREF(view);
    if (r != NULL && !PyBytes_CheckExact(r)) Py_CLEAR(r);
    return r;
}

/* the raw snappy block's stated length (compression._raw_snappy_length), or -1 */
static long long kf_snappy_len(const uint8_t *p, Py_ssize_t n) {
    uint64_t r = 0;
    for (int i = 0; i < 5 && i < n; i++) {
        r |= (uint64_t)(p[i] & 0x7F) << (7 * i);
        if (!(p[i] & 0x80)) return (long long)r;
    }
    return -1;
}

/* bytes of the pieces, joined (the one piece itself when alone); steals the references */
static PyObject *kf_join(PyObject **parts, int k, Py_ssize_t total) {
    if (k == 1) return parts[0];
    PyObject *r = PyBytes_FromStringAndSize(NULL, total);
    Py_ssize_t at = 0;
    for (int i = 0; i < k; i++) {
        if (r != NULL) memcpy(PyBytes_AS_STRING(r) + at, PyBytes_AS_STRING(parts[i]), PyBytes_GET_SIZE(parts[i]));
        at += PyBytes_GET_SIZE(parts[i]);
        Py_DECREF(parts[i]);
    }
    return r;
}

#define KF_FAST_PARTS 64
/* pieces are joined (the output held twice for a moment) only up to this size; larger outputs go through
 * the python code, which gives up its buffer without a copy */
#define KF_FAST_JOIN_MAX (4 << 20)
static const uint8_t KF_XERIAL[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};

static PyObject *kf_fast_snappy(const kf_ctx *cx, const uint8_t *p, Py_ssize_t n) {
    Py_ssize_t starts[KF_FAST_PARTS], lens[KF_FAST_PARTS];
    int k = 0;
    long long total = 0, limit = kf_allowance(cx, n);
    if (n < 16 || memcmp(p, KF_XERIAL, 8) != 0) {
        starts[0] = 0; /* one raw block */
        lens[k++] = n;
    } else {
        for (Py_ssize_t at = 16; at < n;) {
            if (n - at >= 8 && memcmp(p + at, KF_XERIAL, 8) == 0) { /* a concatenated stream's header */
                at += 16;
                continue;
            }
            if (at + 4 > n || k == KF_FAST_PARTS) return NULL;
            int32_t len = (int32_t)kf_be32(p + at);
            at += 4;
            if (len < 0 || len > n - at) return NULL;
            starts[k] = at;
            lens[k++] = len;
            at += len;
        }
    }
    long long sizes[KF_FAST_PARTS];
    for (int i = 0; i < k; i++) {
        sizes[i] = kf_snappy_len(p + starts[i], lens[i]);
        if (sizes[i] < 0 || (total += sizes[i]) > limit || (k > 1 && total > KF_FAST_JOIN_MAX)) return NULL;
    }
    PyObject *parts[KF_FAST_PARTS];
    for (int i = 0; i < k; i++) {
        parts[i] = kf_call_view(kf_snappy_uncompress, p + starts[i], lens[i], NULL, NULL);
        if (parts[i] == NULL || PyBytes_GET_SIZE(parts[i]) != sizes[i]) {
            Py_XDECREF(parts[i]);
            while (i--) Py_DECREF(parts[i]);
            return NULL;
        }
    }
    return k ? kf_join(parts, k, (Py_ssize_t)total) : NULL;
}

static inline uint32_t kf_rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

/* XXH32 with seed 0 of a few bytes (the LZ4 frame descriptor: under 16 bytes) */
static uint32_t kf_xxh32_short(const uint8_t *p, Py_ssize_t n) {
    const uint32_t P1 = 2654435761u, P2 = 2246822519u, P3 = 3266489917u, P4 = 668265263u, P5 = 374761393u;
    uint32_t h = P5 + (uint32_t)n;
    Py_ssize_t i = 0;
    for (; i + 4 <= n; i += 4) {
        uint32_t v = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 3] << 24;
        h = kf_rotl32(h + v * P3, 17) * P4;
    }
    for (; i < n; i++) h = kf_rotl32(h + p[i] * P5, 11) * P1;
    h ^= h >> 15;
    h *= P2;
    h ^= h >> 13;
    h *= P3;
    return h ^ (h >> 16);
}

static PyObject *kf_fast_lz4(const kf_ctx *cx, const uint8_t *p, Py_ssize_t n, int verify_hc) {
    if (n < 7 || kf_be32(p) != 0x04224D18u) return NULL;
    uint8_t flg = p[4], bd = p[5];
    if (flg >> 6 != 1 || !(flg & 0x20) || (flg & 0x13) || (bd & 0x8F) || ((bd >> 4) & 7) < 4) return NULL;
    Py_ssize_t max_block = (Py_ssize_t)1 << (8 + 2 * ((bd >> 4) & 7)), pos = 6 + ((flg & 0x08) ? 8 : 0);
    if (pos >= n || (verify_hc && p[pos] != (uint8_t)(kf_xxh32_short(p + 4, pos - 4) >> 8))) return NULL;
    pos++;
    PyObject *parts[KF_FAST_PARTS];
    int k = 0;
    Py_ssize_t total = 0;
    for (;;) {
        if (pos + 4 > n || k == KF_FAST_PARTS) goto fail;
        uint32_t size = (uint32_t)p[pos] | (uint32_t)p[pos + 1] << 8 | (uint32_t)p[pos + 2] << 16 | (uint32_t)p[pos + 3] << 24;
        pos += 4;
        if (size == 0) break;
        int raw = (size & 0x80000000u) != 0;
        Py_ssize_t len = (Py_ssize_t)(size & 0x7FFFFFFFu);
        if (len > max_block || len > n - pos) goto fail;
        long long limit = kf_allowance(cx, pos + len), room = limit - total;
        if (room > max_block) room = max_block;
        if (raw) {
            if (len > room) goto fail;
            parts[k] = PyBytes_FromStringAndSize((const char *)p + pos, len);
        } else {
            PyObject *cap = PyLong_FromLongLong(room > 1 ? room : 1);
            parts[k] = cap == NULL ? NULL : kf_call_view(kf_lz4_block_decompress, p + pos, len, kf_k_uncompressed_size, cap);
            Py_XDECREF(cap);
        }
        if (parts[k] == NULL) goto fail;
        total += PyBytes_GET_SIZE(parts[k++]);
        pos += len;
        if (total > limit || (k > 1 && total > KF_FAST_JOIN_MAX)) goto fail;
    }
    if (k == 0) return PyBytes_FromStringAndSize(NULL, 0);
    return kf_join(parts, k, total);
fail:
    while (k--) Py_DECREF(parts[k]);
    return NULL;
}

/* The bytes of the zstd frame at p (RFC 8878: header, blocks by their headers, checksum), or -1: not one
 * frame of data. The one-shot call decodes a single frame: the payload must be exactly one. */
static Py_ssize_t kf_zstd_frame_size(const uint8_t *p, Py_ssize_t n) {
    if (n < 6 || p[0] != 0x28 || p[1] != 0xB5 || p[2] != 0x2F || p[3] != 0xFD) return -1;
    uint8_t fhd = p[4];
    int single = (fhd >> 5) & 1, fcs = fhd >> 6;
    static const int did_size[4] = {0, 1, 2, 4}, fcs_size[4] = {0, 2, 4, 8};
    if (fhd & 0x08) return -1; /* reserved bit */
    Py_ssize_t pos = 5 + !single + did_size[fhd & 3] + (fcs == 0 ? single : fcs_size[fcs]);
    for (;;) {
        if (pos + 3 > n) return -1;
        uint32_t h = (uint32_t)p[pos] | (uint32_t)p[pos + 1] << 8 | (uint32_t)p[pos + 2] << 16;
        int type = (h >> 1) & 3;
        Py_ssize_t size = type == 1 ? 1 : (Py_ssize_t)(h >> 3);
        if (type == 3 || size > n - pos - 3) return -1;
        pos += 3 + size;
        if (h & 1) break;
    }
    pos += (fhd & 0x04) ? 4 : 0;
    return pos <= n ? pos : -1;
}

static PyObject *kf_fast_zstd(const kf_ctx *cx, const uint8_t *p, Py_ssize_t n) {
    if (kf_zstd_frame_size(p, n) != n) return NULL;
    PyObject *tls = PyThreadState_GetDict(); /* a decompressor per thread, as the python code keeps one */
    if (tls == NULL) return NULL;
    PyObject *d = PyDict_GetItemWithError(tls, kf_s_unzstd);
    if (d == NULL) {
        if (PyErr_Occurred() || (d = PyObject_CallNoArgs(kf_zstd_class)) == NULL) return NULL;
        int bad = PyDict_SetItem(tls, kf_s_unzstd, d);
        Py_DECREF(d);
        if (bad) return NULL;
    }
    long long cap = 16LL * n < (64 << 10) ? (64 << 10) : 16LL * n, limit = kf_allowance(cx, n);
    if (cap > limit) cap = limit;
    PyObject *view = PyMemoryView_FromMemory((char *)p, n, PyBUF_READ);
    PyObject *cap_o = PyLong_FromLongLong(cap);
    PyObject *r = NULL;
    if (view != NULL && cap_o != NULL) {
        PyObject *args[3] = {d, view, cap_o};
        r = PyObject_VectorcallMethod(kf_s_decompress, args, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, kf_k_max_output_size);
    }
    Py_XDECREF(view);
    Py_XDECREF(cap_o);
    if (r != NULL && (!PyBytes_CheckExact(r) || PyBytes_GET_SIZE(r) > cap)) Py_CLEAR(r);
    return r;
}

/* len(getattr(o, name)) == 0 */
static int kf_attr_empty(PyObject *o, PyObject *name) {
    PyObject *v = PyObject_GetAttr(o, name);
    int r = v != NULL && PyBytes_Check(v) && PyBytes_GET_SIZE(v) == 0;
    Py_XDECREF(v);
    return r;
}

static PyObject *kf_fast_gzip(const kf_ctx *cx, const uint8_t *p, Py_ssize_t n) {
    long long cap = cx->max_decompressed < (1LL << 20) ? cx->max_decompressed : (1LL << 20);
    PyObject *d = PyObject_CallOneArg(kf_inflate_obj, kf_gzip_wbits);
    if (d == NULL) return NULL;
    PyObject *view = PyMemoryView_FromMemory((char *)p, n, PyBUF_READ), *cap_o = PyLong_FromLongLong(cap), *r = NULL;
    if (view != NULL && cap_o != NULL) {
        PyObject *args[3] = {d, view, cap_o};
        r = PyObject_VectorcallMethod(kf_s_decompress, args, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    Py_XDECREF(view);
    Py_XDECREF(cap_o);
    PyObject *eof = r == NULL ? NULL : PyObject_GetAttr(d, kf_s_eof);
    int whole = eof == Py_True && kf_attr_empty(d, kf_s_unused_data) && kf_attr_empty(d, kf_s_unconsumed_tail);
    Py_XDECREF(eof);
    Py_DECREF(d);
    if (r != NULL && (!whole || !PyBytes_CheckExact(r) || PyBytes_GET_SIZE(r) > cap)) Py_CLEAR(r);
    return r;
}

/* ``codec``'s payload p[0:n] decompressed here, or NULL (no error set): the python function decides */
static PyObject *kf_decompress_fast(const kf_ctx *cx, PyObject *codec, const uint8_t *p, Py_ssize_t n, int magic) {
    if (n == 0 || !PyUnicode_Check(codec) || !kf_fast_ready()) return NULL;
    PyObject *r = NULL;
    if (PyUnicode_CompareWithASCIIString(codec, "gzip") == 0)
        r = kf_fast_gzip(cx, p, n);
    else if (PyUnicode_CompareWithASCIIString(codec, "snappy") == 0)
        r = kf_fast_snappy(cx, p, n);
    else if (PyUnicode_CompareWithASCIIString(codec, "lz4") == 0)
        r = kf_fast_lz4(cx, p, n, magic != 0);
    else if (PyUnicode_CompareWithASCIIString(codec, "zstd") == 0 && magic >= 2)
        r = kf_fast_zstd(cx, p, n);
    if (r == NULL) PyErr_Clear();
    return r;
}

/* ------------------------------------------------------------------ value classes */

/* The byte offset of slot ``name`` in instances of ``cls`` (a member descriptor found along its MRO). */
static Py_ssize_t kf_slot_offset(PyObject *cls, const char *name) {
    PyObject *d = PyObject_GetAttrString(cls, name);
    if (d == NULL) return -1;
    if (!Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", ((PyTypeObject *)cls)->tp_name, name);
        Py_DECREF(d);
        return -1;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    Py_ssize_t off = m->type == T_OBJECT_EX ? m->offset : -1;
    Py_DECREF(d);
    if (off < 0) PyErr_Format(PyExc_TypeError, "%s.%s is not an object slot", ((PyTypeObject *)cls)->tp_name, name);
    return off;
}

static inline void kf_set_slot(PyObject *obj, Py_ssize_t off, PyObject *v) {
    PyObject **at = (PyObject **)((char *)obj + off);
    PyObject *old = *at;
    *at = v; /* steals v */
    Py_XDECREF(old);
}

/* The slots of a runtime base class a format has no field for (a legacy message's headers and control):
 * filled as the python backend fills them, a new empty list, -1 or None. */
enum { KF_NONE, KF_LIST, KF_MINUS1 };
typedef struct {
    const char *name;
    int kind;
    Py_ssize_t off;
} kf_extra_slot;

static PyObject *kf_minus1;

static int kf_fill_extra(PyObject *obj, kf_extra_slot *x, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = x[i].kind == KF_LIST ? PyList_New(0) : Py_NewRef(x[i].kind == KF_MINUS1 ? kf_minus1 : Py_None);
        if (v == NULL) return -1;
        kf_set_slot(obj, x[i].off, v);
    }
    return 0;
}

static int kf_init_extra(PyObject *cls, kf_extra_slot *x, Py_ssize_t n) {
    if (kf_minus1 == NULL && (kf_minus1 = PyLong_FromLong(-1)) == NULL) return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if ((x[i].off = kf_slot_offset(cls, x[i].name)) < 0) return -1;
    return 0;
}

/* The input as bytes (or mmap: both slice to bytes in the python backend); anything else falls back. */
static PyObject *kf_mmap_type;

static inline int kf_plain_input(PyObject *buf) {
    return PyBytes_CheckExact(buf) || (kf_mmap_type != NULL && (PyObject *)Py_TYPE(buf) == kf_mmap_type);
}

/* The start of a decode call (buf, pos, end, opts): 0 with the input's buffer held (release it after), or 1
 * when the python backend must decide (other input types, odd positions or options; nothing held, no error). */
/* Whether n bytes are all ASCII (a string the check walk passes: every decoder reads it alike). */
static inline int kf_ascii(const uint8_t *p, int64_t n) {
    uint64_t acc = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        acc |= w;
    }
    for (; i < n; i++) acc |= p[i];
    return (acc & UINT64_C(0x8080808080808080)) == 0;
}

static int kf_begin(PyObject *const *args, kf_ctx *cx, Py_buffer *view, Py_ssize_t *pos, Py_ssize_t *end) {
    if (!kf_plain_input(args[0])) return 1;
    *pos = PyLong_AsSsize_t(args[1]);
    *end = PyLong_AsSsize_t(args[2]);
    if ((*pos == -1 || *end == -1) && PyErr_Occurred()) {
        PyErr_Clear();
        return 1;
    }
    if (kf_ctx_init(cx, args[3])) return 1;
    if (PyObject_GetBuffer(args[0], view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return 1;
    }
    if (*pos < 0 || *pos > *end || *end > view->len) {
        PyBuffer_Release(view);
        return 1;
    }
    cx->src = args[0];
    cx->base = (const uint8_t *)view->buf;
    return 0;
}

/* A decoder's error: MemoryError and located final errors propagate; anything else falls back. */
static inline int kf_error_or_fallback(void) {
    if (PyErr_ExceptionMatches(PyExc_MemoryError)) return KF_ERROR;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    int final = 0;
    if (value != NULL) {
        PyObject *f = PyObject_GetAttrString(value, "final");
        if (f != NULL) {
            final = PyObject_IsTrue(f) == 1;
            Py_DECREF(f);
        } else {
            PyErr_Clear();
        }
    }
    if (final) {
        PyErr_Restore(type, value, tb);
        return KF_ERROR;
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return KF_FALLBACK;
}

#endif

/* ------------------------------------------------------------------ encoding */

#ifndef KFMT_NATIVE_ENC
#define KFMT_NATIVE_ENC

/* A growing output buffer: plain memory, or (``ob`` set) the bytes object it will be returned as, so that
 * the encoded entries are not copied once more at the end; ``parts`` set: a gather writer's list of the pieces
 * already written (kf_w_set), the buffer holding what follows the last. */
typedef struct {
    char *p;
    Py_ssize_t n, cap;
    PyObject *ob;
    PyObject *parts;
} kf_w;

static void kf_w_free(kf_w *w) {
    Py_CLEAR(w->parts);
    if (w->ob != NULL)
        Py_CLEAR(w->ob);
    else
        PyMem_Free(w->p);
    w->p = NULL;
    w->n = w->cap = 0;
}

static int kf_w_grow(kf_w *w, Py_ssize_t k) {
    Py_ssize_t cap = w->cap ? w->cap : 256;
    while (cap < w->n + k) cap *= 2;
    if (w->ob != NULL) {
        if (_PyBytes_Resize(&w->ob, cap) < 0) return -1;
        w->p = PyBytes_AS_STRING(w->ob);
    } else {
        char *p = PyMem_Realloc(w->p, cap);
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        w->p = p;
    }
    w->cap = cap;
    return 0;
}

static inline int kf_w_reserve(kf_w *w, Py_ssize_t k) {
    if (w->n + k <= w->cap) return 0;
    return kf_w_grow(w, k);
}

/* A buffer that becomes a bytes object (kf_w_bytes) */
static int kf_w_start_bytes(kf_w *w, Py_ssize_t cap) {
    w->ob = PyBytes_FromStringAndSize(NULL, cap);
    if (w->ob == NULL) return -1;
    w->p = PyBytes_AS_STRING(w->ob);
    w->n = 0;
    w->cap = cap;
    return 0;
}

/* A record set to write: bytes, or any C-contiguous buffer of bytes (a view kf_view made); 1 for anything else.
 * The pointer stays valid while ``obj`` lives: a bytes object's storage, or the memory a live view exports. */
static int kf_blob_of(PyObject *obj, const char **s, Py_ssize_t *k) {
    if (PyBytes_CheckExact(obj)) {
        *s = PyBytes_AS_STRING(obj);
        *k = PyBytes_GET_SIZE(obj);
        return 0;
    }
    if (!PyMemoryView_Check(obj)) return 1;
    Py_buffer v;
    if (PyObject_GetBuffer(obj, &v, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return 1;
    }
    *s = (const char *)v.buf;
    *k = v.len;
    PyBuffer_Release(&v);
    return 0;
}

static inline int kf_w_put(kf_w *w, const char *s, Py_ssize_t k) {
    if (k == 0) return 0; /* nothing to copy: the buffer may not exist yet (memcpy from or to NULL is UB) */
    if (kf_w_reserve(w, k)) return -1;
    memcpy(w->p + w->n, s, k);
    w->n += k;
    return 0;
}

/* The gather writer's buffer appended to its pieces as bytes, and emptied: 0, or -1 (an exception set) */
static int kf_w_cut(kf_w *w) {
    PyObject *chunk = PyBytes_FromStringAndSize(w->p ? w->p : "", w->n);
    if (chunk == NULL) return -1;
    int r = PyList_Append(w->parts, chunk);
    Py_DECREF(chunk);
    w->n = 0;
    return r;
}

/* A record set of ``obj`` (bytes, or a view: kf_blob_of gave s, k): a gather writer (``parts`` set) hands a
 * large one out by reference, after the bytes written before it (the buffer then starts empty again); any
 * other writer copies it. Only formats whose writers patch nothing already written call it (FormatIR.gathers). */
#define KF_GATHER_MIN 4096
static int kf_w_set(kf_w *w, PyObject *obj, const char *s, Py_ssize_t k) {
    if (w->parts == NULL || k < KF_GATHER_MIN) return kf_w_put(w, s, k);
    if (w->n > 0 && kf_w_cut(w) < 0) return -1;
    return PyList_Append(w->parts, obj);
}

/* matches(frame, parts): whether the parts joined are the bytes of ``frame``, each compared where it lies (a
 * part that is the frame's own memory at that place, as a record set read from it and written back is, is not
 * compared); kfmt.runtime.scalars.matches is the same in Python */
static PyObject *kf_py_matches(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !PyBytes_CheckExact(args[0]) || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "matches(frame: bytes, parts: list)");
        return NULL;
    }
    const char *f = PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]), pos = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(args[1]); i++) {
        PyObject *it = PyList_GET_ITEM(args[1], i);
        Py_buffer v;
        if (PyObject_GetBuffer(it, &v, PyBUF_SIMPLE) < 0) return NULL;
        int same = v.len <= n - pos && (v.buf == (const void *)(f + pos) || memcmp(v.buf, f + pos, v.len) == 0);
        pos += v.len;
        PyBuffer_Release(&v);
        if (!same) Py_RETURN_FALSE;
    }
    return PyBool_FromLong(pos == n);
}

/* The gather writer's pieces, the buffer's last bytes appended (the list is the caller's; the buffer freed) */
static PyObject *kf_w_parts(kf_w *w) {
    PyObject *parts = NULL;
    if ((w->n == 0 && PyList_GET_SIZE(w->parts) > 0) || kf_w_cut(w) == 0) {
        parts = w->parts;
        w->parts = NULL;
    }
    kf_w_free(w); /* (the list too, when cutting failed) */
    return parts;
}

static inline void kf_put_be(char *dst, int width, uint64_t v) {
    for (int i = width - 1; i >= 0; i--) {
        dst[i] = (char)(v & 0xFF);
        v >>= 8;
    }
}

static inline int kf_uvarint_size(uint64_t v) {
    int k = 1;
    while (v >= 0x80) {
        v >>= 7;
        k++;
    }
    return k;
}

static inline void kf_uvarint_at(char *dst, uint64_t v) {
    while (v >= 0x80) {
        *dst++ = (char)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    *dst = (char)v;
}

static inline int kf_w_uvarint(kf_w *w, uint64_t v) {
    if (kf_w_reserve(w, 10)) return -1;
    if (v < 0x80) {
        w->p[w->n++] = (char)v;
        return 0;
    }
    kf_uvarint_at(w->p + w->n, v);
    w->n += kf_uvarint_size(v);
    return 0;
}

/* Kafka's tagged-field section, as kfmt.runtime.tagged.write_tagged writes it: the n named fields' bytes
 * (bufs[i], written when has[i]), and the (tag, bytes) pairs of ``unknown`` (None: none), merged in increasing
 * tag order, the count first, then each tag, size and bytes. Returns 0; 1 (fall back) when an unknown pair is
 * not an exact (int in 0..2^32-1, bytes) tuple or a tag comes twice; -1 out of memory. */
#define KF_MAX_TAGS 64
static inline int kf_w_tagged(kf_w *w, int n, const int64_t *tags, kf_w *bufs, const int *has, PyObject *unknown) {
    int64_t tg[KF_MAX_TAGS];
    const char *ptr[KF_MAX_TAGS];
    Py_ssize_t len[KF_MAX_TAGS];
    int k = 0;
    if (n > KF_MAX_TAGS) return 1; /* more named fields than this writer holds: the python backend writes them */
    for (int i = 0; i < n; i++) {
        if (!has[i]) continue;
        tg[k] = tags[i];
        ptr[k] = bufs[i].p;
        len[k++] = bufs[i].n;
    }
    if (unknown != Py_None) {
        if (!PyList_CheckExact(unknown) && !PyTuple_CheckExact(unknown)) return 1;
        Py_ssize_t m = PySequence_Fast_GET_SIZE(unknown);
        if (m > KF_MAX_TAGS - k) return 1;
        for (Py_ssize_t i = 0; i < m; i++) {
            PyObject *it = PySequence_Fast_ITEMS(unknown)[i];
            if (!PyTuple_CheckExact(it) || PyTuple_GET_SIZE(it) != 2) return 1;
            PyObject *t = PyTuple_GET_ITEM(it, 0), *d = PyTuple_GET_ITEM(it, 1);
            if (!PyLong_CheckExact(t) || !PyBytes_CheckExact(d)) return 1;
            long long v = PyLong_AsLongLong(t);
            if (v == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return 1;
            }
            if (v < 0 || v > 0xFFFFFFFFLL) return 1;
            tg[k] = v;
            ptr[k] = PyBytes_AS_STRING(d);
            len[k++] = PyBytes_GET_SIZE(d);
        }
    }
    for (int i = 1; i < k; i++) /* insertion sort by tag: a handful of tags */
        for (int j = i; j > 0 && tg[j - 1] > tg[j]; j--) {
            int64_t a = tg[j]; tg[j] = tg[j - 1]; tg[j - 1] = a;
            const char *b = ptr[j]; ptr[j] = ptr[j - 1]; ptr[j - 1] = b;
            Py_ssize_t c = len[j]; len[j] = len[j - 1]; len[j - 1] = c;
        }
    for (int i = 1; i < k; i++)
        if (tg[i] == tg[i - 1]) return 1; /* a tag written twice: the python backend says so */
    if (kf_w_uvarint(w, (uint64_t)k)) return -1;
    for (int i = 0; i < k; i++) {
        if (len[i] > 0xFFFFFFFFLL) return 1;
        if (kf_w_uvarint(w, (uint64_t)tg[i]) || kf_w_uvarint(w, (uint64_t)len[i]) || kf_w_put(w, ptr[i], len[i]))
            return -1;
    }
    return 0;
}

/* A float64's value as the bits kf_put_be writes (big-endian IEEE 754) */
static inline uint64_t kf_double_bits(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* A varint length field reserved as one byte at ``at``: write the length of what follows it, moving the
 * body when the varint needs more bytes.  Returns 0, -1 (MemoryError) or 1 (over 2 GiB: fall back). */
static int kf_w_close_varint(kf_w *w, Py_ssize_t at, int zigzag) {
    Py_ssize_t len = w->n - at - 1;
    if (len > INT32_MAX) return 1;
    uint64_t v = zigzag ? (uint64_t)((uint32_t)len << 1) : (uint64_t)len;
    int k = kf_uvarint_size(v);
    if (k > 1) {
        if (kf_w_reserve(w, k - 1)) return -1;
        memmove(w->p + at + k, w->p + at + 1, len);
        w->n += k - 1;
    }
    kf_uvarint_at(w->p + at, v);
    return 0;
}

/* A Python int as int64 (bool included, as struct.pack takes it); 1: not an int or out of range. An int of at
 * most two 30-bit digits (|v| < 2^60: offsets, millisecond timestamps, flags) is read from its digits (CPython
 * before 3.12, whose layout this is); any other through the API. */
static inline int kf_as_i64(PyObject *o, int64_t *out) {
    if (!PyLong_Check(o)) return 1;
#if PY_VERSION_HEX < 0x030C0000 && PyLong_SHIFT == 30
    {
        const digit *d = ((PyLongObject *)o)->ob_digit;
        switch (Py_SIZE(o)) {
        case 0: *out = 0; return 0;
        case 1: *out = (int64_t)d[0]; return 0;
        case -1: *out = -(int64_t)d[0]; return 0;
        case 2: *out = (int64_t)d[0] | ((int64_t)d[1] << 30); return 0;
        case -2: *out = -((int64_t)d[0] | ((int64_t)d[1] << 30)); return 0;
        default: break;
        }
    }
#endif
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 1;
    }
    *out = v;
    return 0;
}

static PyTypeObject *kf_base_record; /* kfmt.runtime.model.Record */

/* records_plain(records, need_timestamp, need_no_offset): whether ``records`` is a list of kfmt.Record (or
 * subclass) objects encode_batch may encode as they are: each with a timestamp when need_timestamp, without
 * an offset when need_no_offset (otherwise it builds new records: the current time, offsets dropped). Reads
 * the base class's slots; any doubt answers False (the Python loop decides). */
static PyObject *kf_py_records_plain(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    static Py_ssize_t off_ts = -1, off_offset = -1;
    if (nargs != 3 || !PyList_CheckExact(args[0]) || kf_base_record == NULL) Py_RETURN_FALSE;
    if (off_ts < 0 || off_offset < 0) {
        off_ts = kf_slot_offset((PyObject *)kf_base_record, "timestamp");
        off_offset = kf_slot_offset((PyObject *)kf_base_record, "offset");
        if (off_ts < 0 || off_offset < 0) {
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
    }
    int need_ts = PyObject_IsTrue(args[1]), no_offset = PyObject_IsTrue(args[2]);
    if (need_ts < 0 || no_offset < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(args[0]); i++) {
        PyObject *r = PyList_GET_ITEM(args[0], i);
        if (!PyObject_TypeCheck(r, kf_base_record)) Py_RETURN_FALSE;
        PyObject *ts = *(PyObject **)((char *)r + off_ts), *off = *(PyObject **)((char *)r + off_offset);
        if (need_ts && (ts == NULL || ts == Py_None)) Py_RETURN_FALSE;
        if (no_offset && off != NULL && off != Py_None) Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* getattr(obj, name, dflt) as the python backend reads a field another class may not have (a new
 * reference; NULL: fall back).  The runtime base class has no attributes besides its slots. */
static inline PyObject *kf_getattr(PyObject *obj, PyObject *name, PyObject *dflt) {
    if (dflt != NULL && Py_IS_TYPE(obj, kf_base_record)) return Py_NewRef(dflt);
    PyObject *r;
#if PY_VERSION_HEX >= 0x030D0000
    int found = PyObject_GetOptionalAttr(obj, name, &r);
#else
    int found = _PyObject_LookupAttr(obj, name, &r);
#endif
    if (found < 0) {
        PyErr_Clear();
        return NULL;
    }
    if (found == 0) return dflt ? Py_NewRef(dflt) : NULL;
    return r;
}

static inline PyObject *kf_own_slot(PyObject *obj, Py_ssize_t off) {
    PyObject *v = *(PyObject **)((char *)obj + off);
    return v ? Py_NewRef(v) : NULL;
}

/* obj.<name> for a slot of the runtime base class (read directly from any kfmt.Record) */
static inline PyObject *kf_base_slot(PyObject *obj, Py_ssize_t off, PyObject *name) {
    if (PyObject_TypeCheck(obj, kf_base_record)) return kf_own_slot(obj, off);
    PyObject *r = PyObject_GetAttr(obj, name);
    if (r == NULL) PyErr_Clear();
    return r;
}

/* The id of enum value ``o`` (a str) in ``table``, or -1. */
static inline int64_t kf_enum_id(PyObject *const *table, int top, PyObject *o) {
    for (int i = 0; i <= top; i++)
        if (table[i] == o) return i;
    if (!PyUnicode_Check(o)) return -1;
    for (int i = 0; i <= top; i++)
        if (table[i] && PyUnicode_Compare(table[i], o) == 0) return i;
    PyErr_Clear();
    return -1;
}

#endif

/* ------------------------------------------------------------------ Arrow columns */

#ifndef KFMT_NATIVE_COLS
#define KFMT_NATIVE_COLS

/* The record columns of the Spark source (offset, timestamp, key, value, headers) as Arrow buffers being
 * filled: int64 values, int32 offsets + data for binary and string, a byte per row for validity once a column
 * holds a null (kf_cols_null; packed into Arrow bitmaps when taken).  The Python type is kfmt.runtime.native._columns.Columns; generated decoders
 * append rows to it directly. */
typedef struct kf_cols_s {
    PyObject_HEAD
    Py_ssize_t rows, headers;
    kf_w offset, off_ok, ts, ts_ok;   /* int64 offsets, validity bytes; int64 timestamps in milliseconds */
    kf_w key_off, key, key_ok;        /* int32 offsets (rows + 1), data, validity bytes */
    kf_w val_off, val, val_ok;
    kf_w h_off;                       /* int32 list offsets into the headers (rows + 1) */
    kf_w hk_off, hk, hv_off, hv, hv_ok; /* header keys (utf-8) and values */
} kf_cols;

static inline int kf_w_i32(kf_w *w, int64_t v) {
    if (kf_w_reserve(w, 4)) return -1;
    int32_t x = (int32_t)v;
    memcpy(w->p + w->n, &x, 4);
    w->n += 4;
    return 0;
}

static inline int kf_w_i64(kf_w *w, int64_t v) {
    if (kf_w_reserve(w, 8)) return -1;
    memcpy(w->p + w->n, &v, 8);
    w->n += 8;
    return 0;
}

static inline int kf_w_u8(kf_w *w, uint8_t v) {
    if (kf_w_reserve(w, 1)) return -1;
    w->p[w->n++] = (char)v;
    return 0;
}

/* Validity bytes are written only once a column holds a null: until then ``ok->n`` is 0 and every value so
 * far is valid (most columns never hold one); the first null writes a 1 for each of the ``before`` values
 * ahead of it. So ``ok->n`` is 0 or the column's length, and a rollback to a mark keeps that true. */
static inline int kf_cols_valid(kf_w *ok) { return ok->n ? kf_w_u8(ok, 1) : 0; }

static int kf_cols_null(kf_w *ok, Py_ssize_t before) {
    if (ok->n == 0 && before > 0) {
        if (kf_w_reserve(ok, before + 1)) return -1;
        memset(ok->p, 1, (size_t)before);
        ok->n = before;
    }
    return kf_w_u8(ok, 0);
}

#if defined(__GNUC__)
#define KF_LIKELY(x) __builtin_expect(!!(x), 1)
#define KF_INLINE static inline __attribute__((always_inline))
#else
#define KF_LIKELY(x) (x)
#define KF_INLINE static inline
#endif

/* n bytes from s to d, n small as keys and header fields are: overlapping word copies instead of a call */
KF_INLINE void kf_copy(char *d, const uint8_t *s, int64_t n) {
    if (n >= 8 && n <= 16) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else if (n > 16) {
        memcpy(d, s, (size_t)n);
    } else {
        for (int64_t i = 0; i < n; i++) d[i] = (char)s[i];
    }
}

static int kf_cols_bin_slow(kf_w *off, kf_w *data, kf_w *ok, Py_ssize_t idx, const uint8_t *p, int64_t n);

/* A binary value (NULL pointer with n < 0: null), the ``idx``-th of its column, into offsets/data/validity;
 * 1: over the int32 offsets. The usual case (not null, no validity bytes yet, room in both buffers) inline. */
KF_INLINE int kf_cols_bin(kf_w *off, kf_w *data, kf_w *ok, Py_ssize_t idx, const uint8_t *p, int64_t n) {
    if (KF_LIKELY(n >= 0 && (ok == NULL || ok->n == 0) && n <= data->cap - data->n && off->n + 4 <= off->cap &&
                  data->n + n <= INT32_MAX)) {
        if (n) kf_copy(data->p + data->n, p, n); /* (never NULL + 0: the buffer may not exist yet) */
        data->n += n;
        int32_t x = (int32_t)data->n;
        memcpy(off->p + off->n, &x, 4);
        off->n += 4;
        return 0;
    }
    return kf_cols_bin_slow(off, data, ok, idx, p, n);
}

static int kf_cols_bin_slow(kf_w *off, kf_w *data, kf_w *ok, Py_ssize_t idx, const uint8_t *p, int64_t n) {
    if (n < 0) {
        if (kf_cols_null(ok, idx)) return -1;
        return kf_w_i32(off, data->n);
    }
    if (data->n + n > INT32_MAX) return 1;
    if (kf_w_put(data, (const char *)p, n) || (ok != NULL && kf_cols_valid(ok))) return -1;
    return kf_w_i32(off, data->n);
}

/* Whether p[0:n] is valid UTF-8 (Arrow strings must be; Kafka's header keys are) */
static int kf_utf8_check(const uint8_t *p, Py_ssize_t n);

KF_INLINE int kf_utf8_ok(const uint8_t *p, Py_ssize_t n) {
    uint8_t any = 0; /* ASCII, as header keys mostly are: one pass, no branch per byte */
    for (Py_ssize_t i = 0; i < n; i++) any |= p[i];
    return any < 0x80 ? 1 : kf_utf8_check(p, n);
}

static int kf_utf8_check(const uint8_t *p, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int k;
        uint32_t cp;
        if ((c & 0xE0) == 0xC0) {
            k = 1;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            k = 2;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            k = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (n - i <= k) return 0;
        for (int j = 1; j <= k; j++) {
            if ((p[i + j] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + j] & 0x3F);
        }
        if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += k + 1;
    }
    return 1;
}

/* One header of the current row; 1: not representable here (a key that is not UTF-8: the object path
 * replaces its bad bytes, as Kafka's consumer does). */
static inline int kf_cols_header(kf_cols *c, const uint8_t *kp, int64_t kn, const uint8_t *vp, int64_t vn) {
    if (!kf_utf8_ok(kp, kn)) return 1;
    int r = kf_cols_bin(&c->hk_off, &c->hk, NULL, c->headers, kp, kn);
    if (r) return r;
    r = kf_cols_bin(&c->hv_off, &c->hv, &c->hv_ok, c->headers, vp, vn);
    if (r) return r;
    c->headers++;
    return 0;
}

/* The row of one record (its headers already appended). Timestamps are kept in milliseconds as written;
 * -1 (Kafka's NO_TIMESTAMP) and a record without one (magic 0) are null. kfmt.arrow derives the Arrow
 * timestamp (microseconds) from these, null where it does not fit. */
static inline int kf_cols_row(kf_cols *c, int64_t offset, int has_ts, int64_t ts, const uint8_t *kp, int64_t kn,
                              const uint8_t *vp, int64_t vn) {
    int r;
    int ok = has_ts && ts != -1;
    if (KF_LIKELY(ok && c->off_ok.n == 0 && c->ts_ok.n == 0 && c->offset.n + 8 <= c->offset.cap &&
                  c->ts.n + 8 <= c->ts.cap)) { /* the usual row: both values, no validity bytes yet */
        memcpy(c->offset.p + c->offset.n, &offset, 8);
        c->offset.n += 8;
        memcpy(c->ts.p + c->ts.n, &ts, 8);
        c->ts.n += 8;
    } else {
        if (kf_w_i64(&c->offset, offset) || kf_cols_valid(&c->off_ok)) return -1;
        if (kf_w_i64(&c->ts, ok ? ts : 0) || (ok ? kf_cols_valid(&c->ts_ok) : kf_cols_null(&c->ts_ok, c->rows)))
            return -1;
    }
    if ((r = kf_cols_bin(&c->key_off, &c->key, &c->key_ok, c->rows, kp, kn))) return r;
    if ((r = kf_cols_bin(&c->val_off, &c->val, &c->val_ok, c->rows, vp, vn))) return r;
    if (kf_w_i32(&c->h_off, c->headers)) return -1;
    c->rows++;
    return 0;
}

/* Lengths of every buffer, to roll back a batch that was refused part way or filtered out */
#define KF_COLS_NBUF 16
static inline void kf_cols_bufs(kf_cols *c, kf_w **all) {
    kf_w *each[KF_COLS_NBUF] = {&c->offset, &c->off_ok, &c->ts,     &c->ts_ok, &c->key_off, &c->key,
                                &c->key_ok, &c->val_off, &c->val,   &c->val_ok, &c->h_off,  &c->hk_off,
                                &c->hk,     &c->hv_off,  &c->hv,    &c->hv_ok};
    memcpy(all, each, sizeof each);
}

typedef struct {
    Py_ssize_t rows, headers, n[KF_COLS_NBUF];
} kf_cols_mark;

static inline void kf_cols_mark_at(kf_cols *c, kf_cols_mark *m) {
    kf_w *all[KF_COLS_NBUF];
    kf_cols_bufs(c, all);
    m->rows = c->rows;
    m->headers = c->headers;
    for (int i = 0; i < KF_COLS_NBUF; i++) m->n[i] = all[i]->n;
}

static inline void kf_cols_rollback(kf_cols *c, const kf_cols_mark *m) {
    kf_w *all[KF_COLS_NBUF];
    kf_cols_bufs(c, all);
    c->rows = m->rows;
    c->headers = m->headers;
    for (int i = 0; i < KF_COLS_NBUF; i++) all[i]->n = m->n[i];
}

#endif
