/* The timeline's gap scan (timeline.py `_Scan.scan`) in C: one pass over a window set's rows
 * instead of ~10 numpy passes (running maximum, gaps, tie groups, the launch / sync / D2H tests,
 * bincounts: 0.16 s a side on a 257k-kernel trace). The numpy code stays as the fallback and the
 * reference; tests hold the two equal figure for figure. Sums are exact int64 (numpy's bincounts
 * add float64, exact below 2**53 ns: 104 days).
 *
 * Rows come grouped by key (ascending; None back when they are not, and the caller sorts), each
 * window's rows in time order. Per window, with cm the running maximum of the ends:
 *   span = cm after the last row - start of the first row;
 *   a gap = a row's start beyond cm, idle = the gaps summed;
 *   a gap is sync when a D2H copy reached cm before it (any row that set or tied the running
 *   maximum at its current value), or when the last synchronising call starting before the gap's
 *   end ends after the gap's start; else launch-bound when any row starting at the gap's end (the
 *   tie run) has a launch call that began at or after the gap's start or returned no earlier than
 *   tol before the row's start; else other;
 *   stream_busy = the union of each stream's rows, summed over streams (the same increments:
 *   a row adds e - s past a gap of its stream, e - cm when it extends the stream's maximum).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef int64_t i64;

/* the rows of the result, one per figure, each as long as there are windows: window w's figure at
 * out[f * n_win + w] */
enum { O_KEY, O_FIRST, O_COUNT, O_SPAN, O_IDLE, O_LAUNCH, O_SYNC, O_OTHER, O_GAPS, O_SUMMED, O_STREAM_BUSY, N_OUT };

typedef struct {
    const i64 *rows, *key, *s, *e, *stream, *launch, *l_s, *l_e, *sync_s, *sync_e;
    const uint8_t *dtoh;
    i64 n, n_kern, n_launch, n_sync, n_streams, tol;
    int classify, per_stream;
    i64 *out, n_win;
} Args;

/* the last synchronising interval starting before t: -1 if none (searchsorted(sync_s, t) - 1) */
static i64 sync_before(const i64 *sync_s, i64 n_sync, i64 t) {
    i64 lo = 0, hi = n_sync;
    while (lo < hi) {
        i64 mid = lo + (hi - lo) / 2;
        if (sync_s[mid] < t) lo = mid + 1;
        else hi = mid;
    }
    return lo - 1;
}

/* >= 0: the number of windows; -2: an index out of range */
static i64 scan(const Args *a, i64 *st_cm, i64 *st_seen) {
    const i64 n = a->n, nw = a->n_win;
    i64 *o = a->out;
    i64 w = -1, cm = 0, first = 0, start = 0, idle = 0, lb = 0, sy = 0, ot = 0, gaps = 0, summed = 0, sbusy = 0;
    int d2h = 0;   /* a D2H copy holds the running maximum at its current value */
    for (i64 i = 0; i <= n; i++) {
        i64 r = 0, k = 0, si = 0, ei = 0;
        int fresh = i == n;
        if (i < n) {
            r = a->rows[i];
            k = a->key[i];
            if (r < 0 || r >= a->n_kern) return -2;
            si = a->s[r];
            ei = a->e[r];
            fresh = i == 0 || k != a->key[i - 1];
        }
        if (fresh && w >= 0) {   /* close window w */
            o[O_COUNT * nw + w] = i - start;
            o[O_SPAN * nw + w] = cm - first;
            o[O_IDLE * nw + w] = idle;
            o[O_LAUNCH * nw + w] = lb;
            o[O_SYNC * nw + w] = sy;
            o[O_OTHER * nw + w] = ot;
            o[O_GAPS * nw + w] = gaps;
            o[O_SUMMED * nw + w] = summed;
            o[O_STREAM_BUSY * nw + w] = sbusy;
        }
        if (i == n) break;
        if (fresh) {
            w++;
            o[O_KEY * nw + w] = k;
            o[O_FIRST * nw + w] = si;
            start = i;
            first = si;
            cm = ei;
            d2h = a->dtoh[r] != 0;
            idle = lb = sy = ot = gaps = summed = sbusy = 0;
        } else {
            if (si > cm) {
                i64 gap = si - cm;
                idle += gap;
                if (a->classify) {
                    gaps++;
                    int sync = d2h;
                    if (!sync && a->n_sync) {
                        i64 j = sync_before(a->sync_s, a->n_sync, si);
                        sync = j >= 0 && a->sync_e[j] > cm;
                    }
                    if (sync) {
                        sy += gap;
                    } else {
                        int bound = 0;
                        for (i64 t = i; t < n && !bound; t++) {   /* the rows starting at si end the gap together */
                            i64 rt = a->rows[t];
                            if (rt < 0 || rt >= a->n_kern) return -2;
                            if (t > i && (a->key[t] != k || a->s[rt] != si)) break;
                            i64 li = a->launch[rt];
                            if (li >= a->n_launch) return -2;
                            bound = li >= 0 && (a->l_s[li] >= cm || si <= a->l_e[li] + a->tol);
                        }
                        if (bound) lb += gap;
                        else ot += gap;
                    }
                }
            }
            if (ei > cm) {
                cm = ei;
                d2h = a->dtoh[r] != 0;
            } else if (ei == cm) {
                d2h |= a->dtoh[r] != 0;
            }
        }
        summed += ei - si;
        if (a->per_stream) {
            i64 st = a->stream[r];
            if (st < 0 || st >= a->n_streams) return -2;
            if (st_seen[st] != w) {
                st_seen[st] = w;
                st_cm[st] = ei;
                sbusy += ei - si;
            } else if (si > st_cm[st]) {
                st_cm[st] = ei;
                sbusy += ei - si;
            } else if (ei > st_cm[st]) {
                sbusy += ei - st_cm[st];
                st_cm[st] = ei;
            }
        }
    }
    return w + 1;
}

/* ---- Python binding ---- */

typedef struct { Py_buffer v; int held; } Buf;

static int get(PyObject *o, Buf *b, int writable, Py_ssize_t itemsize, Py_ssize_t need, const char *what) {
    if (PyObject_GetBuffer(o, &b->v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    b->held = 1;
    if (b->v.itemsize != itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: items of %zd bytes, %zd expected", what, b->v.itemsize, itemsize);
        return -1;
    }
    if (b->v.len < need * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: %zd items, %zd needed", what, b->v.len / itemsize, need);
        return -1;
    }
    return 0;
}

#define NBUF 11

/* the number of windows in keys, -1 when they are not ascending */
static i64 count_windows(const i64 *key, i64 n) {
    i64 w = n > 0;
    for (i64 i = 1; i < n; i++) {
        if (key[i] < key[i - 1]) return -1;
        w += key[i] != key[i - 1];
    }
    return w;
}

static PyObject *py_scan(PyObject *self, PyObject *args) {
    PyObject *o[NBUF];
    long long tol, n_streams;
    int classify, per_stream;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOLLpp", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8],
                          &o[9], &o[10], &tol, &n_streams, &classify, &per_stream))
        return NULL;
    Buf bf[NBUF];
    memset(bf, 0, sizeof bf);
    PyObject *ret = NULL, *res = NULL;
    i64 *scratch = NULL;
    /* rows, key, s, e, stream, launch, l_s, l_e, dtoh, sync_s, sync_e */
    if (get(o[0], &bf[0], 0, 8, 0, "rows") < 0 || get(o[2], &bf[2], 0, 8, 0, "s") < 0 ||
        get(o[9], &bf[9], 0, 8, 0, "sync_s") < 0 || get(o[6], &bf[6], 0, 8, 0, "l_s") < 0)
        goto done;
    {
        i64 n = bf[0].v.len / 8, nk = bf[2].v.len / 8, nsync = bf[9].v.len / 8, nl = bf[6].v.len / 8;
        if (get(o[1], &bf[1], 0, 8, n, "key") < 0 || get(o[3], &bf[3], 0, 8, nk, "e") < 0 ||
            get(o[4], &bf[4], 0, 8, per_stream ? nk : 0, "stream") < 0 ||
            get(o[5], &bf[5], 0, 8, classify ? nk : 0, "launch") < 0 || get(o[7], &bf[7], 0, 8, nl, "l_e") < 0 ||
            get(o[8], &bf[8], 0, 1, nk, "dtoh") < 0 || get(o[10], &bf[10], 0, 8, nsync, "sync_e") < 0)
            goto done;
        if (n_streams < 0 || (per_stream && n_streams > nk + 1)) {
            PyErr_SetString(PyExc_ValueError, "n_streams out of range");
            goto done;
        }
        i64 n_win = count_windows(bf[1].v.buf, n);
        if (n_win < 0) {   /* the caller sorts the rows by key and asks again */
            ret = Py_None;
            Py_INCREF(ret);
            goto done;
        }
        /* sized to the windows: a buffer of the rows' size would be mostly untouched, but a
         * transparent huge page is zeroed whole on its first write */
        res = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(N_OUT * n_win * 8));
        if (res == NULL) goto done;
        Args a = {bf[0].v.buf, bf[1].v.buf, bf[2].v.buf, bf[3].v.buf, bf[4].v.buf, bf[5].v.buf, bf[6].v.buf,
                  bf[7].v.buf, bf[9].v.buf, bf[10].v.buf, bf[8].v.buf, n, nk, nl, nsync, n_streams, tol,
                  classify, per_stream, (i64 *)PyByteArray_AS_STRING(res), n_win};
        if (per_stream && n_streams) {
            scratch = PyMem_Malloc(sizeof(i64) * 2 * (size_t)n_streams);
            if (scratch == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            for (i64 k = 0; k < n_streams; k++) scratch[n_streams + k] = -1;
        }
        i64 got;
        Py_BEGIN_ALLOW_THREADS
        got = scan(&a, scratch, scratch ? scratch + n_streams : NULL);
        Py_END_ALLOW_THREADS
        if (got == -2) {
            PyErr_SetString(PyExc_IndexError, "a row, launch or stream index out of range");
            goto done;
        }
        ret = res;
        res = NULL;
    }
done:
    Py_XDECREF(res);
    PyMem_Free(scratch);
    for (int k = 0; k < NBUF; k++)
        if (bf[k].held) PyBuffer_Release(&bf[k].v);
    return ret;
}

/* Per kernel row: the gap (ns) after the previous kernel on its stream when its launch call had
 * returned before that kernel ended (it was queued), else -1 (timeline.py `_queued_gaps`). `order`:
 * the rows in time order; each kernel's predecessor on its stream is the last kernel of that stream
 * met before it (the (stream, start) order's neighbour, without sorting by stream). `plain`: per
 * launch row, a non-graph launch call. */
static PyObject *py_queued_gaps(PyObject *self, PyObject *args) {
    PyObject *o[9];
    long long n_streams, kernel_kind;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOLL", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8],
                          &n_streams, &kernel_kind))
        return NULL;
    Buf bf[9];
    memset(bf, 0, sizeof bf);
    PyObject *ret = NULL;
    i64 *last = NULL;
    /* order, kind, stream, launch, s, e, l_e, plain, out */
    if (get(o[0], &bf[0], 0, 8, 0, "order") < 0 || get(o[4], &bf[4], 0, 8, 0, "s") < 0 ||
        get(o[6], &bf[6], 0, 8, 0, "l_e") < 0)
        goto done;
    {
        i64 m = bf[0].v.len / 8, nk = bf[4].v.len / 8, nl = bf[6].v.len / 8;
        if (get(o[1], &bf[1], 0, 1, nk, "kind") < 0 || get(o[2], &bf[2], 0, 8, nk, "stream") < 0 ||
            get(o[3], &bf[3], 0, 8, nk, "launch") < 0 || get(o[5], &bf[5], 0, 8, nk, "e") < 0 ||
            get(o[7], &bf[7], 0, 1, nl, "plain") < 0 || get(o[8], &bf[8], 1, 4, nk, "out") < 0)
            goto done;
        if (n_streams < 0 || n_streams > nk + 1) {
            PyErr_SetString(PyExc_ValueError, "n_streams out of range");
            goto done;
        }
        last = PyMem_Malloc(sizeof(i64) * (size_t)(n_streams ? n_streams : 1));
        if (last == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        for (i64 k = 0; k < n_streams; k++) last[k] = -1;
        const i64 *order = bf[0].v.buf, *stream = bf[2].v.buf, *launch = bf[3].v.buf, *s = bf[4].v.buf,
                  *e = bf[5].v.buf, *l_e = bf[6].v.buf;
        const int8_t *kind = bf[1].v.buf;
        const uint8_t *plain = bf[7].v.buf;
        int32_t *out = bf[8].v.buf;
        int bad = 0;
        Py_BEGIN_ALLOW_THREADS
        for (i64 i = 0; i < m; i++) {
            i64 cur = order[i];
            if (cur < 0 || cur >= nk) { bad = 1; break; }
            if (kind[cur] != kernel_kind) continue;
            i64 st = stream[cur];
            if (st < 0 || st >= n_streams) { bad = 1; break; }
            i64 prev = last[st], li = launch[cur];
            last[st] = cur;
            if (prev < 0 || li < 0) continue;
            if (li >= nl) { bad = 1; break; }
            if (!plain[li] || l_e[li] > e[prev]) continue;
            i64 gap = s[cur] - e[prev];
            out[cur] = gap < 0 ? 0 : gap > INT32_MAX ? INT32_MAX : (int32_t)gap;
        }
        Py_END_ALLOW_THREADS
        if (bad) {
            PyErr_SetString(PyExc_IndexError, "a row, stream or launch index out of range");
            goto done;
        }
        ret = Py_None;
        Py_INCREF(ret);
    }
done:
    PyMem_Free(last);
    for (int k = 0; k < 9; k++)
        if (bf[k].held) PyBuffer_Release(&bf[k].v);
    return ret;
}

/* The launch statistics' one pass over kernel rows in time order (timeline.py `launch_stats`):
 * per launch row, the start of the first kernel it launched (first[], left as it is for calls that
 * launched none); back: (kernels launched by a plain call, those that ran shorter than their call).
 * Rows that are not kernels, have no call or whose call is no launch call are passed over. */
static PyObject *py_launch_firsts(PyObject *self, PyObject *args) {
    PyObject *o[9];
    long long kernel_kind;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOL", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8],
                          &kernel_kind))
        return NULL;
    Buf bf[9];
    memset(bf, 0, sizeof bf);
    PyObject *ret = NULL;
    /* rows, kind, launch, s, e, is_launch, is_graph, call_dur, first */
    if (get(o[0], &bf[0], 0, 8, 0, "rows") < 0 || get(o[3], &bf[3], 0, 8, 0, "s") < 0 ||
        get(o[7], &bf[7], 0, 8, 0, "call_dur") < 0)
        goto done;
    {
        i64 m = bf[0].v.len / 8, nk = bf[3].v.len / 8, nl = bf[7].v.len / 8;
        if (get(o[1], &bf[1], 0, 1, nk, "kind") < 0 || get(o[2], &bf[2], 0, 8, nk, "launch") < 0 ||
            get(o[4], &bf[4], 0, 8, nk, "e") < 0 || get(o[5], &bf[5], 0, 1, nl, "is_launch") < 0 ||
            get(o[6], &bf[6], 0, 1, nl, "is_graph") < 0 || get(o[8], &bf[8], 1, 8, nl, "first") < 0)
            goto done;
        const i64 *rows = bf[0].v.buf, *launch = bf[2].v.buf, *s = bf[3].v.buf, *e = bf[4].v.buf,
                  *call_dur = bf[7].v.buf;
        const int8_t *kind = bf[1].v.buf;
        const uint8_t *is_launch = bf[5].v.buf, *is_graph = bf[6].v.buf;
        i64 *first = bf[8].v.buf;
        i64 plain = 0, shorter = 0;
        int bad = 0;
        Py_BEGIN_ALLOW_THREADS
        for (i64 i = 0; i < m; i++) {
            i64 r = rows[i];
            if (r < 0 || r >= nk) { bad = 1; break; }
            i64 li = launch[r];
            if (kind[r] != kernel_kind || li < 0) continue;
            if (li >= nl) { bad = 1; break; }
            if (!is_launch[li]) continue;
            if (s[r] < first[li]) first[li] = s[r];
            if (!is_graph[li]) {
                plain++;
                shorter += e[r] - s[r] < call_dur[li];
            }
        }
        Py_END_ALLOW_THREADS
        if (bad) {
            PyErr_SetString(PyExc_IndexError, "a row or launch index out of range");
            goto done;
        }
        ret = Py_BuildValue("LL", (long long)plain, (long long)shorter);
    }
done:
    for (int k = 0; k < 9; k++)
        if (bf[k].held) PyBuffer_Release(&bf[k].v);
    return ret;
}

/* Kernel time that overlaps earlier kernels of the same stream (attribution.py `_stream_overlap`):
 * one pass over the rows in time order (`order`, or 0..n-1 when None), each stream's running
 * maximum of the ends kept in a table, where the numpy reference sorts every column by stream. A
 * row adds its part before that maximum, clipped to [0, its duration]. Summed in row order (the
 * reference sums each stream's pairwise: the same figure to a few ulps). */
static PyObject *py_stream_overlap(PyObject *self, PyObject *args) {
    PyObject *o[4];
    long long n_streams;
    if (!PyArg_ParseTuple(args, "OOOOL", &o[0], &o[1], &o[2], &o[3], &n_streams))
        return NULL;
    Buf bf[4];
    memset(bf, 0, sizeof bf);
    PyObject *ret = NULL;
    double *reach = NULL;
    /* ts, dur, stream id (int64 in [0, n_streams)), order (int64 rows) or None */
    if (get(o[0], &bf[0], 0, 8, 0, "ts") < 0)
        goto done;
    {
        i64 n = bf[0].v.len / 8, m = n;
        if (get(o[1], &bf[1], 0, 8, n, "dur") < 0 || get(o[2], &bf[2], 0, 8, n, "stream") < 0)
            goto done;
        if (o[3] != Py_None) {
            if (get(o[3], &bf[3], 0, 8, 0, "order") < 0)
                goto done;
            m = bf[3].v.len / 8;
        }
        if (n_streams < 0 || n_streams > n + 1) {
            PyErr_SetString(PyExc_ValueError, "n_streams out of range");
            goto done;
        }
        reach = PyMem_Malloc(sizeof(double) * (size_t)(n_streams ? n_streams : 1));
        unsigned char *seen = PyMem_Calloc((size_t)(n_streams ? n_streams : 1), 1);
        if (reach == NULL || seen == NULL) {
            PyMem_Free(seen);
            PyErr_NoMemory();
            goto done;
        }
        const double *ts = bf[0].v.buf, *dur = bf[1].v.buf;
        const i64 *stream = bf[2].v.buf, *order = o[3] != Py_None ? bf[3].v.buf : NULL;
        double over = 0.0;
        int bad = 0;
        Py_BEGIN_ALLOW_THREADS
        for (i64 i = 0; i < m; i++) {
            i64 r = order ? order[i] : i;
            if (r < 0 || r >= n) { bad = 1; break; }
            i64 st = stream[r];
            if (st < 0 || st >= n_streams) { bad = 1; break; }
            double end = ts[r] + dur[r];
            if (seen[st]) {
                double v = reach[st] - ts[r];
                if (v < 0.0) v = 0.0;
                if (v > dur[r]) v = dur[r];
                over += v;
                if (end > reach[st]) reach[st] = end;
            } else {
                seen[st] = 1;
                reach[st] = end;
            }
        }
        Py_END_ALLOW_THREADS
        PyMem_Free(seen);
        if (bad) {
            PyErr_SetString(PyExc_IndexError, "a row or stream index out of range");
            goto done;
        }
        ret = PyFloat_FromDouble(over);
    }
done:
    PyMem_Free(reach);
    for (int k = 0; k < 4; k++)
        if (bf[k].held) PyBuffer_Release(&bf[k].v);
    return ret;
}

static PyMethodDef methods[] = {
    {"scan", py_scan, METH_VARARGS,
     "scan(rows, key, s, e, stream, launch, l_s, l_e, dtoh, sync_s, sync_e, tol, n_streams, classify, "
     "per_stream) -> bytearray of int64 (figure, window), or None when key is not ascending: see "
     "kerneldiff.core.analysis.timeline"},
    {"queued_gaps", py_queued_gaps, METH_VARARGS,
     "queued_gaps(order, kind, stream, launch, s, e, l_e, plain, out, n_streams, kernel_kind): in place, see "
     "timeline._queued_gaps"},
    {"launch_firsts", py_launch_firsts, METH_VARARGS,
     "launch_firsts(rows, kind, launch, s, e, is_launch, is_graph, call_dur, first, kernel_kind) -> "
     "(plain, shorter); first in place: see timeline._Scan.launch_stats"},
    {"stream_overlap", py_stream_overlap, METH_VARARGS,
     "stream_overlap(ts, dur, stream, order, n_streams) -> float: see attribution._stream_overlap"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_gapscan", "The timeline's gap scan (C).", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__gapscan(void) { return PyModule_Create(&module); }
