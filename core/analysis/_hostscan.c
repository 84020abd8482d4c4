/* The host hotspots' sweep (host_hotspots.py `_attribute`) in C: one pass over one thread's events
 * instead of numpy's sort of every bound, pointer jumping and running counts (~0.2 s a side on the
 * eager Llama trace's 320k host events). The numpy code stays as the fallback and the reference;
 * tests hold the two equal figure for figure.
 *
 * Events come in start order (outer first at equal starts), each with end > start. The bounds are
 * taken in time order, at one time: ends (the inner first: the later in start order), probes,
 * starts (in start order). After a start its event runs innermost; after an end, what ran just
 * before that event started runs again; a probe changes nothing. After the last bound at each
 * distinct time the state holds until the next: the event's index, or -1.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef int64_t i64;

/* a min-heap of running events by (end, -index): the next end, the inner first at equal ends (the
 * end kept beside the index: no lookup into the events' ends while sifting) */
typedef struct {
    i64 end, idx;
} Item;

static inline int earlier(Item a, Item b) { return a.end < b.end || (a.end == b.end && a.idx > b.idx); }

static void heap_push(Item *h, i64 *n, Item x) {
    i64 i = (*n)++;
    while (i > 0) {
        i64 p = (i - 1) / 2;
        if (!earlier(x, h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static Item heap_pop(Item *h, i64 *n) {
    Item top = h[0], x = h[--(*n)];
    i64 i = 0;
    for (;;) {
        i64 c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && earlier(h[c + 1], h[c])) c++;
        if (!earlier(h[c], x)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = x;
    return top;
}

typedef struct {
    Py_buffer v;
    int held;
} Buf;

static int get(PyObject *o, Buf *b, int writable, i64 expect, const char *what) {
    if (PyObject_GetBuffer(o, &b->v, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    b->held = 1;
    if (b->v.len % 8 != 0 || (expect >= 0 && b->v.len / 8 != expect)) {
        PyErr_Format(PyExc_ValueError, "%s: expected %lld int64 values", what, (long long)expect);
        return -1;
    }
    return 0;
}

/* One thread's host time attributed: the bounds are the events' starts and ends, the windows'
 * (sorted, disjoint) and the gaps' (starts and ends each sorted); between consecutive distinct
 * times the state (the event running innermost, or `none`) owns the segment. A segment inside a
 * window adds to per[name * n_windows + window], inside a gap to idle[name]. */
typedef struct {
    const i64 *S, *E, *name, *ws, *we, *gs, *ge;
    i64 m, nw, ng, none, n_names;
    i64 *per, *idle;
} Sweep;

static int sweep(const Sweep *a, Item *heap, i64 *before) {
    i64 i = 0, nh = 0, state = -1, iws = 0, iwe = 0, igs = 0, ige = 0, prev = 0;
    int started = 0;
    const i64 *S = a->S, *E = a->E;
    for (;;) {
        int any = 0;
        i64 t = 0;
#define CAND(cond, v) if (cond) { i64 _v = (v); if (!any || _v < t) { t = _v; any = 1; } }
        CAND(i < a->m, S[i])
        CAND(nh > 0, heap[0].end)
        CAND(iws < a->nw, a->ws[iws])
        CAND(iwe < a->nw, a->we[iwe])
        CAND(igs < a->ng, a->gs[igs])
        CAND(ige < a->ng, a->ge[ige])
#undef CAND
        if (!any) break;
        if (started && t > prev) {
            i64 len = t - prev, owner = state >= 0 ? a->name[state] : a->none;
            if (owner < 0 || owner >= a->n_names) return -1;
            if (iws > iwe) a->per[owner * a->nw + (iws - 1)] += len;
            if (igs > ige) a->idle[owner] += len;
        }
        while (nh > 0 && heap[0].end == t)
            state = before[heap_pop(heap, &nh).idx];
        while (iws < a->nw && a->ws[iws] == t) iws++;
        while (iwe < a->nw && a->we[iwe] == t) iwe++;
        while (igs < a->ng && a->gs[igs] == t) igs++;
        while (ige < a->ng && a->ge[ige] == t) ige++;
        while (i < a->m && S[i] == t) {
            before[i] = state;
            state = i;
            heap_push(heap, &nh, (Item){E[i], i});
            i++;
        }
        prev = t;
        started = 1;
    }
    return 0;
}

static PyObject *py_attribute(PyObject *self, PyObject *args) {
    PyObject *o[9];
    long long none;
    if (!PyArg_ParseTuple(args, "OOOOOOOLOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &none, &o[7], &o[8]))
        return NULL;
    Buf bf[9];
    memset(bf, 0, sizeof bf);
    PyObject *ret = NULL;
    Item *heap = NULL;
    i64 *before = NULL;
    /* starts, ends, names (events in start order), window starts, ends, gap starts, ends, none,
     * per (names * windows, zeroed), idle (names, zeroed) */
    if (get(o[0], &bf[0], 0, -1, "starts") < 0)
        goto done;
    {
        Sweep a;
        a.m = bf[0].v.len / 8;
        if (get(o[1], &bf[1], 0, a.m, "ends") < 0 || get(o[2], &bf[2], 0, a.m, "names") < 0 ||
            get(o[3], &bf[3], 0, -1, "window starts") < 0)
            goto done;
        a.nw = bf[3].v.len / 8;
        if (get(o[4], &bf[4], 0, a.nw, "window ends") < 0 || get(o[5], &bf[5], 0, -1, "gap starts") < 0)
            goto done;
        a.ng = bf[5].v.len / 8;
        if (get(o[6], &bf[6], 0, a.ng, "gap ends") < 0 || get(o[8], &bf[8], 1, -1, "idle") < 0)
            goto done;
        a.n_names = bf[8].v.len / 8;
        if (get(o[7], &bf[7], 1, a.n_names * a.nw, "per") < 0)
            goto done;
        a.S = bf[0].v.buf; a.E = bf[1].v.buf; a.name = bf[2].v.buf;
        a.ws = bf[3].v.buf; a.we = bf[4].v.buf; a.gs = bf[5].v.buf; a.ge = bf[6].v.buf;
        a.none = none; a.per = bf[7].v.buf; a.idle = bf[8].v.buf;
        heap = PyMem_Malloc(sizeof(Item) * (size_t)(a.m ? a.m : 1));
        before = PyMem_Malloc(sizeof(i64) * (size_t)(a.m ? a.m : 1));
        if (heap == NULL || before == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        int bad;
        Py_BEGIN_ALLOW_THREADS
        bad = sweep(&a, heap, before);
        Py_END_ALLOW_THREADS
        if (bad) {
            PyErr_SetString(PyExc_IndexError, "a name index out of range");
            goto done;
        }
        Py_INCREF(Py_None);
        ret = Py_None;
    }
done:
    PyMem_Free(heap);
    PyMem_Free(before);
    for (int j = 0; j < 9; j++)
        if (bf[j].held) PyBuffer_Release(&bf[j].v);
    return ret;
}

static PyMethodDef methods[] = {
    {"attribute", py_attribute, METH_VARARGS,
     "attribute(starts, ends, names, window_starts, window_ends, gap_starts, gap_ends, none, per, idle): "
     "per and idle in place, see host_hotspots._attribute"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_hostscan", "The host hotspots' segment sweep (C).",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__hostscan(void) { return PyModule_Create(&module); }
