/* The compiled half of kerneldiff.core.ingest.scan: a strict byte-level walk over Kineto
 * events, written in C so that it costs nothing to import (the numba version it replaces took
 * 0.3 s to import and ~2.4 s per GB; this one reads real traces at ~1.2-1.5 GB/s per core, most
 * events through templates of earlier ones: see "event templates" below).
 *
 * What it accepts and what it leaves to the msgspec reader is described in scan.py; in short:
 * strict JSON, valid UTF-8, numbers in the usual forms. At anything else it stops *before*
 * the event and the caller hands the rest to msgspec. A differential test (tests/test_scan.py)
 * holds the two readers to identical columns.
 *
 * Every function takes (buf, i, n) and never reads buf[n] or beyond. The Python binding checks
 * that each output buffer is large enough for the capacity it implies before the GIL is
 * released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
/* The walk's AVX2 copy: GCC and Clang on x86-64 compile it with a per-function target (the rest
 * of the module, and the wheel, stay baseline x86-64); other compilers and CPUs, or a build with
 * -DKERNELDIFF_NO_AVX2, get the portable copy only. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && !defined(KERNELDIFF_NO_AVX2)
#define HAVE_AVX2_WALK 1
#include <immintrin.h>
#else
#define HAVE_AVX2_WALK 0
#endif

typedef int64_t i64;
typedef uint64_t u64;
typedef uint8_t u8;

/* how a scan stopped (scan.py: LIMIT, BAIL, ARRAY_END, FULL) */
enum { ST_LIMIT = 0, ST_BAIL = 1, ST_ARRAY_END = 2, ST_FULL = 3 };
/* integer fields, columns of ints (scan.py: PID ... OCC) */
enum { PID, TID, CORR, EXT, DEVICE, STREAM, PYID, PARENT, REGS, SMEM, OCC, NINTS };
enum { NRAW = 6 };
enum { A_DIMS = NINTS, A_TYPES, A_GRID, A_BLOCK, A_CONCRETE, A_COMM };
/* arg keys of a collective (record_param_comms): not read here; their presence makes the whole
 * args object the event's A_COMM text, which Python reads (scan.py, decode.comm_text) */
#define K_COMM_KEY (-2)
#define MISSING INT64_MIN
enum { FLOAT_TS = 0, FLOAT_DUR = 1 };

/* sentinels returned instead of a position; BAILED: valid JSON, but left to msgspec */
#define INCOMPLETE (-1)
#define INVALID (-2)
#define BAILED (-3)
#define STACK 64   /* nesting deeper than this is left to msgspec */

static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* characters a number string may hold (int(" 1_0"), float("-1e5")) */
static u8 NUMCHAR[256];

static void init_ev(void);

static void init_tables(void) {
    init_ev();
    const char *s = "0123456789+-._eEiInNfFaAtTyY \t\n\r\f\v";
    for (; *s; s++) NUMCHAR[(u8)*s] = 1;
}

static inline u64 load8(const u8 *b, i64 i) {
    u64 w;
    memcpy(&w, b + i, 8);
    return w;   /* little-endian hosts only: see the #error below */
}
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the scanner hashes 8-byte words as little-endian"
#endif

/* Helpers of the walk, inlined into each copy of it: in the AVX2 copy they are compiled as AVX
 * (VEX) code too. Called from there as baseline SSE code, they would run with the upper halves of
 * the vector registers dirty, which costs more than the vectors save (measured: 3x slower). */
#if HAVE_AVX2_WALK
#define SHARED static inline __attribute__((always_inline))
#else
#define SHARED static inline
#endif

#define BLANK(c) ((c) == 32 || (c) == 10 || (c) == 13 || (c) == 9)
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* The index of the lowest set bit of w != 0. */
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
static inline int ctz64(u64 w) {
    unsigned long k;
    _BitScanForward64(&k, w);
    return (int)k;
}
#else
#define ctz64(w) __builtin_ctzll(w)
#endif

/* The bytes of w equal to c: 0x80 in each, exactly (no carry crosses a byte). */
SHARED u64 swar_eq(u64 w, u8 c) {
    u64 t = w ^ (ONES * c);
    return ~(((t & ~HIGHS) + ~HIGHS) | t) & HIGHS;
}

static const u64 POW10I[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};

/* How many of the 8 bytes at buf[i] are ASCII digits before the first that is not (i + 8 <= n).
 * Each byte gets simdjson's eight-digit test: its high nibble 3, and still 3 after adding 6. The
 * bytes before the first that fails are digits, so no carry reaches them from the others. */
SHARED int digit_count(const u8 *b, i64 i) {
    u64 w = load8(b, i);
    u64 m = ((w & 0xF0F0F0F0F0F0F0F0ULL) | (((w + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) ^
            0x3333333333333333ULL;
    return m ? ctz64(m) >> 3 : 8;
}

/* The run of ASCII digits that starts at buf[i], read 8 bytes at once (i + 8 <= n): how many
 * (0..8, as digit_count) and, in *v, their value. No borrow of the subtraction reaches the run's
 * bytes either; the bytes after it are shifted out, leaving the run as the low digits of an
 * eight-digit number, which simdjson's multiplications sum. */
SHARED int digit_run(const u8 *b, i64 i, u64 *v) {
    int k = digit_count(b, i);
    if (k == 0) { *v = 0; return 0; }
    u64 w = (load8(b, i) - 0x3030303030303030ULL) << (8 * (8 - k));
    w = w * 10 + (w >> 8);
    w = (((w & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
         (((w >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
    *v = w & 0xFFFFFFFFULL;
    return k;
}

typedef struct {
    i64 end;      /* end after the closing quote, or a sentinel */
    int esc;      /* has escapes */
    int ascii;    /* all ASCII, no escapes of non-ASCII meaning */
    int maynum;   /* has a digit and only characters int() or float() accept */
} Str;

/* buf[i] is the opening quote: the full check of a string (escapes, exact UTF-8). */
SHARED Str string_full(const u8 *b, i64 i, i64 n) {
    Str r = {INCOMPLETE, 0, 1, 0};
    int digit = 0, odd = 0;
    i++;
    while (i < n) {
        u8 c = b[i];
        if (c == 34) {
            r.end = i + 1;
            r.maynum = digit && !odd;
            return r;
        }
        if (c == 92) {
            r.esc = 1;
            if (i + 1 >= n) { r.maynum = digit; return r; }
            u8 e = b[i + 1];
            if (e == 117) {   /* \uXXXX; surrogates are left to msgspec */
                if (i + 6 > n) { r.maynum = digit; return r; }
                int v = 0;
                for (i64 k = i + 2; k < i + 6; k++) {
                    u8 d = b[k];
                    if (d >= 48 && d <= 57) v = v * 16 + d - 48;
                    else if (d >= 97 && d <= 102) v = v * 16 + d - 87;
                    else if (d >= 65 && d <= 70) v = v * 16 + d - 55;
                    else { r.end = INVALID; r.maynum = digit; return r; }
                }
                if (v >= 0xD800 && v <= 0xDFFF) { r.end = INVALID; r.maynum = digit; return r; }
                r.ascii = 0;
                i += 6;
                continue;
            }
            if (e == 34 || e == 92 || e == 47 || e == 98 || e == 102 || e == 110 || e == 114 || e == 116) {
                r.ascii = 0;
                i += 2;
                continue;
            }
            r.end = INVALID; r.maynum = digit; return r;
        }
        if (c < 32) { r.end = INVALID; r.maynum = digit; return r; }
        if (c >= 128) {   /* UTF-8: exact validation (no overlongs, surrogates, > U+10FFFF) */
            int k;
            u8 lo, hi;
            r.ascii = 0;
            if (c >= 0xC2 && c <= 0xDF) { k = 1; lo = 0x80; hi = 0xBF; }
            else if (c >= 0xE0 && c <= 0xEF) { k = 2; lo = c == 0xE0 ? 0xA0 : 0x80; hi = c == 0xED ? 0x9F : 0xBF; }
            else if (c >= 0xF0 && c <= 0xF4) { k = 3; lo = c == 0xF0 ? 0x90 : 0x80; hi = c == 0xF4 ? 0x8F : 0xBF; }
            else { r.end = INVALID; r.maynum = digit; return r; }
            if (i + k >= n) { r.maynum = digit; return r; }
            u8 x = b[i + 1];
            if (x < lo || x > hi) { r.end = INVALID; r.maynum = digit; return r; }
            for (i64 j = i + 2; j < i + 1 + k; j++) {
                x = b[j];
                if (x < 0x80 || x > 0xBF) { r.end = INVALID; r.maynum = digit; return r; }
            }
            i += 1 + k;
            continue;
        }
        if (c >= 48 && c <= 57) digit = 1;
        else if (!NUMCHAR[c]) odd = 1;
        i++;
    }
    r.maynum = digit;
    return r;
}

/* FNV-1a over 8-byte words (then the last bytes), mixed with the length. */
SHARED u64 hash_bytes(const u8 *b, i64 s, i64 e) {
    const u64 prime = 0x100000001B3ULL;
    u64 h = 0xCBF29CE484222325ULL;
    i64 i = s;
    while (i + 8 <= e) {
        h = (h ^ load8(b, i)) * prime;
        h ^= h >> 32;
        i += 8;
    }
    while (i < e) {
        h = (h ^ (u64)b[i]) * prime;
        i++;
    }
    h ^= (u64)(e - s);
    h ^= h >> 29;
    return h * 0xBF58476D1CE4E5B9ULL;
}

typedef struct {
    i64 end;       /* or a sentinel */
    int integer;   /* no fraction, no exponent */
    i64 ival;
    double fval;
    int exact;     /* 0: Python must parse it (too many digits) */
} Num;

/* A JSON number at buf[i]. */
SHARED Num number(const u8 *b, i64 i, i64 n) {
    Num r = {INCOMPLETE, 0, 0, 0.0, 0};
    int neg = 0;
    if (i < n && b[i] == 45) { neg = 1; i++; }
    if (i >= n) return r;
    u64 mant = 0;
    i64 digits = 0;
    u8 c = b[i];
    if (c == 48) i++;
    else if (c >= 49 && c <= 57) {
        u64 run;
        while (digits + 8 <= 19 && i + 8 <= n) {   /* the byte loop's sums, a run of up to 8 at once */
            int k = digit_run(b, i, &run);
            mant = mant * POW10I[k] + run;
            digits += k;
            i += k;
            if (k < 8) goto whole_done;
        }
        while (i < n && b[i] >= 48 && b[i] <= 57) {
            if (digits < 19) mant = mant * 10 + (u64)(b[i] - 48);
            digits++;
            i++;
        }
    } else { r.end = INVALID; return r; }
whole_done:;
    i64 exp10 = 0;
    int integer = 1;
    if (i < n && b[i] == 46) {
        integer = 0;
        i++;
        i64 start = i;
        u64 run;
        while (digits > 0 && digits + 8 <= 19 && i + 8 <= n) {   /* as below, a run of up to 8 at once */
            int k = digit_run(b, i, &run);
            mant = mant * POW10I[k] + run;
            exp10 -= k;
            digits += k;
            i += k;
            if (k < 8) goto fraction_done;
        }
        while (i < n && b[i] >= 48 && b[i] <= 57) {
            if (digits < 19) { mant = mant * 10 + (u64)(b[i] - 48); exp10--; }
            if (digits > 0 || b[i] != 48) digits++;
            i++;
        }
    fraction_done:
        if (i == start) { r.end = i >= n ? INCOMPLETE : INVALID; return r; }
    }
    if (i < n && (b[i] == 101 || b[i] == 69)) {
        integer = 0;
        i++;
        int eneg = 0;
        if (i < n && (b[i] == 43 || b[i] == 45)) { eneg = b[i] == 45; i++; }
        i64 start = i, e = 0;
        while (i < n && b[i] >= 48 && b[i] <= 57) {
            if (e < 100000) e = e * 10 + (b[i] - 48);
            i++;
        }
        if (i == start) { r.end = i >= n ? INCOMPLETE : INVALID; return r; }
        exp10 += eneg ? -e : e;
    }
    if (i >= n) return r;   /* the number may go on in the next bytes */
    if (exp10 + digits > 300 || exp10 < -300) { r.end = INVALID; return r; }   /* msgspec decides */
    r.end = i;
    r.integer = integer;
    if (digits > 18) return r;   /* ival 0, not exact */
    r.ival = neg ? -(i64)mant : (i64)mant;
    if (mant > 9007199254740992ULL || exp10 > 22 || exp10 < -22) return r;
    /* Clinger's fast path: both operands exact, so one IEEE operation rounds correctly */
    volatile double f = (double)mant;
    f = exp10 >= 0 ? f * POW10[exp10] : f / POW10[-exp10];
    r.fval = neg ? -f : f;
    r.exact = 1;
    return r;
}

/* Validate a JSON number without converting it: the end or a sentinel. */
SHARED i64 skip_number(const u8 *b, i64 i, i64 n) {
    if (b[i] == 45) {
        i++;
        if (i >= n) return INCOMPLETE;
    }
    u8 c = b[i];
    i64 whole = 0;
    if (c == 48) i++;
    else if (c >= 49 && c <= 57) {
        while (i + 8 <= n) {   /* runs of up to 8 digits at once */
            int k = digit_count(b, i);
            whole += k;
            i += k;
            if (k < 8) goto whole_done;
        }
        while (i < n && b[i] >= 48 && b[i] <= 57) { whole++; i++; }
    } else return INVALID;
whole_done:;
    i64 frac = 0;
    if (i < n && b[i] == 46) {
        i++;
        while (i + 8 <= n) {
            int k = digit_count(b, i);
            frac += k;
            i += k;
            if (k < 8) goto fraction_done;
        }
        while (i < n && b[i] >= 48 && b[i] <= 57) { frac++; i++; }
    fraction_done:
        if (frac == 0) return i >= n ? INCOMPLETE : INVALID;
    }
    i64 e = 0;
    if (i < n && (b[i] == 101 || b[i] == 69)) {
        i++;
        int eneg = 0;
        if (i < n && (b[i] == 43 || b[i] == 45)) { eneg = b[i] == 45; i++; }
        i64 start = i;
        while (i < n && b[i] >= 48 && b[i] <= 57) {
            if (e < 100000) e = e * 10 + (b[i] - 48);
            i++;
        }
        if (i == start) return i >= n ? INCOMPLETE : INVALID;
        if (eneg) e = -e;
    }
    if (i >= n) return INCOMPLETE;
    if (whole + e > 300 || e < -300 || frac > 300) return INVALID;
    return i;
}

SHARED int escaped(const u8 *b, i64 s, i64 e) {
    return memchr(b + s, 92, (size_t)(e - s)) != NULL;
}

#define KEY_IS(b, s, e, lit) ((e) - (s) == (i64)sizeof(lit) - 1 && memcmp((b) + (s), lit, sizeof(lit) - 1) == 0)

/* event keys read (bail reasons are not reported: the msgspec reader knows them) */
enum { K_PH, K_CAT, K_NAME, K_TS, K_DUR, K_PID, K_TID, K_ARGS, K_OTHER = -1 };

static inline int event_key(const u8 *b, i64 s, i64 e) {
    switch (e - s) {
    case 2:
        if (b[s] == 'p' && b[s + 1] == 'h') return K_PH;
        if (b[s] == 't' && b[s + 1] == 's') return K_TS;
        break;
    case 3:
        if (KEY_IS(b, s, e, "cat")) return K_CAT;
        if (KEY_IS(b, s, e, "dur")) return K_DUR;
        if (KEY_IS(b, s, e, "pid")) return K_PID;
        if (KEY_IS(b, s, e, "tid")) return K_TID;
        break;
    case 4:
        if (KEY_IS(b, s, e, "name")) return K_NAME;
        if (KEY_IS(b, s, e, "args")) return K_ARGS;
        break;
    }
    return K_OTHER;
}

static inline int arg_key(const u8 *b, i64 s, i64 e) {
    switch (e - s) {
    case 11:
        if (KEY_IS(b, s, e, "correlation")) return CORR;
        if (KEY_IS(b, s, e, "External id")) return EXT;
        break;
    case 6:
        if (KEY_IS(b, s, e, "device")) return DEVICE;
        if (KEY_IS(b, s, e, "stream")) return STREAM;
        break;
    case 9:
        if (KEY_IS(b, s, e, "Python id")) return PYID;
        break;
    case 16:
        if (KEY_IS(b, s, e, "Python parent id")) return PARENT;
        break;
    case 10:
        if (KEY_IS(b, s, e, "Input Dims")) return A_DIMS;
        if (KEY_IS(b, s, e, "Input type")) return A_TYPES;
        if (KEY_IS(b, s, e, "Group size")) return K_COMM_KEY;
        break;
    case 3:
        if (KEY_IS(b, s, e, "Seq")) return K_COMM_KEY;
        break;
    case 15:
        if (KEY_IS(b, s, e, "Collective name")) return K_COMM_KEY;
        if (KEY_IS(b, s, e, "Concrete Inputs")) return A_CONCRETE;
        break;
    case 14:
        if (KEY_IS(b, s, e, "Out msg nelems")) return K_COMM_KEY;
        break;
    case 18:
        if (KEY_IS(b, s, e, "Process Group Name")) return K_COMM_KEY;
        break;
    case 19:
        if (KEY_IS(b, s, e, "Process Group Ranks")) return K_COMM_KEY;
        break;
    case 20:
        if (KEY_IS(b, s, e, "registers per thread")) return REGS;
        break;
    case 13:
        if (KEY_IS(b, s, e, "shared memory")) return SMEM;
        if (KEY_IS(b, s, e, "In msg nelems")) return K_COMM_KEY;
        break;
    case 25:
        if (KEY_IS(b, s, e, "est. achieved occupancy %")) return OCC;
        break;
    case 4:
        if (KEY_IS(b, s, e, "grid")) return A_GRID;
        break;
    case 5:
        if (KEY_IS(b, s, e, "block")) return A_BLOCK;
        if (KEY_IS(b, s, e, "dtype")) return K_COMM_KEY;
        break;
    }
    return K_OTHER;
}

/* An integer field: a JSON integer, a decimal string, null. A string that is no number at all
 * ("0x0", "stream 7") reads as -1 whichever path reads it; other odd values (floats, bools,
 * numbers in other forms) are left to msgspec. Returns the end or a sentinel. */
SHARED i64 int_value(const u8 *b, i64 i, i64 n, i64 *out) {
    u8 c = b[i];
    *out = 0;
    if (c == 110) {
        if (i + 4 > n) return INCOMPLETE;
        if (b[i + 1] == 117 && b[i + 2] == 108 && b[i + 3] == 108) { *out = MISSING; return i + 4; }
        return INVALID;
    }
    if (c == 34) {
        Str r = string_full(b, i, n);
        i64 end = r.end;
        if (end < 0) return end;
        if (!r.esc && r.ascii && !r.maynum) { *out = -1; return end; }
        if (r.esc || !r.ascii) return BAILED;
        i64 j = i + 1;
        int neg = 0;
        if (b[j] == 45) { neg = 1; j++; }
        if (j == end - 1 || end - 1 - j > 18 || (b[j] == 48 && end - 1 - j > 1)) return BAILED;
        i64 v = 0;
        while (j < end - 1) {
            u8 d = b[j];
            if (d < 48 || d > 57) return BAILED;
            v = v * 10 + (d - 48);
            j++;
        }
        *out = neg ? -v : v;
        return end;
    }
    if (c >= 48 && c <= 57 && i + 8 < n) {   /* a small integer, the usual: as number() reads it */
        u64 v = 0;
        int k = c == 48 ? 1 : digit_run(b, i, &v);
        u8 after = b[i + k];
        if (k < 8 && !(after >= 48 && after <= 57) && after != 46 && after != 101 && after != 69) {
            *out = c == 48 ? 0 : (i64)v;
            return i + k;
        }
    }
    if (c == 45 || (c >= 48 && c <= 57)) {
        Num r = number(b, i, n);
        if (r.end < 0) return r.end;
        if (!r.integer || !r.exact || r.ival == MISSING) return BAILED;
        *out = r.ival;
        return r.end;
    }
    return BAILED;
}

typedef struct {
    i64 end;
    double v;
    int exact;
    i64 a, z;   /* the number's bytes, for Python's float() when not exact */
} Flt;

/* ts / dur: a JSON number or a number in a string, null (NaN). */
SHARED Flt float_value(const u8 *b, i64 i, i64 n) {
    Flt r = {BAILED, 0.0, 1, 0, 0};
    u8 c = b[i];
    if (c == 110) {
        if (i + 4 > n) { r.end = INCOMPLETE; return r; }
        if (b[i + 1] == 117 && b[i + 2] == 108 && b[i + 3] == 108) { r.end = i + 4; r.v = NAN; return r; }
        r.end = INVALID;
        return r;
    }
    if (c == 34) {
        Str s = string_full(b, i, n);
        i64 end = s.end;
        if (end < 0) { r.end = end; return r; }
        if (s.esc || !s.ascii || end - i < 3) return r;
        Num q = number(b, i + 1, end);   /* the closing quote ends the number */
        if (q.end != end - 1) return r;
        r.end = end; r.v = q.fval; r.exact = q.exact; r.a = i + 1; r.z = end - 1;
        return r;
    }
    if (c == 45 || (c >= 48 && c <= 57)) {
        Num q = number(b, i, n);
        if (q.end < 0) { r.end = q.end; return r; }
        r.end = q.end; r.v = q.fval; r.exact = q.exact; r.a = i; r.z = q.end;
        return r;
    }
    return r;
}

/* A helper's sentinel as the scan's failure: 1 ran out of bytes, 2 left to msgspec. */
static inline int fail_of(i64 e) { return e == INCOMPLETE ? 1 : 2; }

/* The distinct texts of one scan call: an open-addressing table (linear probing) of their keys, a
 * slot taken when gen[slot] is the call's generation (so a call starts with an empty table without
 * clearing it), each entry confirmed by its bytes against the text's first occurrence. */
typedef struct {
    u64 *key; int32_t *id; uint16_t *gen;   /* key and id hold something only where gen is the call's */
    i64 size;                /* a power of two, at least twice the texts one call can meet */
    i64 *first_at, *first_len;   /* each distinct text's first occurrence: its bytes */
    i64 *first;              /* and where it was: the row (names) or row * NRAW + column (raw texts) */
    i64 n;                   /* distinct texts so far in this call */
} Distinct;

/* The local id of the text b[s, s + len) whose key is k, made when it is new (where = its row, or
 * row and column). Two texts with equal keys and other bytes get two ids. */
static inline int32_t distinct_id(Distinct *d, uint16_t gen, u64 k, const u8 *b, i64 s, i64 len, i64 where) {
    u64 mask = (u64)d->size - 1;
    for (u64 slot = k & mask;; slot = (slot + 1) & mask) {
        if (d->gen[slot] != gen) {
            int32_t id = (int32_t)d->n++;
            d->gen[slot] = gen;
            d->key[slot] = k;
            d->id[slot] = id;
            d->first_at[id] = s;
            d->first_len[id] = len;
            d->first[id] = where;
            return id;
        }
        if (d->key[slot] == k) {
            int32_t id = d->id[slot];
            if (d->first_len[id] == len && memcmp(b + d->first_at[id], b + s, (size_t)len) == 0) return id;
        }
    }
}

typedef struct {
    const u8 *blob; const i64 *ends; const int8_t *codes; i64 ncats; const int8_t *phase;
    int8_t *code; double *floats; i64 *ints; u64 *nhash; i64 *nstart; i64 *nlen; u8 *nesc;
    i64 *fix; i64 *shape; u64 *shash; i64 cap, fcap;
    int32_t *nloc, *sloc;   /* each row's name, and raw texts, as local ids of this call (-1: none) */
    Distinct names, texts;
    uint16_t gen;
} Tables;

/* ---- event templates ----
 * Kineto writes every event of a kind with the same keys, in the same order, with the same blanks:
 * only the values differ. An event the full walk read becomes a template: the bytes between its
 * values (keys, colons, commas, blanks, and the "ph" and "cat" values, which decide the row's group)
 * are kept as literals, and each value as a step (what it is and how to read it). A later event
 * whose bytes equal every literal, with each value read by the very function the full walk calls
 * for it, is the same walk with the same decisions: the same keys in the same order (so no
 * duplicate, no escaped key, no collective), each value parsed alike. At the first difference (a
 * literal, a value that fails or has another form) the event is read again by the full walk from
 * its start, which then makes it a template. */
enum { V_NAME = 1, V_TS, V_DUR, V_INT, V_RAW, V_SKIP };
#define TSTEPS 40   /* values a template holds (an event with more is never one) */
#define NTPL 8      /* templates kept, most recently used first */

typedef struct {
    i64 at[TSTEPS + 1];   /* literal k: the buffer's bytes [at[k], at[k] + len[k]) */
    i64 len[TSTEPS + 1];
    u8 kind[TSTEPS], arg[TSTEPS];
    int nsteps;
    int ph;
    int8_t code;          /* the row's group (0: no row), from the literal "ph" and "cat" */
} Tpl;

/* the values the full walk read, in order, for making a template (ok 0: it cannot be one) */
typedef struct {
    i64 s[TSTEPS], e[TSTEPS];
    u8 kind[TSTEPS], arg[TSTEPS];
    int n, ok;
} Rec;

/* one event's fields, as either walk reads them */
typedef struct {
    i64 ints[NINTS];
    i64 raw[2 * NRAW];
    u64 hash[NRAW];
    i64 cat_s, cat_e, name_s, name_e;
    u64 name_h;
    double ts, dur;
    i64 ts_a, ts_b, dur_a, dur_b;
    int ph, name_esc, ts_exact, dur_exact;
} Ev;

static Ev EV_EMPTY;   /* ints MISSING, raw -1, ts/dur NaN: set by init_tables */
static int use_templates = 1;

static void init_ev(void) {
    for (int k = 0; k < NINTS; k++) EV_EMPTY.ints[k] = MISSING;
    for (int k = 0; k < 2 * NRAW; k++) EV_EMPTY.raw[k] = -1;
    EV_EMPTY.cat_s = EV_EMPTY.cat_e = EV_EMPTY.name_s = EV_EMPTY.name_e = -1;
    EV_EMPTY.ts = EV_EMPTY.dur = NAN;
    EV_EMPTY.ph = -1;
    EV_EMPTY.ts_exact = EV_EMPTY.dur_exact = 1;
}

SHARED void rec_value(Rec *r, i64 s, i64 e, int kind, int arg) {
    if (r->n >= TSTEPS) { r->ok = 0; return; }
    r->s[r->n] = s; r->e[r->n] = e; r->kind[r->n] = (u8)kind; r->arg[r->n] = (u8)arg;
    r->n++;
}

/* How many first steps two templates share: equal literals before them, values of the same kind
 * and field. An event that a read by one has reached step k of, with k no more than that, is at
 * step k of the other too. */
static int shared_steps(const u8 *b, const Tpl *x, const Tpl *y) {
    int m = x->nsteps < y->nsteps ? x->nsteps : y->nsteps, k = 0;
    while (k < m && x->len[k] == y->len[k] && x->kind[k] == y->kind[k] && x->arg[k] == y->arg[k] &&
           memcmp(b + x->at[k], b + y->at[k], (size_t)x->len[k]) == 0)
        k++;
    return k;
}

/* p[0..len) == q[0..len), both readable to their len: 8-byte words, the last one overlapping */
SHARED int lit_eq(const u8 *p, const u8 *q, i64 len) {
    if (len >= 8) {
        i64 k = 0;
        for (; k + 8 <= len; k += 8)
            if (load8(p, k) != load8(q, k)) return 0;
        return k == len || load8(p, len - 8) == load8(q, len - 8);
    }
    if (len >= 4) {
        uint32_t a, b, c, d;
        memcpy(&a, p, 4); memcpy(&b, q, 4); memcpy(&c, p + len - 4, 4); memcpy(&d, q + len - 4, 4);
        return a == b && c == d;
    }
    for (i64 k = 0; k < len; k++)
        if (p[k] != q[k]) return 0;
    return 1;
}

/* ---- the walk, twice ---- */

#define WALK(f) f##_portable
#define WALK_AVX2 0
#include "_fastscan_walk.h"
#undef WALK
#undef WALK_AVX2

#if HAVE_AVX2_WALK
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
#define WALK(f) f##_avx2
#define WALK_AVX2 1
#include "_fastscan_walk.h"
#undef WALK
#undef WALK_AVX2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

/* which copy py_scan runs: chosen at import (the best the CPU has, unless KERNELDIFF_SCAN_SIMD
 * says otherwise), changed by set_simd */
enum { SIMD_PORTABLE = 0, SIMD_AVX2 = 1 };
static const char *SIMD_NAMES[] = {"portable", "avx2"};
static int simd_level = SIMD_PORTABLE;

static int cpu_has_avx2(void) {
#if HAVE_AVX2_WALK
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
#else
    return 0;
#endif
}

/* ---- Python binding ---- */

typedef struct { Py_buffer v; int held; } Buf;

static int get(PyObject *o, Buf *b, int writable, Py_ssize_t need, const char *what) {
    if (PyObject_GetBuffer(o, &b->v, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0) return -1;
    b->held = 1;
    if (b->v.len < need) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, %zd needed", what, b->v.len, need);
        return -1;
    }
    return 0;
}

static void release(Buf *bufs, int n) {
    for (int k = 0; k < n; k++)
        if (bufs[k].held) PyBuffer_Release(&bufs[k].v);
}

/* A Distinct's arrays from a tuple (key, id, gen, first_at, first_len, first) into bf[0..6): the
 * table at least 2 * texts slots, a power of two; room for `texts` first occurrences. */
static int get_distinct(PyObject *tup, Buf *bf, Distinct *d, i64 texts) {
    memset(d, 0, sizeof *d);
    if (!PyTuple_Check(tup) || PyTuple_GET_SIZE(tup) != 6) {
        PyErr_SetString(PyExc_TypeError, "distinct texts: (key, id, gen, first_at, first_len, first)");
        return -1;
    }
    if (get(PyTuple_GET_ITEM(tup, 0), &bf[0], 1, 16 * texts, "key") < 0) return -1;
    i64 size = bf[0].v.len / 8;
    if (size == 0 || (size & (size - 1)) != 0) {
        PyErr_SetString(PyExc_ValueError, "the distinct texts' table: a power of two in size");
        return -1;
    }
    if (get(PyTuple_GET_ITEM(tup, 1), &bf[1], 1, size * 4, "id") < 0 ||
        get(PyTuple_GET_ITEM(tup, 2), &bf[2], 1, size * 2, "gen") < 0 ||
        get(PyTuple_GET_ITEM(tup, 3), &bf[3], 1, texts * 8, "first_at") < 0 ||
        get(PyTuple_GET_ITEM(tup, 4), &bf[4], 1, texts * 8, "first_len") < 0 ||
        get(PyTuple_GET_ITEM(tup, 5), &bf[5], 1, texts * 8, "first") < 0)
        return -1;
    d->key = bf[0].v.buf; d->id = bf[1].v.buf; d->gen = bf[2].v.buf; d->size = size;
    d->first_at = bf[3].v.buf; d->first_len = bf[4].v.buf; d->first = bf[5].v.buf;
    return 0;
}

static PyObject *py_scan(PyObject *self, PyObject *args) {
    PyObject *o[21];
    Py_ssize_t pos, limit;
    if (!PyArg_ParseTuple(args, "Onn" "OOOOOOOOOOOOOOOOOOOO", &o[0], &pos, &limit, &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15], &o[16], &o[17],
                          &o[18], &o[19], &o[20]))
        return NULL;
    Buf bf[32];
    memset(bf, 0, sizeof bf);
    PyObject *ret = NULL;
    /* buf, blob, ends, codes, phase, then the outputs */
    if (get(o[0], &bf[0], 0, 0, "buf") < 0 || get(o[1], &bf[1], 0, 0, "blob") < 0 ||
        get(o[2], &bf[2], 0, 0, "ends") < 0 || get(o[3], &bf[3], 0, bf[2].v.len / 8, "codes") < 0 ||
        get(o[4], &bf[4], 0, 128, "phase") < 0 || get(o[5], &bf[5], 1, 0, "code") < 0)
        goto done;
    {
        Py_ssize_t cap = bf[5].v.len;   /* int8 codes: one byte a row */
        Py_ssize_t ncats = bf[2].v.len / 8;
        if (get(o[6], &bf[6], 1, cap * 16, "floats") < 0 || get(o[7], &bf[7], 1, cap * 8 * NINTS, "ints") < 0 ||
            get(o[8], &bf[8], 1, cap * 8, "nhash") < 0 || get(o[9], &bf[9], 1, cap * 8, "nstart") < 0 ||
            get(o[10], &bf[10], 1, cap * 8, "nlen") < 0 || get(o[11], &bf[11], 1, cap, "nesc") < 0 ||
            get(o[12], &bf[12], 1, 0, "fix") < 0 || get(o[13], &bf[13], 1, cap * 16 * NRAW, "shape") < 0 ||
            get(o[14], &bf[14], 1, cap * 8 * NRAW, "shash") < 0 || get(o[15], &bf[15], 1, 40, "state") < 0 ||
            get(o[16], &bf[16], 1, cap * 4, "nloc") < 0 || get(o[17], &bf[17], 1, cap * 4 * NRAW, "sloc") < 0 ||
            get(o[20], &bf[18], 1, 24, "dist") < 0)
            goto done;
        Distinct names, texts;
        if (get_distinct(o[18], &bf[19], &names, cap) < 0 || get_distinct(o[19], &bf[25], &texts, cap * NRAW) < 0)
            goto done;
        i64 *dist = bf[18].v.buf;   /* [generation, distinct names, distinct raw texts] */
        uint16_t gen = (uint16_t)(dist[0] + 1);   /* a new generation: both tables start empty */
        if (gen == 0) {   /* every 65,535 calls: clear the generations once */
            memset(names.gen, 0, (size_t)names.size * 2);
            memset(texts.gen, 0, (size_t)texts.size * 2);
            gen = 1;
        }
        dist[0] = gen;
        const i64 *ends = (const i64 *)bf[2].v.buf;
        i64 blob_len = bf[1].v.len;
        for (Py_ssize_t k = 0; k < ncats; k++)
            if (ends[k] < 0 || ends[k] > blob_len || (k && ends[k] < ends[k - 1])) {
                PyErr_SetString(PyExc_ValueError, "category table out of order");
                goto done;
            }
        i64 n = bf[0].v.len;
        if (pos < 0 || pos > n || limit < 0) {
            PyErr_SetString(PyExc_ValueError, "position outside the buffer");
            goto done;
        }
        Tables t = {bf[1].v.buf, ends, bf[3].v.buf, ncats, bf[4].v.buf,
                    bf[5].v.buf, bf[6].v.buf, bf[7].v.buf, bf[8].v.buf, bf[9].v.buf, bf[10].v.buf, bf[11].v.buf,
                    bf[12].v.buf, bf[13].v.buf, bf[14].v.buf, cap, bf[12].v.len / 32,
                    bf[16].v.buf, bf[17].v.buf, names, texts, (uint16_t)dist[0]};
        i64 *state = bf[15].v.buf;
        const u8 *b = bf[0].v.buf;
        int level = simd_level;
        Py_BEGIN_ALLOW_THREADS
#if HAVE_AVX2_WALK
        if (level == SIMD_AVX2) scan_avx2(b, n, pos, limit, &t, state);
        else
#endif
            scan_portable(b, n, pos, limit, &t, state);
        (void)level;
        Py_END_ALLOW_THREADS
        dist[1] = t.names.n;
        dist[2] = t.texts.n;
        ret = Py_None;
        Py_INCREF(ret);
    }
done:
    release(bf, 32);
    return ret;
}

/* The first row whose bytes differ from those of its group's representative rep[row] (rows
 * were grouped by a 64-bit hash: equal hashes do not prove equal names); -1 if none. */
static PyObject *py_first_mismatch(PyObject *self, PyObject *args) {
    PyObject *o[4];
    if (!PyArg_ParseTuple(args, "OOOO", &o[0], &o[1], &o[2], &o[3])) return NULL;
    Buf bf[4];
    memset(bf, 0, sizeof bf);
    PyObject *ret = NULL;
    if (get(o[0], &bf[0], 0, 0, "buf") < 0 || get(o[1], &bf[1], 0, 0, "starts") < 0 ||
        get(o[2], &bf[2], 0, bf[1].v.len, "lens") < 0 || get(o[3], &bf[3], 0, bf[1].v.len, "rep") < 0)
        goto done;
    {
        const u8 *b = bf[0].v.buf;
        i64 n = bf[0].v.len, rows = bf[1].v.len / 8, found = -1;
        const i64 *starts = bf[1].v.buf, *lens = bf[2].v.buf, *rep = bf[3].v.buf;
        for (i64 r = 0; r < rows && found < 0; r++) {
            i64 q = rep[r];
            if (q == r) continue;
            if (q < 0 || q >= rows) { found = r; break; }
            i64 len = lens[r];
            if (len != lens[q]) { found = r; break; }
            i64 a = starts[r], c = starts[q];
            if (a == c) continue;
            if (len < 0 || a < 0 || c < 0 || a + len > n || c + len > n) { found = r; break; }
            if (memcmp(b + a, b + c, (size_t)len) != 0) found = r;
        }
        ret = PyLong_FromLongLong(found);
    }
done:
    release(bf, 4);
    return ret;
}

/* Each row's entry in the name cache: its hash looked up in the cache's open-addressing table
 * (tkeys/tentry, a power of two in size, -1 marks an empty slot; linear probing), then kept only
 * when the row's bytes are that entry's bytes. ids[k]: the entry or -1; known[k]: the hash is in
 * the table at all (a known hash with other bytes is never cached a second time). */
static PyObject *py_find(PyObject *self, PyObject *args) {
    PyObject *o[11];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8],
                          &o[9], &o[10]))
        return NULL;
    Buf bf[11];
    memset(bf, 0, sizeof bf);
    PyObject *ret = NULL;
    if (get(o[0], &bf[0], 0, 0, "buf") < 0 || get(o[1], &bf[1], 0, 0, "hashes") < 0 ||
        get(o[2], &bf[2], 0, bf[1].v.len, "starts") < 0 || get(o[3], &bf[3], 0, bf[1].v.len, "lens") < 0 ||
        get(o[4], &bf[4], 0, 0, "tkeys") < 0 || get(o[5], &bf[5], 0, bf[4].v.len, "tentry") < 0 ||
        get(o[6], &bf[6], 0, 0, "arena") < 0 || get(o[7], &bf[7], 0, 0, "offs") < 0 ||
        get(o[8], &bf[8], 0, bf[7].v.len, "alens") < 0 || get(o[9], &bf[9], 1, bf[1].v.len, "ids") < 0 ||
        get(o[10], &bf[10], 1, bf[1].v.len / 8, "known") < 0)
        goto done;
    {
        const u8 *b = bf[0].v.buf, *arena = bf[6].v.buf;
        i64 n = bf[0].v.len, an = bf[6].v.len, rows = bf[1].v.len / 8, size = bf[4].v.len / 8;
        i64 entries = bf[7].v.len / 8;
        const u64 *hashes = bf[1].v.buf, *tkeys = bf[4].v.buf;
        const i64 *starts = bf[2].v.buf, *lens = bf[3].v.buf, *tentry = bf[5].v.buf;
        const i64 *offs = bf[7].v.buf, *alens = bf[8].v.buf;
        i64 *ids = bf[9].v.buf;
        u8 *known = bf[10].v.buf;
        if (size == 0 || (size & (size - 1)) != 0) {
            PyErr_SetString(PyExc_ValueError, "the table's size must be a power of two");
            goto done;
        }
        u64 mask = (u64)size - 1;
        for (i64 k = 0; k < rows; k++) {
            u64 h = hashes[k];
            i64 e = -1;
            for (u64 slot = h & mask, probes = 0; probes < (u64)size; slot = (slot + 1) & mask, probes++) {
                i64 t = tentry[slot];
                if (t < 0) break;
                if (tkeys[slot] == h) { e = t; break; }
            }
            known[k] = e >= 0;
            i64 len = lens[k];
            if (e >= 0 && (e >= entries || len != alens[e] || len < 0 || starts[k] < 0 || starts[k] + len > n ||
                           offs[e] < 0 || offs[e] + len > an ||
                           memcmp(b + starts[k], arena + offs[e], (size_t)len) != 0))
                e = -1;
            ids[k] = e;
        }
        ret = Py_None;
        Py_INCREF(ret);
    }
done:
    release(bf, 11);
    return ret;
}

/* The name hash of bytes (the same as the scan's), for tests that build colliding names. */
static PyObject *py_name_hash(PyObject *self, PyObject *arg) {
    Buf bf = {0};
    if (get(arg, &bf, 0, 0, "bytes") < 0) {
        release(&bf, 1);
        return NULL;
    }
    u64 h = hash_bytes(bf.v.buf, 0, bf.v.len);
    release(&bf, 1);
    return PyLong_FromUnsignedLongLong(h);
}

static PyObject *py_simd(PyObject *self, PyObject *noarg) {
    return PyUnicode_FromString(SIMD_NAMES[simd_level]);
}

static PyObject *py_simd_levels(PyObject *self, PyObject *noarg) {
    return cpu_has_avx2() ? Py_BuildValue("(ss)", "portable", "avx2") : Py_BuildValue("(s)", "portable");
}

static PyObject *py_set_simd(PyObject *self, PyObject *arg) {
    const char *name = PyUnicode_AsUTF8(arg);
    if (name == NULL) return NULL;
    if (strcmp(name, "portable") == 0) simd_level = SIMD_PORTABLE;
    else if (strcmp(name, "avx2") == 0 && cpu_has_avx2()) simd_level = SIMD_AVX2;
    else {
        PyErr_Format(PyExc_ValueError, "scan SIMD level %R: not one this build can run on this CPU (portable%s)", arg,
                     cpu_has_avx2() ? ", avx2" : "");
        return NULL;
    }
    return PyUnicode_FromString(SIMD_NAMES[simd_level]);
}

static PyObject *py_templates(PyObject *self, PyObject *arg) {
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    int was = use_templates;
    use_templates = on;
    return PyBool_FromLong(was);
}

static PyMethodDef methods[] = {
    {"scan", py_scan, METH_VARARGS,
     "scan(buf, pos, limit, blob, ends, codes, phase, code, floats, ints, nhash, nstart, nlen, nesc, fix, "
     "shape, shash, state, nloc, sloc, names, texts, dist): see kerneldiff.core.ingest.scan"},
    {"first_mismatch", py_first_mismatch, METH_VARARGS, "first_mismatch(buf, starts, lens, rep) -> row or -1"},
    {"find", py_find, METH_VARARGS,
     "find(buf, hashes, starts, lens, tkeys, tentry, arena, offs, alens, ids, known): the name cache's lookup, in place"},
    {"name_hash", py_name_hash, METH_O, "name_hash(bytes) -> the scan's 64-bit hash of a name"},
    {"simd", py_simd, METH_NOARGS, "simd() -> the copy of the walk scan runs: 'avx2' or 'portable'"},
    {"simd_levels", py_simd_levels, METH_NOARGS, "simd_levels() -> the copies this CPU can run"},
    {"set_simd", py_set_simd, METH_O, "set_simd(name) -> name: run that copy of the walk from now on"},
    {"templates", py_templates, METH_O,
     "templates(on) -> whether they were on: read events through templates of earlier ones (the default) or not"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastscan", "Kineto event scanner (C).", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastscan(void) {
    init_tables();
    const char *want = getenv("KERNELDIFF_SCAN_SIMD");   /* "portable": never the AVX2 copy */
    const char *tpl = getenv("KERNELDIFF_SCAN_TEMPLATES");   /* "0": every event by the full walk */
    use_templates = !(tpl != NULL && strcmp(tpl, "0") == 0);
    simd_level = cpu_has_avx2() && !(want != NULL && strcmp(want, "portable") == 0) ? SIMD_AVX2 : SIMD_PORTABLE;
    return PyModule_Create(&module);
}
