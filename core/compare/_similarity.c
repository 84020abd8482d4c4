/* The matched characters of difflib.SequenceMatcher(None, a, b, autojunk=False), in C: the
 * kernel alignment's name-similarity tie-break (align.py) asks for thousands of them on a trace
 * whose layers differ, ~35 µs each in Python. Same algorithm, same answer (tests hold it to
 * difflib): Ratcliff/Obershelp, the longest common block first (earliest in a, then in b, on a
 * tie), then the same on each side of it. With no junk and no "popular" characters difflib's
 * extension loops never extend a longest block, so they are left out here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* longest common block of a[alo:ahi] and b[blo:bhi]: (*bi, *bj, size), the first found as
 * difflib finds it (rows of a in order, b's positions ascending, a longer block replaces) */
static Py_ssize_t longest(const Py_UCS4 *a, const Py_UCS4 *b, Py_ssize_t alo, Py_ssize_t ahi,
                          Py_ssize_t blo, Py_ssize_t bhi, Py_ssize_t *prev, Py_ssize_t *cur,
                          Py_ssize_t *bi, Py_ssize_t *bj) {
    Py_ssize_t best = 0;
    *bi = alo;
    *bj = blo;
    for (Py_ssize_t j = blo; j < bhi; j++) prev[j] = 0;
    for (Py_ssize_t i = alo; i < ahi; i++) {
        Py_UCS4 c = a[i];
        for (Py_ssize_t j = blo; j < bhi; j++) {
            Py_ssize_t k = 0;
            if (b[j] == c) {
                k = (j > blo ? prev[j - 1] : 0) + 1;
                if (k > best) {
                    best = k;
                    *bi = i - k + 1;
                    *bj = j - k + 1;
                }
            }
            cur[j] = k;
        }
        Py_ssize_t *t = prev;
        prev = cur;
        cur = t;
    }
    return best;
}

static Py_ssize_t matched(const Py_UCS4 *a, Py_ssize_t la, const Py_UCS4 *b, Py_ssize_t lb,
                          Py_ssize_t *rows) {
    /* difflib's queue of (alo, ahi, blo, bhi); the total does not depend on the order taken */
    Py_ssize_t cap = 4 * (la + 1), top = 0, total = 0;
    Py_ssize_t *q = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)cap);
    if (q == NULL) return -1;
    q[top++] = 0; q[top++] = la; q[top++] = 0; q[top++] = lb;
    while (top) {
        Py_ssize_t bhi = q[--top], blo = q[--top], ahi = q[--top], alo = q[--top];
        Py_ssize_t i, j;
        Py_ssize_t k = longest(a, b, alo, ahi, blo, bhi, rows, rows + lb + 1, &i, &j);
        if (!k) continue;
        total += k;
        /* each push splits a's range by a block of one or more characters: at most 2 * la
         * ranges wait at once */
        if (alo < i && blo < j) {
            q[top++] = alo; q[top++] = i; q[top++] = blo; q[top++] = j;
        }
        if (i + k < ahi && j + k < bhi) {
            q[top++] = i + k; q[top++] = ahi; q[top++] = j + k; q[top++] = bhi;
        }
    }
    PyMem_Free(q);
    return total;
}

static PyObject *matches(PyObject *self, PyObject *args) {
    PyObject *sa, *sb;
    if (!PyArg_ParseTuple(args, "UU", &sa, &sb)) return NULL;
    Py_UCS4 *a = PyUnicode_AsUCS4Copy(sa);
    if (a == NULL) return NULL;
    Py_UCS4 *b = PyUnicode_AsUCS4Copy(sb);
    if (b == NULL) {
        PyMem_Free(a);
        return NULL;
    }
    Py_ssize_t la = PyUnicode_GET_LENGTH(sa), lb = PyUnicode_GET_LENGTH(sb);
    Py_ssize_t *rows = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(2 * (lb + 1)));
    Py_ssize_t m = rows == NULL ? -1 : matched(a, la, b, lb, rows);
    PyMem_Free(rows);
    PyMem_Free(a);
    PyMem_Free(b);
    if (m < 0) return PyErr_NoMemory();
    return PyLong_FromSsize_t(m);
}

/* The alignment's full table (align.py `_align`, its Python loop the reference): scores is the m x n
 * matrix of pair scores (row-major float64), gap the linear gap cost. Row i of the table is the best
 * score of a[:i] against b[:j]; back comes each cell's step as one byte, (m+1) x (n+1), row-major:
 * 0 diagonal, 1 up (a gap in b), 2 left (a gap in a), preferred in that order on a tie. The same
 * IEEE additions and comparisons as the Python loop, so the same table. */
static PyObject *table(PyObject *self, PyObject *args) {
    Py_buffer sb;
    Py_ssize_t m, n;
    double gap;
    if (!PyArg_ParseTuple(args, "y*nnd", &sb, &m, &n, &gap)) return NULL;
    if (m < 0 || n < 0 || (m > 0 && n > PY_SSIZE_T_MAX / 8 / (m + 1) - 1) ||
        sb.len != (Py_ssize_t)sizeof(double) * m * n) {
        PyBuffer_Release(&sb);
        PyErr_SetString(PyExc_ValueError, "scores: m * n float64 expected");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (m + 1) * (n + 1));
    double *prev = PyMem_Malloc(sizeof(double) * (size_t)(n + 1));
    double *row = PyMem_Malloc(sizeof(double) * (size_t)(n + 1));
    if (out == NULL || prev == NULL || row == NULL) {
        Py_XDECREF(out);
        PyMem_Free(prev);
        PyMem_Free(row);
        PyBuffer_Release(&sb);
        return out == NULL ? NULL : PyErr_NoMemory();
    }
    const double *sc = sb.buf;
    char *t = PyBytes_AS_STRING(out);
    memset(t, 0, (size_t)(n + 1));
    for (Py_ssize_t j = 0; j <= n; j++) prev[j] = gap * (double)j;
    for (Py_ssize_t i = 1; i <= m; i++) {
        char *ti = t + i * (n + 1);
        const double *si = sc + (i - 1) * n;
        double left = gap * (double)i;
        row[0] = left;
        ti[0] = 0;
        for (Py_ssize_t j = 1; j <= n; j++) {
            double d = prev[j - 1] + si[j - 1], u = prev[j] + gap, l = left + gap;
            if (d >= u && d >= l) {
                left = d;
                ti[j] = 0;
            } else if (u >= l) {
                left = u;
                ti[j] = 1;
            } else {
                left = l;
                ti[j] = 2;
            }
            row[j] = left;
        }
        double *swap = prev;
        prev = row;
        row = swap;
    }
    PyMem_Free(prev);
    PyMem_Free(row);
    PyBuffer_Release(&sb);
    return out;
}

static PyMethodDef methods[] = {
    {"matches", matches, METH_VARARGS,
     "matches(a, b) -> int: sum of the sizes of SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()"},
    {"table", table, METH_VARARGS,
     "table(scores, m, n, gap) -> bytes: the alignment table's steps, (m+1) x (n+1): see align._align"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_similarity",
                                    "The kernel alignment in C: difflib's matched characters, the alignment table.", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__similarity(void) { return PyModule_Create(&module); }
