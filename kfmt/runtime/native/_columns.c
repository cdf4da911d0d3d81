/* kfmt.runtime.native._columns: the Arrow column buffers native decoders fill (kf_cols in kfmt_native.h).
 * Hand-written runtime, format-independent; kfmt/log/arrow.py turns what take() returns into pyarrow arrays. */
#include "kfmt_native.h"

static int kf_cols_start(kf_cols *c) {
    return kf_w_i32(&c->key_off, 0) || kf_w_i32(&c->val_off, 0) || kf_w_i32(&c->h_off, 0) ||
           kf_w_i32(&c->hk_off, 0) || kf_w_i32(&c->hv_off, 0);
}

static void kf_cols_free(kf_cols *c) {
    kf_w *all[KF_COLS_NBUF];
    kf_cols_bufs(c, all);
    for (int i = 0; i < KF_COLS_NBUF; i++) kf_w_free(all[i]);
    c->rows = c->headers = 0;
}

static PyObject *cols_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    kf_cols *c = (kf_cols *)type->tp_alloc(type, 0);
    if (c == NULL) return NULL;
    if (kf_cols_start(c)) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

static void cols_dealloc(kf_cols *c) {
    kf_cols_free(c);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *cols_mark(kf_cols *c, PyObject *unused) {
    kf_cols_mark m;
    kf_cols_mark_at(c, &m);
    return PyBytes_FromStringAndSize((const char *)&m, sizeof m);
}

static PyObject *cols_rollback(kf_cols *c, PyObject *mark) {
    if (!PyBytes_Check(mark) || PyBytes_GET_SIZE(mark) != (Py_ssize_t)sizeof(kf_cols_mark)) {
        PyErr_SetString(PyExc_ValueError, "not a mark of these columns");
        return NULL;
    }
    kf_cols_rollback(c, (const kf_cols_mark *)PyBytes_AS_STRING(mark));
    Py_RETURN_NONE;
}

/* A row with every record column null (a quarantined region's row) */
static PyObject *cols_null_row(kf_cols *c, PyObject *unused) {
    kf_cols_mark m;
    kf_cols_mark_at(c, &m);
    if (kf_w_i64(&c->offset, 0) || kf_cols_null(&c->off_ok, c->rows) || kf_w_i64(&c->ts, 0) ||
        kf_cols_null(&c->ts_ok, c->rows) || kf_cols_bin(&c->key_off, &c->key, &c->key_ok, c->rows, NULL, -1) ||
        kf_cols_bin(&c->val_off, &c->val, &c->val_ok, c->rows, NULL, -1) || kf_w_i32(&c->h_off, c->headers)) {
        kf_cols_rollback(c, &m);
        return NULL;
    }
    c->rows++;
    Py_RETURN_NONE;
}

/* A view of bytes or None: (pointer, length or -1); 1 if it is neither */
static int bin_of(PyObject *o, const uint8_t **p, int64_t *n) {
    if (o == Py_None) {
        *p = NULL;
        *n = -1;
        return 0;
    }
    if (!PyBytes_Check(o)) return 1;
    *p = (const uint8_t *)PyBytes_AS_STRING(o);
    *n = PyBytes_GET_SIZE(o);
    return 0;
}

/* append_row(offset, timestamp_ms or None, key, value, header_keys, header_values): a record decoded as
 * objects (a legacy message, a batch the C decoder handed to the python backend), as the same columns */
static PyObject *cols_append_row(kf_cols *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || !PyList_Check(args[4]) || !PyList_Check(args[5]) ||
        PyList_GET_SIZE(args[4]) != PyList_GET_SIZE(args[5])) {
        PyErr_SetString(PyExc_TypeError, "append_row(offset, ts, key, value, header_keys, header_values)");
        return NULL;
    }
    kf_cols_mark m;
    kf_cols_mark_at(c, &m);
    long long off = args[0] == Py_None ? 0 : PyLong_AsLongLong(args[0]);
    long long ts = args[1] == Py_None ? -1 : PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    const uint8_t *kp, *vp;
    int64_t kn, vn;
    if (bin_of(args[2], &kp, &kn) || bin_of(args[3], &vp, &vn)) {
        PyErr_SetString(PyExc_TypeError, "key and value must be bytes or None");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(args[4]); i++) {
        const uint8_t *hk, *hv;
        int64_t hkn, hvn;
        if (bin_of(PyList_GET_ITEM(args[4], i), &hk, &hkn) || hkn < 0 || bin_of(PyList_GET_ITEM(args[5], i), &hv, &hvn)) {
            kf_cols_rollback(c, &m);
            PyErr_SetString(PyExc_TypeError, "header keys must be bytes, values bytes or None");
            return NULL;
        }
        int r = kf_cols_header(c, hk, hkn, hv, hvn);
        if (r) {
            kf_cols_rollback(c, &m);
            if (r > 0) PyErr_SetString(PyExc_ValueError, "a header key is not UTF-8, or the columns are full");
            return NULL;
        }
    }
    int r = kf_cols_row(c, off, args[1] != Py_None, ts, kp, kn, vp, vn);
    if (r) {
        kf_cols_rollback(c, &m);
        if (r > 0) PyErr_SetString(PyExc_ValueError, "the columns are full");
        return NULL;
    }
    if (args[0] == Py_None) { /* a record with no offset: the row just appended is null there */
        if (c->off_ok.n) {
            c->off_ok.p[c->off_ok.n - 1] = 0;
        } else if (kf_cols_null(&c->off_ok, c->rows - 1)) {
            kf_cols_rollback(c, &m);
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

/* validity bytes -> (Arrow bitmap as bytes, or None when nothing is null; null count); none written: no null */
static PyObject *bitmap(const kf_w *ok, Py_ssize_t n) {
    if (ok->n == 0) return Py_BuildValue("(On)", Py_None, (Py_ssize_t)0);
    if (ok->n != n) {
        PyErr_SetString(PyExc_SystemError, "kfmt: validity bytes out of step with their column");
        return NULL;
    }
    Py_ssize_t nulls = 0;
    for (Py_ssize_t i = 0; i < n; i++) nulls += !ok->p[i];
    if (nulls == 0) return Py_BuildValue("(On)", Py_None, (Py_ssize_t)0);
    PyObject *b = PyBytes_FromStringAndSize(NULL, (n + 7) / 8);
    if (b == NULL) return NULL;
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(b);
    memset(out, 0, (n + 7) / 8);
    for (Py_ssize_t i = 0; i < n; i++)
        if (ok->p[i]) out[i >> 3] |= (uint8_t)(1u << (i & 7));
    return Py_BuildValue("(Nn)", b, nulls);
}

/* A data or offsets buffer handed over as the bytes object it was written in, trimmed (no copy); the next
 * one starts as large as this one grew (up to KF_COLS_START_MAX), so the next rows neither copy nor regrow. */
#define KF_COLS_START_MAX (4 << 20)
static PyObject *hand_over(kf_w *w) {
    Py_ssize_t n = w->n, next = n < 256 ? 256 : n > KF_COLS_START_MAX ? KF_COLS_START_MAX : n;
    PyObject *r = w->ob;
    if (r == NULL) { /* plain memory (the buffer never grew): copied, then given a bytes object to grow in */
        r = PyBytes_FromStringAndSize(w->p ? w->p : "", n);
        kf_w_free(w);
    } else {
        w->ob = NULL;
        w->p = NULL;
        w->n = w->cap = 0;
        if (_PyBytes_Resize(&r, n) < 0) r = NULL;
    }
    if (r != NULL && kf_w_start_bytes(w, next) < 0) Py_CLEAR(r);
    return r;
}

static int put(PyObject *d, const char *k, PyObject *v) {
    if (v == NULL) return -1;
    int r = PyDict_SetItemString(d, k, v);
    Py_DECREF(v);
    return r;
}

/* The buffers of the record columns: {name: bytes} and {name_ok: (bitmap or None, null count)}, with the
 * row and header counts; the columns are empty again after it (validity bytes keep their memory) */
static PyObject *cols_take(kf_cols *c, PyObject *unused) {
    Py_ssize_t n = c->rows, h = c->headers;
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    if (put(d, "rows", PyLong_FromSsize_t(n)) || put(d, "nheaders", PyLong_FromSsize_t(h)) ||
        put(d, "offset", hand_over(&c->offset)) || put(d, "offset_ok", bitmap(&c->off_ok, n)) ||
        put(d, "timestamp", hand_over(&c->ts)) || put(d, "timestamp_ok", bitmap(&c->ts_ok, n)) ||
        put(d, "key_offsets", hand_over(&c->key_off)) || put(d, "key", hand_over(&c->key)) ||
        put(d, "key_ok", bitmap(&c->key_ok, n)) || put(d, "value_offsets", hand_over(&c->val_off)) ||
        put(d, "value", hand_over(&c->val)) || put(d, "value_ok", bitmap(&c->val_ok, n)) ||
        put(d, "headers_offsets", hand_over(&c->h_off)) || put(d, "hkey_offsets", hand_over(&c->hk_off)) ||
        put(d, "hkey", hand_over(&c->hk)) || put(d, "hvalue_offsets", hand_over(&c->hv_off)) ||
        put(d, "hvalue", hand_over(&c->hv)) || put(d, "hvalue_ok", bitmap(&c->hv_ok, h))) {
        Py_DECREF(d);
        kf_cols_free(c); /* a failure part way: start over empty */
        if (kf_cols_start(c)) PyErr_Clear();
        return NULL;
    }
    kf_w *oks[] = {&c->off_ok, &c->ts_ok, &c->key_ok, &c->val_ok, &c->hv_ok};
    for (size_t i = 0; i < sizeof oks / sizeof oks[0]; i++) oks[i]->n = 0;
    c->rows = c->headers = 0;
    if (kf_cols_start(c)) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *cols_rows(kf_cols *c, void *unused) { return PyLong_FromSsize_t(c->rows); }
static PyObject *cols_nbytes(kf_cols *c, void *unused) {
    return PyLong_FromSsize_t(c->key.n + c->val.n + c->hk.n + c->hv.n);
}

static PyMethodDef cols_methods[] = {
    {"mark", (PyCFunction)cols_mark, METH_NOARGS, "the state to roll back to"},
    {"rollback", (PyCFunction)cols_rollback, METH_O, "drop the rows appended since mark"},
    {"null_row", (PyCFunction)cols_null_row, METH_NOARGS, "a row with every record column null"},
    {"append_row", (PyCFunction)(void (*)(void))cols_append_row, METH_FASTCALL, "a record decoded as objects"},
    {"take", (PyCFunction)cols_take, METH_NOARGS, "the buffers, and start empty"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef cols_getset[] = {
    {"rows", (getter)cols_rows, NULL, "rows appended", NULL},
    {"nbytes", (getter)cols_nbytes, NULL, "bytes of keys, values and headers", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ColumnsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kfmt.runtime.native._columns.Columns",
    .tp_basicsize = sizeof(kf_cols),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Record columns (offset, timestamp, key, value, headers) as Arrow buffers being filled",
    .tp_new = cols_new,
    .tp_dealloc = (destructor)cols_dealloc,
    .tp_methods = cols_methods,
    .tp_getset = cols_getset,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_columns", "Arrow column buffers of kfmt", -1, NULL};

PyMODINIT_FUNC PyInit__columns(void) {
    if (PyType_Ready(&ColumnsType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Columns", (PyObject *)&ColumnsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
