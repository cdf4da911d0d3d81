/* A record set's v2 batches checked whole by their CRC-32C (kfmt.log.batches.written_entries_v2, the definition:
 * tests/test_sealed.py holds kfmt.runtime.native._sealed, which calls this, equal to it). Included by _sealed.c and
 * _capture.c after kfmt_native.h. */
#ifndef KFMT_SEALED_H
#define KFMT_SEALED_H

#define LOG_OVERHEAD 12 /* kfmt.log.resync.LOG_OVERHEAD: base offset, batch length */
#define MIN_SIZE_V2 49  /* kfmt.log.resync.MIN_SIZE[2]: a batch's bytes after its length, at the least */

/* The batches of a set of whole v2 batches whose stored CRC-32C is the CRC of everything after it, each handed to
 * ``each(arg, start, end)`` where it is not NULL (which answers 0, or -2 for an error of its own): how many, or -1
 * when the set is anything else (the definition says what), -2 when ``each`` failed. An empty set has none. */
static Py_ssize_t kf_sealed(const uint8_t *p, Py_ssize_t n, int (*each)(void *, Py_ssize_t, Py_ssize_t), void *arg) {
    Py_ssize_t pos = 0, count = 0;
    while (pos < n) {
        if (n - pos < LOG_OVERHEAD + MIN_SIZE_V2 || p[pos + 16] != 2) return -1;
        int32_t length = (int32_t)kf_be32(p + pos + 8);
        if (length < MIN_SIZE_V2 || (Py_ssize_t)length > n - pos - LOG_OVERHEAD) return -1;
        Py_ssize_t end = pos + LOG_OVERHEAD + length;
        if (kf_crc32c(p + pos + 21, end - pos - 21) != kf_be32(p + pos + 17)) return -1;
        if (each != NULL && each(arg, pos, end) < 0) return -2;
        count++;
        pos = end;
    }
    return count;
}

#endif
