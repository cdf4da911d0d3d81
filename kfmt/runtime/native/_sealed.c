/* kfmt.runtime.native._sealed: the v2 batches of a record set checked whole by their CRC-32C, in C.
 *
 * entries(data) follows kfmt.log.batches.written_entries_v2 (the definition) where every entry of ``data`` is a
 * whole v2 batch whose stored CRC-32C is the CRC of everything after it: a list of (start, end, base offset, last
 * offset delta, records, partition leader epoch), one per batch, its records not read. Anything else (an entry that is
 * not a v2 batch, a length that runs past the end or is too short, a CRC that does not match, an empty set's
 * nothing is fine: []) answers None, and the definition says what it is. tests/test_sealed.py holds the two equal. */
#include "kfmt_native.h"

#include "sealed.h"

typedef struct {
    const uint8_t *p;
    PyObject *out;
} entries_t;

/* One sound batch's entry appended (0), or -2 (an error) */
static int entry(void *arg, Py_ssize_t pos, Py_ssize_t end) {
    entries_t *e = arg;
    const uint8_t *p = e->p;
    int64_t base = kf_i64(p + pos);
    int32_t delta = (int32_t)kf_i32(p + pos + 23), records = (int32_t)kf_i32(p + pos + 57);
    PyObject *one = Py_BuildValue("(nnLiii)", pos, end, (long long)base, delta, records, (int32_t)kf_i32(p + pos + 12));
    if (one == NULL || PyList_Append(e->out, one) < 0) {
        Py_XDECREF(one);
        return -2;
    }
    Py_DECREF(one);
    return 0;
}

/* The entries of a set of whole, sound v2 batches (-1: not that, 0: fine, -2: an error) appended to ``out`` */
static int sealed(const uint8_t *p, Py_ssize_t n, PyObject *out) {
    entries_t e = {p, out};
    Py_ssize_t got = kf_sealed(p, n, entry, &e);
    return got < 0 ? (int)got : 0;
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
