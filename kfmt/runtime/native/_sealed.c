/* kfmt.runtime.native._sealed: the v2 batches of a record set checked whole by their CRC-32C, in C.
 *
 * entries(data) follows kfmt.log.batches.written_entries_v2 (the definition) where every entry of ``data`` is a
 * whole v2 batch whose stored CRC-32C is the CRC of everything after it: a list of (start, end, base offset, last
 * offset delta, records, partition leader epoch), one per batch, its records not read. Anything else (an entry that is
 * not a v2 batch, a length that runs past the end or is too short, a CRC that does not match, an empty set's
 * nothing is fine: []) answers None, and the definition says what it is. tests/test_sealed.py holds the two equal. */
#include "kfmt_native.h"

#define LOG_OVERHEAD 12 /* kfmt.log.resync.LOG_OVERHEAD: base offset, batch length */
#define MIN_SIZE_V2 49  /* kfmt.log.resync.MIN_SIZE[2]: a batch's bytes after its length, at the least */

static int64_t be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return (int64_t)v;
}

static int32_t be32s(const uint8_t *p) {
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

/* The entries of a set of whole, sound v2 batches (-1: not that, 0: fine) appended to ``out`` */
static int sealed(const uint8_t *p, Py_ssize_t n, PyObject *out) {
    Py_ssize_t pos = 0;
    while (pos < n) {
        if (n - pos < LOG_OVERHEAD + MIN_SIZE_V2 || p[pos + 16] != 2) return -1;
        int32_t length = be32s(p + pos + 8);
        if (length < MIN_SIZE_V2 || (Py_ssize_t)length > n - pos - LOG_OVERHEAD) return -1;
        Py_ssize_t end = pos + LOG_OVERHEAD + length;
        if (kf_crc32c(p + pos + 21, end - pos - 21) != (uint32_t)be32s(p + pos + 17)) return -1;
        int64_t base = be64(p + pos);
        int32_t delta = be32s(p + pos + 23), records = be32s(p + pos + 57), epoch = be32s(p + pos + 12);
        PyObject *one = Py_BuildValue("(nnLiii)", pos, end, (long long)base, delta, records, epoch);
        if (one == NULL || PyList_Append(out, one) < 0) {
            Py_XDECREF(one);
            return -2;
        }
        Py_DECREF(one);
        pos = end;
    }
    return 0;
}

static PyObject *sealed_entries(PyObject *self, PyObject *arg) {
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *out = PyList_New(0);
    int how = out == NULL ? -2 : sealed(b.buf, b.len, out);
    PyBuffer_Release(&b);
    if (how == 0) return out;
    Py_XDECREF(out);
    if (how == -2) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"entries", sealed_entries, METH_O,
     "entries(data): [(start, end, base offset, last offset delta, records, leader epoch)] of a set of whole v2 batches "
     "whose CRCs match, else None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sealed", "v2 batches checked by their CRC-32C, in C",
                                    -1, methods};

PyMODINIT_FUNC PyInit__sealed(void) {
    kf_init_checksums();
    return PyModule_Create(&module);
}
