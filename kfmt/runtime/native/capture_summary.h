/* kfmt.runtime.native._capture's summarize(): `kfmt dump --summary` of a capture counted in one pass in C, where
 * the capture is plain; anything else hands the whole capture back to the definition (kfmt.tools.dump.capture, which
 * this follows; tests/test_capture_summary.py holds the two equal on every capture the tests have, damaged ones too).
 *
 * The directions are put together as read() puts them together (the same code, _capture.c), but in memory and a
 * frame at a time: each frame is read as soon as its last byte comes and let go, so memory holds the frames being
 * put together and the requests awaiting an answer, not the capture. A request is paired with its response by
 * correlation id (kfmt.protocol.conversation's rules). Each message's header and body are walked by its format's
 * check walk (the generated C, through the module's WALK capsule) with a sink (kfmt_native.h's kf_facts): its error
 * codes, its record sets (each checked by its batches' CRC-32C: sealed.h) and the strings the summary reads
 * (kfmt.protocol.facts). A message the walk declines, a record set that is not whole sound v2 batches, and the APIs
 * the plan says so of (ApiVersions) are handed to Python whole as they come (handed()), which reads them as the
 * definition does.
 *
 * Handed back to the definition (summarize answers None): a connection the capture did not see opened (no SYN), a
 * hole, a frame cut by the end of the capture or of an impossible size, a request Kafka has no API or version for,
 * SASL's raw tokens, a response to no request waiting (or to one the definition's window would have let go), a
 * correlation id used again while awaited. */

#define LARGEST_FRAME (100 << 20) /* kfmt.protocol.conversation.LARGEST_FRAME */
#define WINDOW_COUNT 1000         /* kfmt.protocol.conversation.WINDOW */
#define WINDOW_BYTES (64LL << 20)
#define PLAN_KEYS 256
#define PLAN_VERSIONS 64

typedef Py_ssize_t (*walk_fn)(kf_ctx *, const uint8_t *, Py_ssize_t, Py_ssize_t, int64_t);

typedef struct {
    int state; /* 1 walked here, 2 handed to Python, 3 the capture handed back */
    walk_fn header, body;
    int64_t header_version;
    const uint8_t *hwant, *bwant;
    Py_ssize_t nhwant, nbwant, walk_max;
    int named; /* what the walk told of the body is kept (the summary reads names from it) */
    PyObject *keep;
} plan_t;

typedef struct {
    int32_t cid;
    int used;
    int16_t key, version;
    double time;
    int64_t ordinal, bytes_at;
} pending_t;

typedef struct conn_s {
    Py_ssize_t index;
    flow_t *client; /* NULL: not known yet */
    int64_t ordinal, bytes; /* requests so far, and the bytes of the frames of both directions */
    pending_t *pend;
    size_t npend, cappend;
    int has_bytes;
} conn_t;

typedef struct side_s {
    conn_t *conn;
    int ignored; /* a connection --port leaves aside */
    uint8_t head[4];
    int nhead;
    int64_t size; /* the frame being put together (-1: its size is being read) */
    uint8_t *buf;
    size_t n, cap;
    double time; /* of the packet its first byte came in */
} side_t;

typedef struct {
    int64_t conn, key, version, requests, responses, bytes;
    int64_t *errors; /* (code, count) pairs */
    size_t nerrors, caperrors;
    double *lat;
    size_t nlat, caplat;
} row_t;

typedef struct summ_s {
    int bail;
    long port; /* --port: the connections of that port only (-1: every one) */
    PyObject *plan_for, *handed, *names;
    plan_t **plans; /* [kind][key][version] */
    kf_ctx cx;
    kf_facts fx;
    conn_t **conns;
    size_t nconns, capconns;
    row_t *rows;
    size_t nrows, caprows;
    int64_t sealed;
    uint8_t *scratch;
    size_t capscratch;
} summ_t;

static int sum_bail(summ_t *s) {
    s->bail = 1;
    return 1;
}

/* ---- plans, asked of Python once per kind, API and version */

static plan_t *plan_of(summ_t *s, int response, int key, int version) {
    if (key < 0 || key >= PLAN_KEYS || version < 0 || version >= PLAN_VERSIONS) return NULL;
    plan_t **slot = &s->plans[(response * PLAN_KEYS + key) * PLAN_VERSIONS + version];
    if (*slot != NULL) return *slot;
    PyObject *got = PyObject_CallFunction(s->plan_for, "sii", response ? "response" : "request", key, version);
    if (got == NULL) return NULL;
    plan_t *p = PyMem_Calloc(1, sizeof(plan_t));
    if (p == NULL) {
        Py_DECREF(got);
        PyErr_NoMemory();
        return NULL;
    }
    p->keep = got;
    if (got == Py_None) p->state = 3;
    else if (got == Py_False) p->state = 2;
    else {
        PyObject *hcap, *bcap;
        Py_buffer hw, bw; /* (bytes the plan keeps alive) */
        long long hv, walk_max;
        if (!PyArg_ParseTuple(got, "OLy*Oy*Lp", &hcap, &hv, &hw, &bcap, &bw, &walk_max, &p->named)) {
            PyMem_Free(p);
            Py_DECREF(got);
            return NULL;
        }
        p->header = (walk_fn)PyCapsule_GetPointer(hcap, "kfmt.walk");
        p->body = (walk_fn)PyCapsule_GetPointer(bcap, "kfmt.walk");
        p->hwant = hw.buf, p->nhwant = hw.len, p->bwant = bw.buf, p->nbwant = bw.len;
        PyBuffer_Release(&hw), PyBuffer_Release(&bw);
        p->header_version = hv, p->walk_max = (Py_ssize_t)walk_max, p->state = 1;
        if (p->header == NULL || p->body == NULL) {
            PyMem_Free(p);
            Py_DECREF(got);
            return NULL;
        }
    }
    return *slot = p;
}

/* ---- what is counted: a row per connection, API and version */

static row_t *row_of(summ_t *s, int64_t conn, int key, int version) {
    for (size_t i = s->nrows; i-- > 0;) { /* (few rows; the last ones are the likely ones) */
        row_t *r = &s->rows[i];
        if (r->conn == conn && r->key == key && r->version == version) return r;
    }
    if (grow((void **)&s->rows, &s->caprows, s->nrows + 1, sizeof(row_t))) return NULL;
    row_t *r = &s->rows[s->nrows++];
    memset(r, 0, sizeof *r);
    r->conn = conn, r->key = key, r->version = version;
    return r;
}

static int row_error(row_t *r, int64_t code) {
    for (size_t i = 0; i < r->nerrors; i++)
        if (r->errors[2 * i] == code) return r->errors[2 * i + 1]++, 0;
    if (grow((void **)&r->errors, &r->caperrors, 2 * (r->nerrors + 1), sizeof(int64_t))) return -1;
    r->errors[2 * r->nerrors] = code, r->errors[2 * r->nerrors + 1] = 1;
    r->nerrors++;
    return 0;
}

/* ---- a message handed to Python whole, at once: handed(client, broker, place, response, key, version, frame,
 * latency or None) counts it, or answers False (it says something of itself: the capture is handed back) */

static int defer(summ_t *s, conn_t *c, int64_t ordinal, int response, int key, int version, const uint8_t *p,
                 size_t n, double latency) {
    long long at = ((long long)c->index << 32) | (2 * ordinal + response);
    flow_t *cl = c->client, *sv = cl->rev;
    PyObject *lat = latency == latency ? PyFloat_FromDouble(latency) : Py_NewRef(Py_None);
    PyObject *broker = sv != NULL ? sv->src : cl->dst;
    PyObject *got = lat == NULL ? NULL
                                : PyObject_CallFunction(s->handed, "OOLiiiy#N", cl->src, broker, at, response, key,
                                                        version, (const char *)p, (Py_ssize_t)n, lat);
    if (got == NULL) return -1;
    int fine = PyObject_IsTrue(got);
    Py_DECREF(got);
    return fine < 0 ? -1 : fine ? 0 : sum_bail(s);
}

/* ---- a message walked: 1 walked and counted, 0 not (hand it to Python), -1 error */

static int scratch(summ_t *s, size_t need) { return grow((void **)&s->scratch, &s->capscratch, need, 1); }

/* The names a request's walk told, with its API, version and client id, kept once (a dict of their bytes) */
static int keep_names(summ_t *s, int key, int version, const uint8_t *p, int64_t cpos, int64_t clen, size_t from) {
    size_t need = 8 + (clen > 0 ? (size_t)clen : 0);
    for (size_t i = from; i < s->fx.n; i++) need += 8 + (s->fx.ev[i].len > 0 ? (size_t)s->fx.ev[i].len : 0);
    if (scratch(s, need)) return -1;
    uint8_t *w = s->scratch;
    int32_t head[2] = {key << 16 | version, (int32_t)clen};
    memcpy(w, head, 8), w += 8;
    if (clen > 0) memcpy(w, p + cpos, (size_t)clen), w += clen;
    for (size_t i = from; i < s->fx.n; i++) {
        kf_fact *e = &s->fx.ev[i];
        if (e->id < 0) continue;
        int32_t one[2] = {e->id, (int32_t)e->len};
        memcpy(w, one, 8), w += 8;
        if (e->len > 0) memcpy(w, p + e->pos, (size_t)e->len), w += e->len;
    }
    PyObject *k = PyBytes_FromStringAndSize((const char *)s->scratch, w - s->scratch);
    if (k == NULL) return -1;
    int bad = PyDict_SetItem(s->names, k, Py_None);
    Py_DECREF(k);
    return bad;
}

static int walked(summ_t *s, conn_t *c, plan_t *pl, int response, int key, int version, const uint8_t *p, size_t n,
                  double latency) {
    if ((Py_ssize_t)n > pl->walk_max) return 0;
    s->fx.n = 0, s->fx.lost = 0;
    s->fx.want = pl->hwant, s->fx.nwant = pl->nhwant;
    Py_ssize_t pos = pl->header(&s->cx, p, 0, (Py_ssize_t)n, pl->header_version);
    if (pos < 0) return 0;
    int64_t cpos = 0, clen = -1; /* the client id (a request's header tells it) */
    for (size_t i = 0; i < s->fx.n; i++)
        if (s->fx.ev[i].id >= 0) cpos = s->fx.ev[i].pos, clen = s->fx.ev[i].len;
    size_t from = s->fx.n;
    s->fx.want = pl->bwant, s->fx.nwant = pl->nbwant;
    if (pl->body(&s->cx, p, pos, (Py_ssize_t)n, version) != (Py_ssize_t)n || s->fx.lost) return 0;
    int64_t batches = 0;
    for (size_t i = from; i < s->fx.n; i++) {
        kf_fact *e = &s->fx.ev[i];
        if (e->id != KF_FACT_RECORDS) continue;
        Py_ssize_t got = kf_sealed(p + e->pos, (Py_ssize_t)e->len, NULL, NULL);
        if (got < 0) return 0; /* not whole sound v2 batches: read whole, as the definition does */
        batches += got;
    }
    row_t *r = row_of(s, c->index, key, version);
    if (r == NULL) return -1;
    r->bytes += (int64_t)n;
    if (response) {
        r->responses++;
        for (size_t i = from; i < s->fx.n; i++)
            if (s->fx.ev[i].id == KF_FACT_CODE && row_error(r, s->fx.ev[i].pos)) return -1;
        if (latency == latency) {
            if (grow((void **)&r->lat, &r->caplat, r->nlat + 1, sizeof(double))) return -1;
            r->lat[r->nlat++] = latency;
        }
    } else {
        r->requests++;
    }
    s->sealed += batches;
    if (pl->named && keep_names(s, key, version, p, cpos, clen, from)) return -1;
    return 1;
}

/* One message: walked, or handed to Python; 0 fine, -1 error, 1 the capture handed back */
static int message(summ_t *s, conn_t *c, int64_t ordinal, int response, int key, int version, const uint8_t *p,
                   size_t n, double latency) {
    plan_t *pl = plan_of(s, response, key, version);
    if (pl == NULL) return PyErr_Occurred() ? -1 : sum_bail(s);
    if (pl->state == 3) return sum_bail(s);
    int got = pl->state == 1 ? walked(s, c, pl, response, key, version, p, n, latency) : 0;
    if (got != 0) return got < 0 ? -1 : 0;
    return defer(s, c, ordinal, response, key, version, p, n, latency);
}

/* ---- requests awaiting their answers, by correlation id */

static pending_t *pending_find(conn_t *c, int32_t cid) {
    for (size_t i = 0; i < c->npend; i++)
        if (c->pend[i].used && c->pend[i].cid == cid) return &c->pend[i];
    return NULL;
}

/* Those no answer can be paired with any more (beyond the window) let go */
static void pending_trim(conn_t *c) {
    size_t k = 0;
    for (size_t i = 0; i < c->npend; i++)
        if (c->pend[i].used && c->ordinal - c->pend[i].ordinal < WINDOW_COUNT) c->pend[k++] = c->pend[i];
    c->npend = k;
}

static int request(summ_t *s, conn_t *c, const uint8_t *p, size_t n, double time) {
    if (n < 8) return sum_bail(s);
    int key = (int16_t)(p[0] << 8 | p[1]);
    int version = (int16_t)(p[2] << 8 | p[3]);
    int32_t cid = (int32_t)kf_be32(p + 4);
    if (pending_find(c, cid) != NULL) return sum_bail(s);
    int64_t ordinal = c->ordinal++;
    int64_t at = c->bytes;
    c->bytes += (int64_t)n;
    int got = message(s, c, ordinal, 0, key, version, p, n, NAN);
    if (got) return got;
    if (c->npend >= 2 * WINDOW_COUNT) pending_trim(c);
    if (grow((void **)&c->pend, &c->cappend, c->npend + 1, sizeof(pending_t))) return -1;
    c->pend[c->npend++] = (pending_t){cid, 1, (int16_t)key, (int16_t)version, time, ordinal, at};
    return 0;
}

static int response(summ_t *s, conn_t *c, const uint8_t *p, size_t n, double time) {
    if (n < 4) return sum_bail(s);
    c->bytes += (int64_t)n;
    pending_t *q = pending_find(c, (int32_t)kf_be32(p));
    /* none waiting, or one the definition's window may have let go before this came */
    if (q == NULL || c->ordinal - q->ordinal >= WINDOW_COUNT || c->bytes - q->bytes_at >= WINDOW_BYTES)
        return sum_bail(s);
    pending_t e = *q;
    *q = c->pend[--c->npend];
    double latency = e.time == e.time && time == time ? (time - e.time) * 1000 : NAN;
    return message(s, c, e.ordinal, 1, e.key, e.version, p, n, latency);
}

/* ---- a direction's bytes, a frame at a time */

static side_t *side_of(summ_t *s, flow_t *f);

static int frame_done(summ_t *s, flow_t *f, side_t *d, const uint8_t *p, size_t n) {
    conn_t *c = d->conn;
    return c->client == f ? request(s, c, p, n, d->time) : response(s, c, p, n, d->time);
}

static int sum_bytes(cap_t *cp, flow_t *f, const uint8_t *p, size_t n, double time) {
    summ_t *s = cp->sum;
    side_t *d = side_of(s, f);
    if (d == NULL) return PyErr_Occurred() ? -1 : 1;
    if (d->ignored) return 0;
    while (n > 0) {
        if (d->size < 0) { /* the size of the next frame */
            if (d->nhead == 0) d->time = time;
            size_t k = n < (size_t)(4 - d->nhead) ? n : (size_t)(4 - d->nhead);
            memcpy(d->head + d->nhead, p, k);
            d->nhead += (int)k, p += k, n -= k;
            if (d->nhead < 4) break;
            int32_t size = (int32_t)kf_be32(d->head);
            if (size < 0 || size > LARGEST_FRAME) return sum_bail(s);
            d->size = size, d->nhead = 0, d->n = 0;
        }
        size_t need = (size_t)d->size - d->n;
        int bad;
        if (d->n == 0 && n >= need) { /* the whole frame in this segment: read where it is */
            bad = frame_done(s, f, d, p, need);
            p += need, n -= need;
        } else {
            size_t k = n < need ? n : need;
            if (grow((void **)&d->buf, &d->cap, d->n + k, 1)) return -1;
            memcpy(d->buf + d->n, p, k);
            d->n += k, p += k, n -= k;
            if (d->n < (size_t)d->size) break;
            bad = frame_done(s, f, d, d->buf, d->n);
        }
        if (bad) return bad;
        d->size = -1, d->n = 0;
    }
    return 0;
}

/* A flow's side of its connection, made at its first bytes: which side is the client's is known by then (the side
 * that sent the SYN), else the capture is handed back (NULL, no error) */
static long port_of(PyObject *end) { return PyLong_AsLong(PyTuple_GET_ITEM(end, 1)); }

/* Whether a flow is of the connections read (--port's, or every one) */
static int sum_wanted(summ_t *s, flow_t *f) {
    return s->port < 0 || port_of(f->src) == s->port || port_of(f->dst) == s->port;
}

static side_t *side_of(summ_t *s, flow_t *f) {
    if (f->side != NULL) return f->side;
    conn_t *c = f->conn;
    int wanted = sum_wanted(s, f);
    if (wanted && c->client == NULL) {
        flow_t *r = f->rev;
        int mine = f->has_syn, theirs = r != NULL && r->has_syn;
        if (mine == theirs) return (sum_bail(s), NULL);
        c->client = mine ? f : r;
        if (s->port >= 0 && port_of(c->client->src) == s->port) return (sum_bail(s), NULL); /* (its sides swapped) */
    }
    side_t *d = PyMem_Calloc(1, sizeof(side_t));
    if (d == NULL) return (PyErr_NoMemory(), NULL);
    d->conn = c, d->size = -1, d->ignored = !wanted;
    c->has_bytes |= wanted;
    return f->side = d;
}

/* A new flow's connection: its other direction's, else a new one (connections in the order first seen) */
static int sum_flow(cap_t *cp, flow_t *f, const char *sa, int sp, const char *da, int dp) {
    summ_t *s = cp->sum;
    char key[KEY_SIZE];
    int n = flow_key(key, da, dp, sa, sp); /* (the other direction's) */
    flow_t *r = n > 0 ? flow_find(cp, key, (size_t)n) : NULL;
    if (r != NULL && r != f) {
        f->rev = r, r->rev = f, f->conn = r->conn;
        return 0;
    }
    conn_t *c = PyMem_Calloc(1, sizeof(conn_t));
    if (c == NULL || grow((void **)&s->conns, &s->capconns, s->nconns + 1, sizeof(conn_t *))) {
        PyMem_Free(c);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    c->index = (Py_ssize_t)s->nconns;
    s->conns[s->nconns++] = c;
    f->conn = c;
    return 0;
}

/* Every direction ended on a frame's end (else the definition says what is left) */
static int sum_finish(summ_t *s, cap_t *cp) {
    for (size_t i = 0; i < cp->nflows; i++) {
        side_t *d = cp->flows[i]->side;
        if (d != NULL && !d->ignored && (d->size >= 0 || d->nhead > 0)) return sum_bail(s);
    }
    return 0;
}

static PyObject *row_tuple(const row_t *r) {
    PyObject *errors = PyList_New((Py_ssize_t)r->nerrors);
    if (errors == NULL) return NULL;
    for (size_t i = 0; i < r->nerrors; i++)
        PyList_SET_ITEM(errors, (Py_ssize_t)i, Py_BuildValue("(LL)", (long long)r->errors[2 * i],
                                                             (long long)r->errors[2 * i + 1]));
    return Py_BuildValue("(LLLLLLNy#)", (long long)r->conn, (long long)r->key, (long long)r->version,
                         (long long)r->requests, (long long)r->responses, (long long)r->bytes, errors,
                         r->lat != NULL ? (const char *)r->lat : "", (Py_ssize_t)(r->nlat * sizeof(double)));
}

/* (connections [(client, broker, whether it carried bytes)], rows [(connection, key, version, requests, responses,
 * bytes, [(error code, count)], latencies as doubles' bytes)], names {bytes: None}, batches checked by their CRCs) */
static PyObject *sum_result(summ_t *s) {
    PyObject *conns = PyList_New(0), *rows = PyList_New(0);
    if (conns == NULL || rows == NULL) goto fail;
    for (size_t i = 0; i < s->nconns; i++) {
        conn_t *c = s->conns[i];
        flow_t *cl = c->client;
        PyObject *one = cl == NULL ? Py_BuildValue("(OOi)", Py_None, Py_None, c->has_bytes)
                                   : Py_BuildValue("(OOi)", cl->src, cl->dst, c->has_bytes);
        if (one == NULL || PyList_Append(conns, one) < 0) {
            Py_XDECREF(one);
            goto fail;
        }
        Py_DECREF(one);
    }
    for (size_t i = 0; i < s->nrows; i++) {
        PyObject *one = row_tuple(&s->rows[i]);
        if (one == NULL || PyList_Append(rows, one) < 0) {
            Py_XDECREF(one);
            goto fail;
        }
        Py_DECREF(one);
    }
    return Py_BuildValue("(NNOL)", conns, rows, s->names, (long long)s->sealed);
fail:
    Py_XDECREF(conns);
    Py_XDECREF(rows);
    return NULL;
}

static void sum_free(summ_t *s, cap_t *cp) {
    for (size_t i = 0; i < cp->nflows; i++) {
        side_t *d = cp->flows[i]->side;
        if (d != NULL) PyMem_Free(d->buf), PyMem_Free(d);
        cp->flows[i]->side = NULL;
    }
    for (size_t i = 0; i < s->nconns; i++) PyMem_Free(s->conns[i]->pend), PyMem_Free(s->conns[i]);
    for (size_t i = 0; i < s->nrows; i++) PyMem_Free(s->rows[i].errors), PyMem_Free(s->rows[i].lat);
    if (s->plans != NULL)
        for (size_t i = 0; i < 2 * PLAN_KEYS * PLAN_VERSIONS; i++)
            if (s->plans[i] != NULL) Py_XDECREF(s->plans[i]->keep), PyMem_Free(s->plans[i]);
    PyMem_Free(s->plans), PyMem_Free(s->conns), PyMem_Free(s->rows), PyMem_Free(s->fx.ev), PyMem_Free(s->scratch);
    Py_XDECREF(s->names);
}
