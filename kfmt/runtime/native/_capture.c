/* kfmt.runtime.native._capture: a pcap file's TCP segments put back together in C, as kfmt.capture.read and
 * kfmt.capture.assembly.Assembly put them together (the definition: this follows it, and tests/test_capture_native.py
 * holds the two equal on every capture the tests have, damaged ones included).
 *
 * read(path, spool_dir, tcp_segment) walks a pcap file's records or a pcapng file's blocks, reads
 * an unfragmented TCP segment over IPv4 in an Ethernet frame itself (kfmt.capture._ethernet_ipv4_tcp's rule) and
 * hands every other frame to tcp_segment(link, frame) (dpkt's reading), and puts each direction's payloads together
 * in sequence order into spool files in spool_dir: the bytes once each, a retransmission counted, a segment ahead
 * of the next byte held until the bytes before it come or more than PENDING bytes wait (a hole: a new run begins),
 * the stream's first byte after the SYN's (or SYN-ACK's) sequence number, else the lowest of the first LOOKAHEAD
 * segments; and where each packet's new bytes begin (stream byte, packet number, time) into three more files.
 * Returns (flows, cut): flows in the order first seen, each (src, dst, syn, synack, data file, bytes written, runs
 * [(stream byte, file offset)], repeated, (mark files) or None, marks); cut: (bytes unread, where the last whole
 * record ends) or None. Memory: what waits out of order, and at most BUFFERED bytes of writes, at once. */
#include "kfmt_native.h"
#include "sealed.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEQ_MOD 4294967296ULL
#define PENDING (32ULL << 20) /* kfmt.capture.assembly.PENDING */
#define LOOKAHEAD 64          /* kfmt.capture.assembly.LOOKAHEAD */
#define BUFFERED (16u << 20)  /* bytes of writes held for all directions together before they go to their files */
#define FLUSH_AT (64u << 10)  /* a direction's writes held before they go to its file */

typedef struct {
    uint64_t off; /* stream byte (or, before the start is known, the sequence number) */
    int64_t number;
    double time;
    uint8_t *data;
    size_t n;
} seg_t;

typedef struct {
    uint8_t *p;
    size_t n, cap;
    unsigned id; /* its file: n<id> in the spool folder (0: none yet) */
} out_t;

typedef struct flow {
    char *key;
    size_t keylen;
    uint64_t hash;
    PyObject *src, *dst;
    int has_syn, has_synack, has_start;
    uint32_t syn, synack, start;
    seg_t *early;
    size_t nearly, capearly;
    uint64_t nxt, waiting_bytes, written, repeated, nmarks;
    seg_t *heap;
    size_t nheap, capheap;
    uint64_t *runs; /* pairs (stream byte, file offset) */
    size_t nruns, capruns;
    out_t data, marks[3];
    struct side_s *side; /* summarize(): its side of its connection (capture_summary.h) */
    struct conn_s *conn;
    struct flow *rev; /* the other direction, once seen */
} flow_t;

typedef struct {
    flow_t **flows;
    size_t nflows, capflows;
    flow_t **table;
    size_t tcap;
    size_t buffered;
    const char *dir;
    unsigned files;
    struct {
        uint8_t key[12]; /* IPv4 source and destination, TCP ports, as in the frame */
        flow_t *flow;
    } recent[2]; /* the flows of the last two frames read here (a connection's two directions) */
    unsigned turn;
    struct summ_s *sum; /* summarize(): the directions read a frame at a time into it, not spooled */
} cap_t;

struct summ_s;
static int sum_bytes(cap_t *cp, flow_t *f, const uint8_t *p, size_t n, double time);
static int sum_flow(cap_t *cp, flow_t *f, const char *sa, int sp, const char *da, int dp);
static int sum_bail(struct summ_s *s);
static int sum_wanted(struct summ_s *s, flow_t *f);

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = PyMem_Realloc(*p, c * size);
    if (q == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *p = q, *cap = c;
    return 0;
}

/* ---- writes to the spool files */

static void out_path(const out_t *o, const cap_t *c, char *path, size_t size) {
    snprintf(path, size, "%s/n%u", c->dir, o->id);
}

static int out_flush(out_t *o, cap_t *c) {
    if (o->n == 0) return 0;
    char path[4096];
    out_path(o, c, path, sizeof path);
    FILE *f = fopen(path, "ab");
    int bad = f == NULL || fwrite(o->p, 1, o->n, f) != o->n;
    if (f != NULL && fclose(f) != 0) bad = 1;
    if (bad) {
        PyErr_Format(PyExc_OSError, "%s: could not write: %s", path, strerror(errno));
        return -1;
    }
    c->buffered -= o->n;
    o->n = 0;
    return 0;
}

static int flush_all(cap_t *c) {
    for (size_t i = 0; i < c->nflows; i++) {
        flow_t *f = c->flows[i];
        if (out_flush(&f->data, c)) return -1;
        for (int k = 0; k < 3; k++)
            if (out_flush(&f->marks[k], c)) return -1;
    }
    return 0;
}

static int out_put(out_t *o, cap_t *c, const void *p, size_t n) {
    if (o->id == 0) o->id = ++c->files;
    if (grow((void **)&o->p, &o->cap, o->n + n, 1)) return -1;
    memcpy(o->p + o->n, p, n);
    o->n += n;
    c->buffered += n;
    if (o->n >= FLUSH_AT && out_flush(o, c)) return -1;
    return c->buffered > BUFFERED ? flush_all(c) : 0;
}

/* ---- one direction put together (kfmt.capture.assembly.Assembly) */

static int take(flow_t *f, cap_t *c, uint64_t off, const uint8_t *p, size_t n, int64_t number, double time);

static int mark(flow_t *f, cap_t *c, uint64_t at, int64_t number, double time) {
    int64_t a = (int64_t)at;
    f->nmarks++;
    return out_put(&f->marks[0], c, &a, 8) || out_put(&f->marks[1], c, &number, 8) ||
           out_put(&f->marks[2], c, &time, 8);
}

static int append(flow_t *f, cap_t *c, uint64_t off, const uint8_t *p, size_t n, int64_t number, double time) {
    uint64_t end = off + n;
    if (end <= f->nxt) { /* every byte of it seen: a retransmission */
        f->repeated++;
        return 0;
    }
    if (c->sum != NULL) { /* read a frame at a time */
        const uint8_t *from = p + (f->nxt - off);
        size_t k = (size_t)(end - f->nxt);
        f->written += k, f->nxt = end;
        return sum_bytes(c, f, from, k, time);
    }
    if (mark(f, c, f->nxt, number, time) || out_put(&f->data, c, p + (f->nxt - off), (size_t)(end - f->nxt))) return -1;
    f->written += end - f->nxt;
    f->nxt = end;
    return 0;
}

static int before(const seg_t *a, const seg_t *b) { return a->off < b->off || (a->off == b->off && a->number < b->number); }

static int heap_push(flow_t *f, seg_t s) {
    if (grow((void **)&f->heap, &f->capheap, f->nheap + 1, sizeof(seg_t))) return -1;
    size_t i = f->nheap++;
    while (i > 0 && before(&s, &f->heap[(i - 1) / 2])) {
        f->heap[i] = f->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    f->heap[i] = s;
    return 0;
}

static seg_t heap_pop(flow_t *f) {
    seg_t top = f->heap[0], last = f->heap[--f->nheap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const seg_t *at = &last;
        if (l < f->nheap && before(&f->heap[l], at)) m = l, at = &f->heap[l];
        if (r < f->nheap && before(&f->heap[r], at)) m = r;
        if (m == i) break;
        f->heap[i] = f->heap[m];
        i = m;
    }
    if (f->nheap) f->heap[i] = last;
    return top;
}

static int drain(flow_t *f, cap_t *c) {
    while (f->nheap && f->heap[0].off <= f->nxt) {
        seg_t s = heap_pop(f);
        f->waiting_bytes -= s.n;
        int bad = append(f, c, s.off, s.data, s.n, s.number, s.time);
        PyMem_Free(s.data);
        if (bad) return -1;
    }
    return 0;
}

static int add_run(flow_t *f, uint64_t at) {
    if (grow((void **)&f->runs, &f->capruns, 2 * (f->nruns + 1), sizeof(uint64_t))) return -1;
    f->runs[2 * f->nruns] = at, f->runs[2 * f->nruns + 1] = f->written;
    f->nruns++;
    return 0;
}

/* The bytes before the first segment waiting are missing: a new run begins with it */
static int hole(flow_t *f, cap_t *c) {
    if (c->sum != NULL && sum_wanted(c->sum, f)) return sum_bail(c->sum); /* (the definition says what it hides) */
    seg_t s = heap_pop(f);
    f->waiting_bytes -= s.n;
    int bad = add_run(f, s.off);
    if (!bad) {
        f->nxt = s.off;
        bad = append(f, c, s.off, s.data, s.n, s.number, s.time);
    }
    PyMem_Free(s.data);
    return bad ? -1 : drain(f, c);
}

static int take(flow_t *f, cap_t *c, uint64_t off, const uint8_t *p, size_t n, int64_t number, double time) {
    if (off > f->nxt) { /* ahead of the bytes before it: it waits for them */
        seg_t s = {off, number, time, PyMem_Malloc(n), n};
        if (s.data == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(s.data, p, n);
        if (heap_push(f, s)) {
            PyMem_Free(s.data);
            return -1;
        }
        f->waiting_bytes += n;
        return f->waiting_bytes > PENDING ? hole(f, c) : 0;
    }
    return append(f, c, off, p, n, number, time) || drain(f, c);
}

/* The first byte fixed: after the SYN's (or the SYN-ACK's) sequence number, or the lowest seen */
static int begin(flow_t *f, cap_t *c) {
    if (f->has_syn) f->start = (uint32_t)((f->syn + 1ULL) % SEQ_MOD);
    else if (f->has_synack) f->start = (uint32_t)((f->synack + 1ULL) % SEQ_MOD);
    else {
        f->start = (uint32_t)f->early[0].off;
        for (size_t i = 1; i < f->nearly; i++)
            if (f->early[i].off < f->start) f->start = (uint32_t)f->early[i].off;
    }
    f->has_start = 1;
    int bad = 0;
    for (size_t i = 0; i < f->nearly; i++) {
        seg_t *s = &f->early[i];
        if (!bad) bad = take(f, c, (s->off + SEQ_MOD - f->start) % SEQ_MOD, s->data, s->n, s->number, s->time);
        PyMem_Free(s->data);
    }
    f->nearly = 0;
    return bad ? -1 : 0;
}

static int add(flow_t *f, cap_t *c, uint32_t seq, const uint8_t *p, size_t n, int64_t number, double time) {
    if (!f->has_start) {
        seg_t s = {seq, number, time, PyMem_Malloc(n), n};
        if (s.data == NULL || grow((void **)&f->early, &f->capearly, f->nearly + 1, sizeof(seg_t))) {
            PyMem_Free(s.data);
            if (!PyErr_Occurred()) PyErr_NoMemory();
            return -1;
        }
        memcpy(s.data, p, n);
        f->early[f->nearly++] = s;
        if (!f->has_syn && !f->has_synack && f->nearly < LOOKAHEAD) return 0;
        return begin(f, c);
    }
    return take(f, c, ((uint64_t)seq + SEQ_MOD - f->start) % SEQ_MOD, p, n, number, time);
}

static int finish(flow_t *f, cap_t *c) {
    if (!f->has_start && f->nearly && begin(f, c)) return -1;
    while (f->nheap)
        if (hole(f, c)) return -1;
    return 0;
}

/* ---- the flows, by their two ends */

static uint64_t fnv(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ULL;
    return h;
}

static int rehash(cap_t *c) {
    size_t cap = c->tcap ? c->tcap * 2 : 64;
    flow_t **t = PyMem_Calloc(cap, sizeof(flow_t *));
    if (t == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < c->nflows; i++) {
        size_t j = c->flows[i]->hash & (cap - 1);
        while (t[j]) j = (j + 1) & (cap - 1);
        t[j] = c->flows[i];
    }
    PyMem_Free(c->table);
    c->table = t, c->tcap = cap;
    return 0;
}

/* The flow of a key, or NULL (``slot``: where it goes, when it is not there) */
static flow_t *flow_lookup(cap_t *c, const char *key, size_t n, uint64_t h, size_t *slot) {
    size_t j = h & (c->tcap - 1);
    for (; c->table[j]; j = (j + 1) & (c->tcap - 1)) {
        flow_t *f = c->table[j];
        if (f->hash == h && f->keylen == n && memcmp(f->key, key, n) == 0) return f;
    }
    if (slot != NULL) *slot = j;
    return NULL;
}

static flow_t *flow_find(cap_t *c, const char *key, size_t n) {
    return c->tcap ? flow_lookup(c, key, n, fnv(key, n), NULL) : NULL;
}

#define KEY_SIZE 160

/* A flow's key, from (src address text, port) to (dst ...): its length, or -1 (too long) */
static int flow_key(char key[KEY_SIZE], const char *sa, int sp, const char *da, int dp) {
    int n = snprintf(key, KEY_SIZE, "%s|%d|%s|%d", sa, sp, da, dp);
    return n < 0 || n >= KEY_SIZE ? -1 : n;
}

/* The flow from (src address text, port) to (dst ...), made when first seen */
static flow_t *flow_of(cap_t *c, const char *sa, int sp, const char *da, int dp) {
    char key[KEY_SIZE];
    int n = flow_key(key, sa, sp, da, dp);
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "an address too long");
        return NULL;
    }
    uint64_t h = fnv(key, (size_t)n);
    if (c->tcap == 0 && rehash(c)) return NULL;
    size_t j;
    flow_t *found = flow_lookup(c, key, (size_t)n, h, &j);
    if (found != NULL) return found;
    flow_t *f = PyMem_Calloc(1, sizeof(flow_t));
    if (f == NULL || (f->key = PyMem_Malloc((size_t)n)) == NULL ||
        grow((void **)&c->flows, &c->capflows, c->nflows + 1, sizeof(flow_t *))) {
        if (f) PyMem_Free(f->key);
        PyMem_Free(f);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return NULL;
    }
    memcpy(f->key, key, (size_t)n);
    f->keylen = (size_t)n, f->hash = h;
    f->src = Py_BuildValue("(si)", sa, sp);
    f->dst = Py_BuildValue("(si)", da, dp);
    if (add_run(f, 0)) return NULL; /* (the first run, from stream byte 0) */
    c->flows[c->nflows++] = f;
    if (f->src == NULL || f->dst == NULL) return NULL;
    if (2 * c->nflows > c->tcap) {
        if (rehash(c)) return NULL;
    } else {
        c->table[j] = f;
    }
    return c->sum != NULL && sum_flow(c, f, sa, sp, da, dp) ? NULL : f;
}

static void flow_free(flow_t *f) {
    for (size_t i = 0; i < f->nearly; i++) PyMem_Free(f->early[i].data);
    for (size_t i = 0; i < f->nheap; i++) PyMem_Free(f->heap[i].data);
    PyMem_Free(f->early), PyMem_Free(f->heap), PyMem_Free(f->runs), PyMem_Free(f->key);
    PyMem_Free(f->data.p);
    for (int k = 0; k < 3; k++) PyMem_Free(f->marks[k].p);
    Py_XDECREF(f->src);
    Py_XDECREF(f->dst);
    PyMem_Free(f);
}

/* ---- one segment (kfmt.capture.read's loop) */

static int flow_segment(flow_t *f, cap_t *c, uint32_t seq, int flags, const uint8_t *p, size_t n, int64_t number,
                        double time);

static int segment(cap_t *c, const char *sa, int sp, const char *da, int dp, uint32_t seq, int flags, const uint8_t *p,
                   size_t n, int64_t number, double time) {
    flow_t *f = flow_of(c, sa, sp, da, dp);
    return f == NULL ? -1 : flow_segment(f, c, seq, flags, p, n, number, time);
}

static int flow_segment(flow_t *f, cap_t *c, uint32_t seq, int flags, const uint8_t *p, size_t n, int64_t number,
                        double time) {
    if ((flags & 0x02) && c->sum != NULL && f->side != NULL && sum_wanted(c->sum, f))
        return sum_bail(c->sum); /* opened again */
    if ((flags & 0x02) && !(flags & 0x10)) f->has_syn = 1, f->syn = seq; /* SYN without ACK: this side opened it */
    else if (flags & 0x02) f->has_synack = 1, f->synack = seq;            /* SYN-ACK: it starts the other direction */
    return n ? add(f, c, seq, p, n, number, time) : 0;
}

static uint16_t be16(const uint8_t *p) { return (uint16_t)kf_u16(p); }

/* kfmt.capture._ethernet_ipv4_tcp: 1 read (and put together), 0 not that kind of frame */
static int ethernet_ipv4_tcp(cap_t *c, const uint8_t *fr, size_t len, int64_t number, double time, int *bad) {
    if (len < 54 || fr[12] != 8 || fr[13] != 0) return 0;
    unsigned vihl = fr[14], total = be16(fr + 16), frag = be16(fr + 20), proto = fr[23], ihl = (vihl & 15) * 4;
    if (vihl >> 4 != 4 || proto != 6 || (frag & 0x3FFF) || ihl < 20 || len < 14 + (size_t)total) return 0;
    size_t at = 14 + ihl;
    if (len < at + 20) return 0;
    unsigned doff = (fr[at + 12] >> 4) * 4;
    if (doff < 20 || ihl + doff > total) return 0;
    uint8_t key[12];
    memcpy(key, fr + 26, 8), memcpy(key + 8, fr + at, 4);
    flow_t *f = NULL;
    for (int i = 0; i < 2 && f == NULL; i++)
        if (c->recent[i].flow != NULL && !memcmp(c->recent[i].key, key, 12)) f = c->recent[i].flow;
    if (f == NULL) { /* (its addresses as text, the flows' key, only for a flow not among the last two) */
        char sa[INET_ADDRSTRLEN], da[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, fr + 26, sa, sizeof sa);
        inet_ntop(AF_INET, fr + 30, da, sizeof da);
        if ((f = flow_of(c, sa, be16(fr + at), da, be16(fr + at + 2))) == NULL) {
            *bad = -1;
            return 1;
        }
        memcpy(c->recent[c->turn].key, key, 12), c->recent[c->turn].flow = f;
        c->turn ^= 1;
    }
    size_t from = at + doff, to = 14 + (size_t)total;
    *bad = flow_segment(f, c, kf_be32(fr + at + 4), fr[at + 13], fr + from, to > from ? to - from : 0, number, time);
    return 1;
}

/* Any other frame, read by the definition (kfmt.capture.tcp_segment, with dpkt) */
static int other_frame(cap_t *c, PyObject *reader, int link, const uint8_t *fr, size_t len, int64_t number, double time) {
    PyObject *got = PyObject_CallFunction(reader, "iy#", link, (const char *)fr, (Py_ssize_t)len);
    if (got == NULL) return -1;
    int bad = 0;
    if (got != Py_None) {
        const char *sa, *da;
        int sp, dp, flags;
        unsigned long seq;
        Py_buffer payload;
        if (!PyArg_ParseTuple(got, "(si)(si)kiy*", &sa, &sp, &da, &dp, &seq, &flags, &payload)) bad = 1;
        else {
            bad = segment(c, sa, sp, da, dp, (uint32_t)seq, flags, payload.buf, (size_t)payload.len, number, time);
            PyBuffer_Release(&payload);
        }
    }
    Py_DECREF(got);
    return bad ? -1 : 0;
}

/* A captured frame of link type ``link`` read (an Ethernet frame of TCP over IPv4 here, any other by the
 * definition) and its segment put together: 0 fine, -1 error */
static int frame(cap_t *c, PyObject *reader, int link, const uint8_t *fr, size_t len, int64_t number, double time) {
    int bad = 0;
    if (link != 1 || !ethernet_ipv4_tcp(c, fr, len, number, time, &bad))
        bad = other_frame(c, reader, link, fr, len, number, time);
    return bad;
}

/* ---- the pcap file */

static PyObject *result(cap_t *c, long long unread, long long done) {
    PyObject *flows = PyList_New(0);
    if (flows == NULL) return NULL;
    for (size_t i = 0; i < c->nflows; i++) {
        flow_t *f = c->flows[i];
        PyObject *runs = PyList_New((Py_ssize_t)f->nruns), *marks;
        if (runs == NULL) goto fail;
        for (size_t k = 0; k < f->nruns; k++)
            PyList_SET_ITEM(runs, (Py_ssize_t)k, Py_BuildValue("(KK)", f->runs[2 * k], f->runs[2 * k + 1]));
        char p0[4096], p1[4096], p2[4096], pd[4096];
        out_path(&f->marks[0], c, p0, sizeof p0), out_path(&f->marks[1], c, p1, sizeof p1);
        out_path(&f->marks[2], c, p2, sizeof p2), out_path(&f->data, c, pd, sizeof pd);
        if (f->nmarks) marks = Py_BuildValue("(sss)", p0, p1, p2);
        else marks = Py_NewRef(Py_None);
        PyObject *syn = f->has_syn ? PyLong_FromUnsignedLong(f->syn) : Py_NewRef(Py_None);
        PyObject *synack = f->has_synack ? PyLong_FromUnsignedLong(f->synack) : Py_NewRef(Py_None);
        PyObject *file = f->written ? PyUnicode_FromString(pd) : Py_NewRef(Py_None);
        PyObject *one = Py_BuildValue("(OONNNKNKNK)", f->src, f->dst, syn, synack, file, f->written, runs, f->repeated,
                                      marks, f->nmarks);
        if (one == NULL || PyList_Append(flows, one) < 0) {
            Py_XDECREF(one);
            goto fail;
        }
        Py_DECREF(one);
    }
    if (unread > 0) return Py_BuildValue("(N(LL))", flows, unread, done);
    return Py_BuildValue("(NO)", flows, Py_None);
fail:
    Py_DECREF(flows);
    return NULL;
}

typedef struct {
    int swap, nano;
} pcap_kind;

static int pcap_magic(const uint8_t *m, pcap_kind *k) {
    static const uint8_t le_us[4] = {0xd4, 0xc3, 0xb2, 0xa1}, le_ns[4] = {0x4d, 0x3c, 0xb2, 0xa1},
                         be_us[4] = {0xa1, 0xb2, 0xc3, 0xd4}, be_ns[4] = {0xa1, 0xb2, 0x3c, 0x4d};
    if (!memcmp(m, le_us, 4) || !memcmp(m, le_ns, 4)) k->swap = 0;
    else if (!memcmp(m, be_us, 4) || !memcmp(m, be_ns, 4)) k->swap = 1;
    else return 0;
    k->nano = !memcmp(m, le_ns, 4) || !memcmp(m, be_ns, 4);
    return 1;
}

static uint32_t u32(const uint8_t *p, int swap) {
    return swap ? kf_be32(p) : (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A record's time as dpkt gives it: seconds + microseconds / 1e6 in floating point; nanoseconds through Decimal,
 * exactly, then rounded once to a float. The quotient is taken in the x87's 64-bit significand, which rounds to the
 * same double as the exact quotient unless it falls exactly halfway between two doubles (its 11 low bits 0x400):
 * then, and where long double is not that, strtod of the decimal text (which rounds once) decides */
static double record_time(uint32_t sec, uint32_t frac, int nano) {
    if (!nano) return (double)sec + (double)frac / 1e6;
    unsigned long long total = (unsigned long long)sec * 1000000000ULL + frac; /* (fits: both are 32 bits) */
#if defined(__x86_64__) && LDBL_MANT_DIG == 64
    long double q = (long double)total / 1e9L;
    uint64_t bits;
    memcpy(&bits, &q, 8); /* the significand, its integer bit on top */
    if (q == 0 || (bits & 0x7FF) != 0x400) return (double)q;
#endif
    char text[48];
    snprintf(text, sizeof text, "%llu.%09llu", total / 1000000000ULL, total % 1000000000ULL);
    return strtod(text, NULL);
}

/* ---- the file, mapped, read from the front; what was read given back as the reading goes (memory stays flat) */

#define RELEASE_EVERY (8u << 20)

typedef struct {
    const uint8_t *p;
    size_t size, pos, released;
} src_t;

static const uint8_t *src_take(src_t *s, size_t n) {
    if (s->size - s->pos < n) return NULL;
    const uint8_t *at = s->p + s->pos;
    s->pos += n;
    if (s->pos - s->released >= RELEASE_EVERY) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE), upto = s->pos / page * page;
        madvise((void *)(s->p + s->released), upto - s->released, MADV_DONTNEED);
        s->released = upto;
    }
    return at;
}

static int walk(cap_t *c, src_t *in, PyObject *reader, long long *done) {
    const uint8_t *head = src_take(in, 24), *rec;
    pcap_kind k;
    if (head == NULL || !pcap_magic(head, &k)) return 1; /* (the definition says what it is) */
    int link = (int)u32(head + 20, k.swap);
    int64_t number = 0;
    *done = 24;
    int bad = 0;
    while (!bad && (rec = src_take(in, 16)) != NULL) {
        uint32_t caplen = u32(rec + 8, k.swap);
        const uint8_t *buf = src_take(in, caplen);
        if (buf == NULL) break; /* a cut last record: not read, said by the caller */
        *done = (long long)in->pos;
        number++;
        double t = record_time(u32(rec, k.swap), u32(rec + 4, k.swap), k.nano);
        bad = frame(c, reader, link, buf, caplen, number, t);
    }
    return bad;
}

/* ---- the pcapng file: blocks in their sections, each section's interfaces (kfmt.capture._pcapng's rules, dpkt's
 * block classes'); what those read in a way this does not follow exactly (an option cut short, a comment, a
 * packet's bytes past its block, an interface not described...) hands the whole file to the definition (2) */

#define DEFER 2

typedef struct {
    int link;
    double divisor;
    long long offset;
} iface_t;

static uint32_t ng32(const uint8_t *p, int le) { return u32(p, !le); }
static uint16_t ng16(const uint8_t *p, int le) { return le ? (uint16_t)(p[0] | p[1] << 8) : be16(p); }

/* Walk options from ``at`` to the block's end (its last 4 bytes the length again) as dpkt reads them: each whole,
 * up to an end-of-options; an interface's (``iface``, else NULL) time resolution and offset taken from theirs. 0
 * fine, DEFER anything else */
static int options(const uint8_t *b, size_t at, size_t size, int le, iface_t *iface) {
    size_t end = size - 4;
    while (at < end) {
        if (end - at < 4) return DEFER;
        unsigned code = ng16(b + at, le), len = ng16(b + at + 2, le);
        size_t padded = 4 + ((len + 3u) & ~3u);
        if (padded > end - at || code == 1) return DEFER; /* cut short, or a comment (its text is checked there) */
        const uint8_t *d = b + at + 4;
        if (iface && code == 9) { /* if_tsresol */
            if (len < 1) return DEFER;
            unsigned k = d[0] & 0x7F;
            if (d[0] & 0x80) iface->divisor = ldexp(1.0, (int)k);
            else if (k <= 22) iface->divisor = pow(10.0, (double)k); /* (exact up to 1e22) */
            else return DEFER;
        } else if (iface && code == 14) { /* if_tsoffset */
            if (len < 8) return DEFER;
            uint64_t v = le ? (uint64_t)ng32(d, 1) | (uint64_t)ng32(d + 4, 1) << 32
                            : (uint64_t)ng32(d, 0) << 32 | (uint64_t)ng32(d + 4, 0);
            iface->offset = (long long)v;
        }
        at += padded;
        if (code == 0) break;
    }
    return 0;
}

static double ng_time(const iface_t *f, uint32_t high, uint32_t low) {
    return (double)f->offset + (double)((uint64_t)high << 32 | low) / f->divisor;
}

/* A block's packet, if it is one: 0 fine (or no packet), -1 error, DEFER */
static int ng_block(cap_t *c, PyObject *reader, const uint8_t *b, size_t size, int le, iface_t **ifs, size_t *nifs,
                    size_t *capifs, int64_t *number) {
    uint32_t kind = ng32(b, le);
    if (kind == 1) { /* an interface */
        if (size < 20 || ng32(b + size - 4, le) != size) return DEFER;
        if (grow((void **)ifs, capifs, *nifs + 1, sizeof(iface_t))) return -1;
        iface_t *f = &(*ifs)[*nifs];
        f->link = ng16(b + 8, le), f->divisor = 1e6, f->offset = 0;
        if (options(b, 16, size, le, f)) return DEFER;
        (*nifs)++;
        return 0;
    }
    if (kind == 6 || kind == 2) { /* an enhanced packet, an (obsolete) packet */
        if (size < 32 || ng32(b + size - 4, le) != size) return DEFER;
        uint32_t caplen = ng32(b + 20, le);
        if ((size_t)caplen > size - 32 || options(b, 28 + (((size_t)caplen + 3) & ~(size_t)3), size, le, NULL))
            return DEFER;
        uint32_t id = kind == 6 ? ng32(b + 8, le) : ng16(b + 8, le);
        if (id >= *nifs) return DEFER;
        ++*number;
        return frame(c, reader, (*ifs)[id].link, b + 28, caplen, *number,
                     ng_time(&(*ifs)[id], ng32(b + 12, le), ng32(b + 16, le)));
    }
    if (kind == 3) { /* a simple packet: no time, the section's first interface */
        if (size < 16 || *nifs == 0) return DEFER;
        uint32_t length = ng32(b + 8, le);
        ++*number;
        return frame(c, reader, (*ifs)[0].link, b + 12, length < size - 16 ? length : size - 16, *number, NAN);
    }
    return 0; /* statistics, names...: no packet */
}

static int walk_ng(cap_t *c, src_t *in, PyObject *reader, long long *done) {
    int le = 1, bad = 0;
    iface_t *ifs = NULL;
    size_t nifs = 0, capifs = 0;
    int64_t number = 0;
    *done = 0;
    while (in->pos < in->size) {
        const uint8_t *b = in->p + in->pos;
        size_t left = in->size - in->pos, hl = 8;
        if (left < 8) break; /* a block header cut short: said as a cut file */
        if (!memcmp(b, "\x0a\x0d\x0d\x0a", 4)) { /* a section: its byte order mark says how it is written */
            size_t m = left - 8 < 4 ? left - 8 : 4;
            hl += m;
            le = m == 4 && !memcmp(b + 8, "\x4d\x3c\x2b\x1a", 4);
            nifs = 0;
        }
        uint32_t size = ng32(b + 4, le);
        if (size < hl || size % 4) break; /* a block of an impossible size: said as a cut file */
        if (src_take(in, size) == NULL) break; /* cut short */
        *done += size;
        if ((bad = ng_block(c, reader, b, size, le, &ifs, &nifs, &capifs, &number)) != 0) break;
    }
    PyMem_Free(ifs);
    return bad;
}

/* The file mapped (0), or not a capture or a file that cannot be mapped (1: the definition reads it), -1 error */
static int mapped(const char *path, src_t *in, int *ng) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
        return -1;
    }
    struct stat st;
    pcap_kind k;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 4)
        p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return 1;
    in->p = p, in->size = (size_t)st.st_size, in->pos = in->released = 0;
    madvise(p, in->size, MADV_SEQUENTIAL);
    if ((*ng = !memcmp(in->p, "\x0a\x0d\x0d\x0a", 4)) || pcap_magic(in->p, &k)) return 0;
    munmap(p, in->size);
    return 1;
}

/* The mapped file ``in`` read to its end (its mapping then let go) and, where nothing failed, each flow finished:
 * 0 fine, -1 error, more: the definition reads it; ``done``: where the last whole record ends */
static int read_through(cap_t *c, src_t *in, int ng, PyObject *reader, long long *done) {
    int bad = ng ? walk_ng(c, in, reader, done) : walk(c, in, reader, done);
    munmap((void *)in->p, in->size);
    for (size_t i = 0; i < c->nflows && !bad; i++) bad = finish(c->flows[i], c);
    return bad;
}

static void cap_free(cap_t *c) {
    for (size_t i = 0; i < c->nflows; i++) flow_free(c->flows[i]);
    PyMem_Free(c->flows);
    PyMem_Free(c->table);
}

static PyObject *capture_read(PyObject *self, PyObject *args) {
    const char *path, *dir;
    PyObject *reader;
    if (!PyArg_ParseTuple(args, "ssO", &path, &dir, &reader)) return NULL;
    src_t in;
    int ng = 0, how = mapped(path, &in, &ng);
    if (how < 0) return NULL;
    if (how > 0) Py_RETURN_NONE; /* not a capture, or not a file: the definition says what it is */
    long long size = (long long)in.size, done = 0;
    cap_t c = {0};
    c.dir = dir;
    int bad = read_through(&c, &in, ng, reader, &done);
    if (!bad) bad = flush_all(&c);
    PyObject *out = NULL;
    if (!bad) out = result(&c, size - done, done);
    else if (bad > 0) out = Py_NewRef(Py_None); /* what this does not read (a file it could not read back): the definition reads it */
    cap_free(&c);
    return out;
}

#include "capture_summary.h"

/* summarize(path, tcp_segment, plan_for, handed, options, port): capture_summary.h's counts of a capture, or None
 * (the definition reads it). plan_for(kind, key, version): kfmt.tools.dump.quick's plan for a message; handed(...): a
 * message it reads; port: --port's (-1: every connection). */
static PyObject *capture_summarize(PyObject *self, PyObject *args) {
    const char *path;
    PyObject *reader, *plan_for, *handed, *opts;
    long port;
    if (!PyArg_ParseTuple(args, "sOOOOl", &path, &reader, &plan_for, &handed, &opts, &port)) return NULL;
    src_t in;
    int ng = 0, how = mapped(path, &in, &ng);
    if (how < 0) return NULL;
    if (how > 0) Py_RETURN_NONE;
    summ_t s = {0};
    cap_t c = {0};
    c.sum = &s;
    s.plan_for = plan_for, s.handed = handed, s.port = port;
    s.plans = PyMem_Calloc(2 * PLAN_KEYS * PLAN_VERSIONS, sizeof(plan_t *));
    s.names = PyDict_New();
    PyObject *out = NULL;
    int bad = s.plans == NULL || s.names == NULL ? -1 : kf_ctx_init(&s.cx, opts) ? 1 : 0;
    if (s.plans == NULL) PyErr_NoMemory();
    s.cx.facts = &s.fx;
    long long done = 0, size = (long long)in.size;
    if (!bad) bad = read_through(&c, &in, ng, reader, &done);
    else munmap((void *)in.p, in.size);
    if (!bad && done != size) bad = sum_bail(&s); /* a file cut inside a packet record */
    if (!bad) bad = sum_finish(&s, &c);
    if (s.bail) { /* handed back: whatever error came with it is the definition's to meet */
        PyErr_Clear();
        out = Py_NewRef(Py_None);
    } else if (!bad) {
        out = sum_result(&s);
    } else if (bad > 0) {
        PyErr_Clear();
        out = Py_NewRef(Py_None);
    }
    sum_free(&s, &c);
    cap_free(&c);
    return out;
}

/* walk(capsule, data, pos, param, want, options): what summarize's walk of one message part tells: (where it ends
 * or -1, [(fact id, position, length)]): the differential tests' window on it */
static PyObject *capture_walk(PyObject *self, PyObject *args) {
    PyObject *capsule, *opts;
    Py_buffer data, want;
    Py_ssize_t pos;
    long long param;
    if (!PyArg_ParseTuple(args, "Oy*nLy*O", &capsule, &data, &pos, &param, &want, &opts)) return NULL;
    walk_fn fn = (walk_fn)PyCapsule_GetPointer(capsule, "kfmt.walk");
    kf_ctx cx;
    kf_facts fx = {want.buf, want.len, NULL, 0, 0, 0};
    PyObject *out = NULL, *told = NULL;
    if (fn != NULL && kf_ctx_init(&cx, opts) == 0 && pos >= 0 && pos <= data.len) {
        cx.facts = &fx;
        Py_ssize_t end = fn(&cx, data.buf, pos, data.len, param);
        told = PyList_New(0);
        for (size_t i = 0; told != NULL && i < fx.n; i++) {
            PyObject *one = Py_BuildValue("(iLL)", fx.ev[i].id, (long long)fx.ev[i].pos, (long long)fx.ev[i].len);
            if (one == NULL || PyList_Append(told, one) < 0) Py_CLEAR(told);
            Py_XDECREF(one);
        }
        if (told != NULL && !fx.lost) out = Py_BuildValue("(nN)", end, told);
        else if (told != NULL) Py_DECREF(told), PyErr_NoMemory();
    } else if (!PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "walk: unusual options or position");
    }
    PyMem_Free(fx.ev);
    PyBuffer_Release(&data), PyBuffer_Release(&want);
    return out;
}

static PyMethodDef methods[] = {
    {"walk", capture_walk, METH_VARARGS,
     "walk(capsule, data, pos, param, want, options): (end or -1, [(fact id, position, length)]) of one walk"},
    {"read", capture_read, METH_VARARGS,
     "read(path, spool_dir, tcp_segment): a pcap file's TCP directions put together, or None for the definition"},
    {"summarize", capture_summarize, METH_VARARGS,
     "summarize(path, tcp_segment, plan_for, handed, options, port): a capture's summary in one pass, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_capture", "pcap files put back together, in C", -1,
                                    methods};

PyMODINIT_FUNC PyInit__capture(void) {
    kf_init_checksums();
    return PyModule_Create(&module);
}
