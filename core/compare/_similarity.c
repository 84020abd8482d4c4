/* The matched characters of difflib.SequenceMatcher(None, a, b, autojunk=False), in C: the
 * kernel alignment's name-similarity tie-break (align.py) asks for thousands of them on a trace
 * whose layers differ, ~35 µs each in Python. Same algorithm, same answer (tests hold it to
 * difflib): Ratcliff/Obershelp, the longest common block first (earliest in a, then in b, on a
 * tie), then the same on each side of it. With no junk and no "popular" characters difflib's
 * extension loops never extend a longest block, so they are left out here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

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

static PyMethodDef methods[] = {
    {"matches", matches, METH_VARARGS,
     "matches(a, b) -> int: sum of the sizes of SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_similarity", "difflib's matched characters (C).", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__similarity(void) { return PyModule_Create(&module); }
