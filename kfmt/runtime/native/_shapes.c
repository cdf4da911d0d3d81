/* kfmt.runtime.native._shapes: a batch's records shaped for JSON in C, as kfmt.log.shapes.record_dict shapes them
 * with payloads as text (`kfmt dump --json`, the record sets inside captured messages). kfmt.log.shapes is the
 * definition: what is rare (a control record, a header key that is not UTF-8, a timestamp that is not an int, a
 * sequence past 64 bits) is handed back to it whole, and tests/test_native.py holds the two equal. Hand-written
 * runtime, format-independent: it reads the attributes every record model has. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <stdint.h>
#include <string.h>

static PyObject *S_offset, *S_timestamp, *S_key, *S_value, *S_headers, *S_control, *S_records, *S_magic,
    *S_base_offset, *S_timestamp_type, *S_base_sequence, *S_hex;
static PyObject *K_position, *K_magic, *K_batch_base_offset, *K_offset, *K_timestamp, *K_time, *K_timestamp_type,
    *K_sequence, *K_key_size, *K_value_size, *K_key, *K_value, *K_headers, *K_control, *K_control_type;

/* 253402300800 s after the epoch is year 10000: past datetime's range (kfmt.log.shapes.iso says None) */
#define KF_SECONDS_MAX 253402300799LL

/* Days since 1970-01-01 to a civil date (proleptic Gregorian; days >= 0 here) */
static void kf_civil(long long days, int *y, int *m, int *d) {
    long long z = days + 719468, era = z / 146097;
    long long doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

static void kf_digits(char *at, long long v, int n) {
    for (int i = n - 1; i >= 0; i--, v /= 10) at[i] = (char)('0' + v % 10);
}

/* A millisecond timestamp (>= 0, within datetime's range) as "YYYY-MM-DDTHH:MM:SS.mmmZ", 24 characters */
static void kf_iso_chars(char *buf, long long ts) {
    long long s = ts / 1000, days = s / 86400, rem = s % 86400;
    int y, m, d;
    memcpy(buf, "0000-00-00T00:00:00.000Z", 24);
    kf_civil(days, &y, &m, &d);
    kf_digits(buf, y, 4), kf_digits(buf + 5, m, 2), kf_digits(buf + 8, d, 2);
    kf_digits(buf + 11, rem / 3600, 2), kf_digits(buf + 14, rem / 60 % 60, 2), kf_digits(buf + 17, rem % 60, 2);
    kf_digits(buf + 20, ts % 1000, 3);
}

static PyObject *kf_iso(long long ts) {
    char buf[24];
    kf_iso_chars(buf, ts);
    return PyUnicode_FromStringAndSize(buf, 24);
}

/* A key, value or header value: text when UTF-8, else {"hex": ...}; NULL with no error set: not bytes (rare) */
static PyObject *kf_payload(PyObject *b) {
    if (b == Py_None) return Py_NewRef(Py_None);
    if (!PyBytes_CheckExact(b)) return NULL;
    PyObject *text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), "strict");
    if (text != NULL || !PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return text;
    PyErr_Clear();
    PyObject *hex = PyObject_CallMethodNoArgs(b, S_hex);
    if (hex == NULL) return NULL;
    PyObject *out = Py_BuildValue("{sN}", "hex", hex);
    return out;
}

/* The headers as [[key, value], ...]; NULL with no error set where one is rare (the definition shapes it) */
static PyObject *kf_headers(PyObject *hs) {
    if (!PyList_CheckExact(hs)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(hs);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *h = PyList_GET_ITEM(hs, i), *k, *v, *pair;
        if (!PyTuple_CheckExact(h) || PyTuple_GET_SIZE(h) != 2) goto rare;
        k = PyTuple_GET_ITEM(h, 0);
        if (!PyUnicode_CheckExact(k) || PyUnicode_AsUTF8AndSize(k, NULL) == NULL) {  // surrogate escapes: not UTF-8
            PyErr_Clear();
            goto rare;
        }
        if ((v = kf_payload(PyTuple_GET_ITEM(h, 1))) == NULL) goto rare;  // (an error, or a value that is not bytes)
        if ((pair = PyList_New(2)) == NULL) {
            Py_DECREF(v);
            goto rare;
        }
        PyList_SET_ITEM(pair, 0, Py_NewRef(k));
        PyList_SET_ITEM(pair, 1, v);
        PyList_SET_ITEM(out, i, pair);
    }
    return out;
rare:
    Py_DECREF(out);
    return NULL;
}

/* The batch's fields every record's shape takes */
typedef struct {
    PyObject *magic, *base_offset, *timestamp_type;
    long long base, base_sequence;
} kf_batch;

/* A record's producer sequence (kfmt.log.shapes.sequence_at); 0 when it does not fit 64 bits (rare) */
static int kf_sequence(const kf_batch *b, long long offset, long long *out) {
    if (b->base_sequence < 0) {
        *out = -1;
        return 1;
    }
    long long delta, s;
    if (__builtin_sub_overflow(offset, b->base, &delta) || __builtin_add_overflow(b->base_sequence, delta, &s)) return 0;
    s %= 0x80000000LL;
    *out = s < 0 ? s + 0x80000000LL : s;
    return 1;
}

static PyObject *kf_size(PyObject *b) { return PyLong_FromSsize_t(b == Py_None ? -1 : PyBytes_GET_SIZE(b)); }

/* Fill d from the record's time on; 1 done, 0 rare (no error set), -1 error */
static int kf_fill_rest(PyObject *d, const kf_batch *b, long long offset, PyObject *ts, PyObject *key, PyObject *value,
                        PyObject *hs) {
    long long t = -1, seq;
    if (ts != Py_None) {
        t = PyLong_AsLongLong(ts);
        if (t == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
    }
    if (!kf_sequence(b, offset, &seq)) return 0;
    PyObject *k = kf_payload(key), *v = k != NULL ? kf_payload(value) : NULL, *h = v != NULL ? kf_headers(hs) : NULL;
    if (h == NULL) {
        Py_XDECREF(k);
        Py_XDECREF(v);
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *keys[] = {K_time, K_timestamp_type, K_sequence, K_key_size, K_value_size, K_key, K_value, K_headers,
                        K_control, K_control_type};
    PyObject *vals[] = {t < 0 || t / 1000 > KF_SECONDS_MAX ? Py_NewRef(Py_None) : kf_iso(t), Py_NewRef(b->timestamp_type),
                        PyLong_FromLongLong(seq), kf_size(key), kf_size(value), k, v, h, Py_NewRef(Py_None),
                        Py_NewRef(Py_None)};
    int bad = 0;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {  // each value's reference given up, whatever happens
        if (!bad && (vals[i] == NULL || PyDict_SetItem(d, keys[i], vals[i]) < 0)) bad = 1;
        Py_XDECREF(vals[i]);
    }
    return bad ? -1 : 1;
}

/* A record model's fields read from its slots where its class keeps them there (kfmt's Record: __slots__), else
 * by attribute: the class last seen, and where its six fields lie (0: not in slots) */
static PyTypeObject *slot_type;
static Py_ssize_t slot_off[6];

static void kf_learn_slots(PyTypeObject *t, PyObject **names) {
    slot_type = t;
    for (int i = 0; i < 6; i++) {
        PyObject *d = PyObject_GetAttr((PyObject *)t, names[i]);
        slot_off[i] = 0;
        if (d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX)
            slot_off[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_XDECREF(d);
        PyErr_Clear();
    }
}

/* The record's offset, timestamp, key, value, headers and control in ``at``: borrowed (0) from its slots, or new
 * references (1) by attribute; -1 error */
static int kf_fields(PyObject *r, PyObject **at, PyObject **names) {
    if (Py_TYPE(r) != slot_type) kf_learn_slots(Py_TYPE(r), names);
    int i = 0;
    for (; i < 6 && slot_off[i]; i++)
        if ((at[i] = *(PyObject **)((char *)r + slot_off[i])) == NULL) break;
    if (i == 6) return 0;
    for (i = 0; i < 6; i++)
        if ((at[i] = PyObject_GetAttr(r, names[i])) == NULL) {
            while (i--) Py_DECREF(at[i]);
            return -1;
        }
    return 1;
}

/* One record's dict; NULL with no error set: rare (the caller asks the definition) */
static PyObject *kf_record(PyObject *head, PyObject *pos, const kf_batch *b, PyObject *r) {
    PyObject *at[6] = {NULL}, *d = NULL;
    PyObject *names[6] = {S_offset, S_timestamp, S_key, S_value, S_headers, S_control};
    int owned = kf_fields(r, at, names), done = 0;
    if (owned < 0) return NULL;
    PyObject *off = at[0], *ts = at[1], *key = at[2], *value = at[3];
    if (at[5] != Py_None || !PyLong_CheckExact(off) || !(ts == Py_None || PyLong_CheckExact(ts)) ||
        !(key == Py_None || PyBytes_CheckExact(key)) || !(value == Py_None || PyBytes_CheckExact(value)))
        goto out;  // rare: no error set
    long long offset = PyLong_AsLongLong(off);
    if (offset == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        goto out;
    }
    d = head == Py_None ? _PyDict_NewPresized(15) : PyDict_Copy(head);
    if (d == NULL || PyDict_SetItem(d, K_position, pos) || PyDict_SetItem(d, K_magic, b->magic) ||
        PyDict_SetItem(d, K_batch_base_offset, b->base_offset) || PyDict_SetItem(d, K_offset, off) ||
        PyDict_SetItem(d, K_timestamp, ts))
        goto out;
    done = kf_fill_rest(d, b, offset, ts, key, value, at[4]);
out:
    if (owned)
        for (int i = 0; i < 6; i++) Py_XDECREF(at[i]);
    if (done == 1) return d;
    Py_XDECREF(d);
    return NULL;
}

static int kf_batch_of(PyObject *batch, kf_batch *b) {
    PyObject *seq = NULL;
    b->magic = PyObject_GetAttr(batch, S_magic);
    b->base_offset = b->magic ? PyObject_GetAttr(batch, S_base_offset) : NULL;
    b->timestamp_type = b->base_offset ? PyObject_GetAttr(batch, S_timestamp_type) : NULL;
    seq = b->timestamp_type ? PyObject_GetAttr(batch, S_base_sequence) : NULL;
    if (seq == NULL) return -1;
    b->base = PyLong_AsLongLong(b->base_offset);
    b->base_sequence = PyLong_AsLongLong(seq);
    Py_DECREF(seq);
    return PyErr_Occurred() ? -1 : 0;
}

static void kf_batch_free(kf_batch *b) {
    Py_XDECREF(b->magic);
    Py_XDECREF(b->base_offset);
    Py_XDECREF(b->timestamp_type);
}

/* records(head, position, batch, rare) -> [dict, ...]: each record of ``batch`` shaped, ``head`` (a dict, or None)
 * first in each; ``rare(record)`` shapes one this cannot */
static PyObject *shapes_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "records(head, position, batch, rare)");
        return NULL;
    }
    PyObject *head = args[0], *pos = args[1], *rare = args[3], *out = NULL, *recs;
    kf_batch b = {0};
    if (head != Py_None && !PyDict_CheckExact(head)) {
        PyErr_SetString(PyExc_TypeError, "head is a dict or None");
        return NULL;
    }
    int all_rare = kf_batch_of(args[2], &b) < 0;  // (a model whose batch fields are not ints: the definition's)
    if (all_rare) PyErr_Clear();
    recs = PyObject_GetAttr(args[2], S_records);
    if (recs == NULL) goto done;
    PyObject *seq = PySequence_Fast(recs, "a batch's records are a sequence");
    Py_DECREF(recs);
    if (seq == NULL) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *r = PySequence_Fast_GET_ITEM(seq, i), *d = all_rare ? NULL : kf_record(head, pos, &b, r);
        if (d == NULL && !PyErr_Occurred()) d = PyObject_CallOneArg(rare, r);
        if (d == NULL) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, d);
    }
    Py_DECREF(seq);
done:
    kf_batch_free(&b);
    return out;
}

/* ---- the same records as JSON text (kfmt.runtime.jsonl writes it inside the message around it, as is) ---- */

typedef struct {
    char *p;
    size_t n, cap;
} kf_buf;

static int kf_grow(kf_buf *o, size_t more) {
    if (o->n + more <= o->cap) return 0;
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->n + more) cap *= 2;
    char *p = PyMem_Realloc(o->p, cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->p = p, o->cap = cap;
    return 0;
}

static int kf_put(kf_buf *o, const char *s, size_t n) {
    if (kf_grow(o, n)) return -1;
    memcpy(o->p + o->n, s, n);
    o->n += n;
    return 0;
}

#define KF_LIT(o, s) kf_put(o, s, sizeof(s) - 1)

static int kf_int(kf_buf *o, long long v) {
    char tmp[24];
    int i = 24;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do tmp[--i] = (char)('0' + u % 10); while (u /= 10);
    if (v < 0) tmp[--i] = '-';
    return kf_put(o, tmp + i, 24 - i);
}

/* An int object as digits; 0 when it is not an int of 64 bits (rare), -1 error */
static int kf_int_obj(kf_buf *o, PyObject *v, int none_ok) {
    if (v == Py_None && none_ok) return KF_LIT(o, "null") ? -1 : 1;
    if (!PyLong_CheckExact(v)) return 0;
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return kf_int(o, x) ? -1 : 1;
}

/* The length of the well-formed UTF-8 sequence at s (as Python's strict decoder reads it), 0 if ill-formed */
static size_t kf_utf8_seq(const unsigned char *s, size_t left) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (n == 0 || n > left) return 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (c == 0xE0) lo = 0xA0;
    else if (c == 0xED) hi = 0x9F;  // (not an encoded surrogate)
    else if (c == 0xF0) lo = 0x90;
    else if (c == 0xF4) hi = 0x8F;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return n;
}

/* Whether the 8 bytes at s are ASCII other than control characters, quotes and backslashes (copied as they are) */
static inline int kf_plain8(const unsigned char *s) {
    uint64_t v;
    memcpy(&v, s, 8);
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t ctl = (v - ones * 0x20) & ~v;                   // a byte below 0x20
    uint64_t quote = ((v ^ (ones * '"')) - ones) & ~(v ^ (ones * '"'));
    uint64_t slash = ((v ^ (ones * '\\')) - ones) & ~(v ^ (ones * '\\'));
    return ((v | ctl | quote | slash) & highs) == 0;
}

static int kf_utf8(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t v;
            memcpy(&v, s + i, 8);
            if ((v & 0x8080808080808080ULL) == 0) {
                i += 8;
                continue;
            }
        }
        size_t k = s[i] < 0x80 ? 1 : kf_utf8_seq(s + i, n - i);
        if (k == 0) return 0;
        i += k;
    }
    return 1;
}

/* Text (well-formed UTF-8) as a JSON string: quotes, backslashes and control characters escaped */
static int kf_str(kf_buf *o, const unsigned char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    if (kf_grow(o, n * 6 + 2)) return -1;
    char *w = o->p + o->n;
    *w++ = '"';
    for (size_t i = 0; i < n;) {
        if (i + 8 <= n && kf_plain8(s + i)) {
            memcpy(w, s + i, 8);
            w += 8, i += 8;
            continue;
        }
        unsigned char c = s[i++];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *w++ = (char)c;
            continue;
        }
        *w++ = '\\';
        switch (c) {
            case '"': *w++ = '"'; break;
            case '\\': *w++ = '\\'; break;
            case '\n': *w++ = 'n'; break;
            case '\r': *w++ = 'r'; break;
            case '\t': *w++ = 't'; break;
            case '\b': *w++ = 'b'; break;
            case '\f': *w++ = 'f'; break;
            default: *w++ = 'u', *w++ = '0', *w++ = '0', *w++ = hex[c >> 4], *w++ = hex[c & 15];
        }
    }
    *w++ = '"';
    o->n = (size_t)(w - o->p);
    return 0;
}

/* A key, value or header value: null, its text, or {"hex":"..."}; 0 when not bytes (rare) */
static int kf_payload_json(kf_buf *o, PyObject *b) {
    static const char hex[] = "0123456789abcdef";
    if (b == Py_None) return KF_LIT(o, "null") ? -1 : 1;
    if (!PyBytes_CheckExact(b)) return 0;
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(b);
    size_t n = (size_t)PyBytes_GET_SIZE(b), i = 0;
    while (i + 8 <= n && kf_plain8(s + i)) i += 8;  // text that needs no escape, the common case: copied whole
    while (i < n && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\') i++;
    if (i == n) {
        if (kf_grow(o, n + 2)) return -1;
        o->p[o->n++] = '"';
        memcpy(o->p + o->n, s, n);
        o->n += n;
        o->p[o->n++] = '"';
        return 1;
    }
    if (kf_utf8(s, n)) return kf_str(o, s, n) ? -1 : 1;
    if (KF_LIT(o, "{\"hex\":\"") || kf_grow(o, 2 * n + 2)) return -1;
    for (size_t i = 0; i < n; i++) o->p[o->n++] = hex[s[i] >> 4], o->p[o->n++] = hex[s[i] & 15];
    return KF_LIT(o, "\"}") ? -1 : 1;
}

static int kf_headers_json(kf_buf *o, PyObject *hs) {
    if (!PyList_CheckExact(hs)) return 0;
    if (KF_LIT(o, "[")) return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(hs); i++) {
        PyObject *h = PyList_GET_ITEM(hs, i), *k;
        if (!PyTuple_CheckExact(h) || PyTuple_GET_SIZE(h) != 2 || !PyUnicode_CheckExact(k = PyTuple_GET_ITEM(h, 0)))
            return 0;
        Py_ssize_t kn;
        const char *ks = PyUnicode_AsUTF8AndSize(k, &kn);
        if (ks == NULL) {  // surrogate escapes: a key that is not UTF-8 (rare)
            PyErr_Clear();
            return 0;
        }
        if ((i && KF_LIT(o, ",")) || KF_LIT(o, "[") || kf_str(o, (const unsigned char *)ks, (size_t)kn) ||
            KF_LIT(o, ","))
            return -1;
        int r = kf_payload_json(o, PyTuple_GET_ITEM(h, 1));
        if (r <= 0) return r;
        if (KF_LIT(o, "]")) return -1;
    }
    return KF_LIT(o, "]") ? -1 : 1;
}

/* The record's fields from the offset on; 1 done, 0 rare, -1 error */
static int kf_record_fields(kf_buf *o, const kf_batch *b, PyObject *off, PyObject *ts, PyObject *key, PyObject *value,
                            PyObject *hs) {
    long long offset, t = -1, seq;
    if (!PyLong_CheckExact(off) || (ts != Py_None && !PyLong_CheckExact(ts))) return 0;
    offset = PyLong_AsLongLong(off);
    if (ts != Py_None && !(offset == -1 && PyErr_Occurred())) t = PyLong_AsLongLong(ts);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (!kf_sequence(b, offset, &seq)) return 0;
    if (KF_LIT(o, ",\"offset\":") || kf_int(o, offset) || KF_LIT(o, ",\"timestamp\":") ||
        (ts == Py_None ? KF_LIT(o, "null") : kf_int(o, t)) || KF_LIT(o, ",\"time\":"))
        return -1;
    if (t < 0 || t / 1000 > KF_SECONDS_MAX ? KF_LIT(o, "null") : kf_grow(o, 26)) return -1;
    if (t >= 0 && t / 1000 <= KF_SECONDS_MAX) {
        o->p[o->n++] = '"';
        kf_iso_chars(o->p + o->n, t);
        o->n += 24;
        o->p[o->n++] = '"';
    }
    int r;
    if (KF_LIT(o, ",\"timestamp_type\":") || (r = kf_int_obj(o, b->timestamp_type, 1)) < 0) return -1;
    if (r == 0) return 0;
    if (KF_LIT(o, ",\"sequence\":") || kf_int(o, seq) || KF_LIT(o, ",\"key_size\":") ||
        kf_int(o, key == Py_None ? -1 : PyBytes_GET_SIZE(key)) || KF_LIT(o, ",\"value_size\":") ||
        kf_int(o, value == Py_None ? -1 : PyBytes_GET_SIZE(value)) || KF_LIT(o, ",\"key\":"))
        return -1;
    if ((r = kf_payload_json(o, key)) <= 0) return r;
    if (KF_LIT(o, ",\"value\":")) return -1;
    if ((r = kf_payload_json(o, value)) <= 0) return r;
    if (KF_LIT(o, ",\"headers\":")) return -1;
    if ((r = kf_headers_json(o, hs)) <= 0) return r;
    return KF_LIT(o, ",\"control\":null,\"control_type\":null}") ? -1 : 1;
}

/* One record's object appended; 1 done, 0 rare (nothing appended), -1 error */
/* One record's object appended after the batch's ``head`` ({"position":..,"magic":..,"batch_base_offset":..);
 * 1 done, 0 rare (nothing appended), -1 error */
static int kf_record_json(kf_buf *o, const kf_buf *head, const kf_batch *b, PyObject *r) {
    PyObject *at[6] = {NULL};
    PyObject *names[6] = {S_offset, S_timestamp, S_key, S_value, S_headers, S_control};
    size_t mark = o->n;
    int owned = kf_fields(r, at, names), done = 0;
    if (owned < 0) return -1;
    if (at[5] != Py_None || !(at[2] == Py_None || PyBytes_CheckExact(at[2])) ||
        !(at[3] == Py_None || PyBytes_CheckExact(at[3])))
        goto out;  // a control record, a payload that is not bytes: rare
    done = kf_put(o, head->p, head->n) ? -1 : kf_record_fields(o, b, at[0], at[1], at[2], at[3], at[4]);
out:
    if (owned)
        for (int i = 0; i < 6; i++) Py_XDECREF(at[i]);
    if (done <= 0) o->n = mark;
    return done;
}

/* What every record of a batch begins with (``prefix``: the keys before its position, each with its comma);
 * 0 when a field is not an int (rare: each record is then) */
static int kf_head(kf_buf *h, const char *prefix, Py_ssize_t nprefix, PyObject *pos, const kf_batch *b) {
    int k;
    if (KF_LIT(h, "{") || kf_put(h, prefix, (size_t)nprefix) || KF_LIT(h, "\"position\":") ||
        (k = kf_int_obj(h, pos, 0)) <= 0 || KF_LIT(h, ",\"magic\":") ||
        (k = kf_int_obj(h, b->magic, 0)) <= 0 || KF_LIT(h, ",\"batch_base_offset\":") ||
        (k = kf_int_obj(h, b->base_offset, 0)) <= 0)
        return PyErr_Occurred() ? -1 : 0;
    return 1;
}

/* records_json(position, batch, rare[, prefix]) -> bytes: the JSON array of the batch's records as records(None,
 * ...) gives them; ``rare(record)`` gives the JSON text of one this cannot write. With ``prefix`` (bytes: keys,
 * each with its comma, put before the position in every record): JSON lines instead, a record each */
static PyObject *shapes_records_json(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 && !(nargs == 4 && PyBytes_Check(args[3]))) {
        PyErr_SetString(PyExc_TypeError, "records_json(position, batch, rare[, prefix])");
        return NULL;
    }
    int lines = nargs == 4;
    const char *prefix = lines ? PyBytes_AS_STRING(args[3]) : "";
    Py_ssize_t nprefix = lines ? PyBytes_GET_SIZE(args[3]) : 0;
    PyObject *pos = args[0], *rare = args[2], *out = NULL, *recs, *seq = NULL;
    kf_batch b = {0};
    kf_buf o = {0}, head = {0};
    int all_rare = kf_batch_of(args[1], &b) < 0;
    if (all_rare) PyErr_Clear();
    if (!all_rare) {
        int k = kf_head(&head, prefix, nprefix, pos, &b);
        if (k < 0) goto done;
        all_rare = k == 0;
    }
    if ((recs = PyObject_GetAttr(args[1], S_records)) == NULL) goto done;
    seq = PySequence_Fast(recs, "a batch's records are a sequence");
    Py_DECREF(recs);
    if (seq == NULL || (!lines && KF_LIT(&o, "["))) goto done;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *r = PySequence_Fast_GET_ITEM(seq, i);
        if (!lines && i && KF_LIT(&o, ",")) goto done;
        int k = all_rare ? 0 : kf_record_json(&o, &head, &b, r);
        if (k < 0) goto done;
        if (k == 0) {
            PyObject *text = PyObject_CallOneArg(rare, r);
            if (text == NULL) goto done;
            if (!PyBytes_Check(text)) {
                Py_DECREF(text);
                PyErr_SetString(PyExc_TypeError, "rare() gives bytes");
                goto done;
            }
            int bad = kf_put(&o, PyBytes_AS_STRING(text), (size_t)PyBytes_GET_SIZE(text));
            Py_DECREF(text);
            if (bad) goto done;
        }
        if (lines && KF_LIT(&o, "\n")) goto done;
    }
    if (!(lines ? 0 : KF_LIT(&o, "]"))) out = PyBytes_FromStringAndSize(o.p, (Py_ssize_t)o.n);
done:
    Py_XDECREF(seq);
    kf_batch_free(&b);
    PyMem_Free(o.p);
    PyMem_Free(head.p);
    return out;
}

static PyMethodDef methods[] = {
    {"records", (PyCFunction)(void (*)(void))shapes_records, METH_FASTCALL,
     "records(head, position, batch, rare): each record of batch as kfmt.log.shapes.record_dict shapes it (utf8)"},
    {"records_json", (PyCFunction)(void (*)(void))shapes_records_json, METH_FASTCALL,
     "records_json(position, batch, rare): the JSON array of records(None, position, batch, ...), as bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_shapes", "records shaped for JSON, in C", -1, methods};

static int intern(PyObject **at, const char *s) { return (*at = PyUnicode_InternFromString(s)) == NULL ? -1 : 0; }

PyMODINIT_FUNC PyInit__shapes(void) {
    if (intern(&S_offset, "offset") || intern(&S_timestamp, "timestamp") || intern(&S_key, "key") ||
        intern(&S_value, "value") || intern(&S_headers, "headers") || intern(&S_control, "control") ||
        intern(&S_records, "records") || intern(&S_magic, "magic") || intern(&S_base_offset, "base_offset") ||
        intern(&S_timestamp_type, "timestamp_type") || intern(&S_base_sequence, "base_sequence") ||
        intern(&S_hex, "hex") || intern(&K_position, "position") || intern(&K_batch_base_offset, "batch_base_offset") ||
        intern(&K_time, "time") || intern(&K_sequence, "sequence") || intern(&K_key_size, "key_size") ||
        intern(&K_value_size, "value_size") || intern(&K_control_type, "control_type"))
        return NULL;
    K_magic = S_magic, K_offset = S_offset, K_timestamp = S_timestamp, K_timestamp_type = S_timestamp_type;
    K_key = S_key, K_value = S_value, K_headers = S_headers, K_control = S_control;
    return PyModule_Create(&module);
}
