/* The walk over events (see _fastscan.c), included there twice: once portable (WALK_AVX2 0:
 * words of 8 bytes, any compiler and CPU) and once compiled for AVX2 (WALK_AVX2 1: 32-byte
 * vectors), which the binding runs only where the CPU has AVX2. WALK(f) names this copy's f.
 * Both copies make the same decisions byte for byte: only how many bytes a step looks at differs
 * (tests/unit/test_scan_simd.py runs both on the same inputs). */
#define ws WALK(ws)
#define skip_string WALK(skip_string)
#define skip_string_plain WALK(skip_string_plain)
#define value_start WALK(value_start)
#define member_key WALK(member_key)
#define skip_value WALK(skip_value)
#define args_object WALK(args_object)
#define scan WALK(scan)
#define tpl_event WALK(tpl_event)
#define full_event WALK(full_event)
#define group_code WALK(group_code)

/* Past blanks: the first byte that is not one. Most calls meet no blank or one (`": "`); a run
 * (an indented line) is passed a vector or a word at a time. */
static inline i64 ws(const u8 *b, i64 i, i64 n) {
    if (i < n && !BLANK(b[i])) return i;
    if (i + 1 < n && !BLANK(b[i + 1])) return i + 1;
#if WALK_AVX2
    const __m256i sp = _mm256_set1_epi8(32), nl = _mm256_set1_epi8(10), cr = _mm256_set1_epi8(13),
                  tab = _mm256_set1_epi8(9);
    while (i + 32 <= n) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(b + i));
        __m256i blank = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(v, sp), _mm256_cmpeq_epi8(v, nl)),
                                        _mm256_or_si256(_mm256_cmpeq_epi8(v, cr), _mm256_cmpeq_epi8(v, tab)));
        unsigned other = ~(unsigned)_mm256_movemask_epi8(blank);
        if (other) return i + __builtin_ctz(other);
        i += 32;
    }
#else
    while (i + 8 <= n) {
        u64 w = load8(b, i);
        u64 other = ~(swar_eq(w, 32) | swar_eq(w, 10) | swar_eq(w, 13) | swar_eq(w, 9)) & HIGHS;
        if (other) return i + (ctz64(other) >> 3);
        i += 8;
    }
#endif
    while (i < n) {
        if (!BLANK(b[i])) return i;
        i++;
    }
    return i;
}

/* The end of the string whose opening quote is buf[i], or a sentinel. Plain stretches are
 * checked 32 bytes (AVX2) or 8 bytes (a word) at a time; a backslash, control or non-ASCII byte
 * hands the rest of the string to the full check (*plain 0: then it may hold escapes). */
static inline i64 skip_string_plain(const u8 *b, i64 i, i64 n, int *plain) {
    *plain = 1;
    i++;
#if WALK_AVX2
    const __m256i quote = _mm256_set1_epi8(34), slash = _mm256_set1_epi8(92), ctl_max = _mm256_set1_epi8(31);
    while (i + 32 <= n) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(b + i));
        __m256i ctl = _mm256_cmpeq_epi8(_mm256_min_epu8(v, ctl_max), v);   /* v <= 31 */
        __m256i m = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, slash)), ctl);
        unsigned mask = (unsigned)_mm256_movemask_epi8(m) | (unsigned)_mm256_movemask_epi8(v);   /* high bit: non-ASCII */
        if (mask) {
            i += __builtin_ctz(mask);
            break;
        }
        i += 32;
    }
#else
    while (i + 8 <= n) {
        u64 w = load8(b, i);
        /* a quote, a backslash, a byte below 32 or one with its high bit set */
        u64 m = swar_eq(w, 34) | swar_eq(w, 92) | (~((w & ~HIGHS) + ONES * 0x60) & HIGHS) | (w & HIGHS);
        if (m) {
            i += ctz64(m) >> 3;
            break;
        }
        i += 8;
    }
#endif
    while (i < n) {
        u8 c = b[i];
        if (c == 34) return i + 1;
        /* rare bytes: the full check judges the rest (from here: the stretch before is plain) */
        if (c == 92 || c < 32 || c >= 128) {
            *plain = 0;
            return string_full(b, i - 1, n).end;
        }
        i++;
    }
    return INCOMPLETE;
}

static inline i64 skip_string(const u8 *b, i64 i, i64 n) {
    int plain;
    return skip_string_plain(b, i, n, &plain);
}

/* From just after a member's key: past the colon to where its value starts, or a sentinel. */
static inline i64 value_start(const u8 *b, i64 i, i64 n) {
    i = ws(b, i, n);
    if (i >= n) return INCOMPLETE;
    if (b[i] != 58) return INVALID;
    i = ws(b, i + 1, n);
    if (i >= n) return INCOMPLETE;
    return i;
}

static inline i64 member_key(const u8 *b, i64 i, i64 n) {
    if (b[i] != 34) return INVALID;
    i = skip_string(b, i, n);
    if (i < 0) return i;
    return value_start(b, i, n);
}

/* Validate and skip one JSON value at buf[i]: its end or a sentinel. */
static i64 skip_value(const u8 *b, i64 i, i64 n) {
    u8 stack[STACK];
    int depth = 0;
    for (;;) {
        i = ws(b, i, n);
        if (i >= n) return INCOMPLETE;
        u8 c = b[i];
        if (c == 34) {
            i = skip_string(b, i, n);
            if (i < 0) return i;
        } else if (c == 45 || (c >= 48 && c <= 57)) {
            i = skip_number(b, i, n);
            if (i < 0) return i;
        } else if (c == 123 || c == 91) {
            if (depth >= STACK) return INVALID;
            stack[depth++] = c;
            i = ws(b, i + 1, n);
            if (i >= n) return INCOMPLETE;
            if ((c == 123 && b[i] == 125) || (c == 91 && b[i] == 93)) {
                depth--;
                i++;
            } else if (c == 123) {
                i = member_key(b, i, n);
                if (i < 0) return i;
                continue;
            } else continue;
        } else if (c == 116 || c == 102 || c == 110) {
            i64 word = c != 102 ? 4 : 5;
            if (i + word > n) return INCOMPLETE;
            if (c == 116 && !(b[i + 1] == 114 && b[i + 2] == 117 && b[i + 3] == 101)) return INVALID;
            if (c == 110 && !(b[i + 1] == 117 && b[i + 2] == 108 && b[i + 3] == 108)) return INVALID;
            if (c == 102 && !(b[i + 1] == 97 && b[i + 2] == 108 && b[i + 3] == 115 && b[i + 4] == 101))
                return INVALID;
            i += word;
        } else return INVALID;
        /* after a value: close containers or go on to the next member */
        for (;;) {
            if (depth == 0) return i;
            i = ws(b, i, n);
            if (i >= n) return INCOMPLETE;
            c = b[i];
            u8 top = stack[depth - 1];
            if (c == 44) {
                i++;
                if (top == 123) {
                    i = ws(b, i, n);
                    if (i >= n) return INCOMPLETE;
                    i = member_key(b, i, n);
                    if (i < 0) return i;
                }
                break;
            }
            if ((top == 123 && c == 125) || (top == 91 && c == 93)) {
                depth--;
                i++;
                continue;
            }
            return INVALID;
        }
    }
}

/* The "args" object at buf[i]: its integer fields into ints, the byte ranges of the raw texts
 * into raw (and their hashes), the rest skipped. Returns its end or a sentinel. */
static i64 args_object(const u8 *b, i64 i, i64 n, i64 *ints, i64 *raw, u64 *rhash, Rec *rec) {
    i64 open = i;
    int comm = 0;
    i = ws(b, i + 1, n);
    if (i < n && b[i] == 125) return i + 1;
    unsigned seen = 0;
    for (;;) {
        if (i >= n) return INCOMPLETE;
        if (b[i] != 34) return INVALID;
        i64 ke = skip_string(b, i, n);
        if (ke < 0) return ke;
        int key = arg_key(b, i + 1, ke - 1);
        if (key == K_OTHER && escaped(b, i + 1, ke - 1)) return BAILED;
        i = value_start(b, ke, n);
        if (i < 0) return i;
        if (key == K_OTHER || key == K_COMM_KEY) {
            comm |= key == K_COMM_KEY;
            i64 e = skip_value(b, i, n);
            if (e >= 0) rec_value(rec, i, e, V_SKIP, 0);
            i = e;
        } else if (key >= A_DIMS) {
            if (seen & (1u << key)) return BAILED;
            seen |= 1u << key;
            i64 e = skip_value(b, i, n);
            if (e < 0) return e;
            raw[2 * (key - A_DIMS)] = i;
            raw[2 * (key - A_DIMS) + 1] = e;
            rhash[key - A_DIMS] = hash_bytes(b, i, e);
            rec_value(rec, i, e, V_RAW, key - A_DIMS);
            i = e;
        } else {
            if (seen & (1u << key)) return BAILED;
            seen |= 1u << key;
            i64 v;
            i64 e = int_value(b, i, n, &v);
            if (e < 0) return e;
            rec_value(rec, i, e, V_INT, key);
            i = e;
            ints[key] = v;
        }
        if (i < 0) return i;
        i = ws(b, i, n);
        if (i >= n) return INCOMPLETE;
        if (b[i] == 44) { i = ws(b, i + 1, n); continue; }
        if (b[i] == 125) {
            if (comm) {
                rec->ok = 0;   /* the whole object is a text: not a template's steps */
                raw[2 * (A_COMM - A_DIMS)] = open;
                raw[2 * (A_COMM - A_DIMS) + 1] = i + 1;
                rhash[A_COMM - A_DIMS] = hash_bytes(b, open, i + 1);
            }
            return i + 1;
        }
        return INVALID;
    }
}

/* One event read as the template tp reads it, from its step k0 at buf[i] (step 0: the event's
 * '{'): the end past its '}'; TPL_VALUE where a value is not what the template's is (ev then
 * holds partial values); TPL_LITERAL where the bytes before step *k differ from the template's
 * literal, with *at where that literal would start (ev holds the values of steps before *k). */
#define TPL_VALUE (-2)
#define TPL_LITERAL (-1)
static inline i64 tpl_event(const u8 *b, i64 i, i64 n, const Tpl *tp, Ev *ev, int k0, int *k_out, i64 *at) {
    for (int k = k0; k < tp->nsteps; k++) {
        i64 len = tp->len[k];
        if (i + len >= n || !lit_eq(b + i, b + tp->at[k], len)) { *k_out = k; *at = i; return TPL_LITERAL; }
        i += len;
        i64 e;
        switch (tp->kind[k]) {
        case V_NAME: {
            if (b[i] != 34) return TPL_VALUE;
            int plain;
            e = skip_string_plain(b, i, n, &plain);
            if (e < 0) return TPL_VALUE;
            ev->name_s = i + 1;
            ev->name_e = e - 1;
            ev->name_h = hash_bytes(b, i + 1, e - 1);
            ev->name_esc = !plain && escaped(b, i + 1, e - 1);
            break;
        }
        case V_TS:
        case V_DUR: {
            Flt q = float_value(b, i, n);
            if (q.end < 0) return TPL_VALUE;
            if (tp->kind[k] == V_TS) { ev->ts = q.v; ev->ts_exact = q.exact; ev->ts_a = q.a; ev->ts_b = q.z; }
            else { ev->dur = q.v; ev->dur_exact = q.exact; ev->dur_a = q.a; ev->dur_b = q.z; }
            e = q.end;
            break;
        }
        case V_INT: {
            i64 v;
            e = int_value(b, i, n, &v);
            if (e < 0) return TPL_VALUE;
            ev->ints[tp->arg[k]] = v;
            break;
        }
        case V_RAW: {
            if (BLANK(b[i])) return TPL_VALUE;   /* skip_value would pass blanks the full walk's value_start passed */
            e = skip_value(b, i, n);
            if (e < 0) return TPL_VALUE;
            int a = tp->arg[k];
            ev->raw[2 * a] = i;
            ev->raw[2 * a + 1] = e;
            ev->hash[a] = hash_bytes(b, i, e);
            break;
        }
        default:
            if (BLANK(b[i])) return TPL_VALUE;
            e = skip_value(b, i, n);
            if (e < 0) return TPL_VALUE;
        }
        i = e;
    }
    i64 len = tp->len[tp->nsteps];
    if (i + len > n || !lit_eq(b + i, b + tp->at[tp->nsteps], len)) { *k_out = tp->nsteps; *at = i; return TPL_LITERAL; }
    ev->ph = tp->ph;
    return i + len;
}

/* The full walk of one event at buf[i] (its '{'), with each value recorded in rec: the end past
 * its '}', or a failure as fail_of's (1 ran out of bytes, 2 left to msgspec), negated. */
static i64 full_event(const u8 *b, i64 i, i64 n, const int8_t *phase, Ev *ev, Rec *rec) {
    unsigned seen = 0;
    i++;
    i = ws(b, i, n);
    if (i < n && b[i] == 125) return -2;   /* {} has no phase */
    for (;;) {
        if (i >= n) return -1;
        if (b[i] != 34) return -2;
        i64 ke = skip_string(b, i, n);
        if (ke < 0) return -fail_of(ke);
        int key = event_key(b, i + 1, ke - 1);
        if (key == K_OTHER && escaped(b, i + 1, ke - 1)) return -2;   /* may spell one of ours */
        i = value_start(b, ke, n);
        if (i < 0) return -fail_of(i);
        if (key != K_OTHER) {
            unsigned bit = 1u << key;
            if (seen & bit) return -2;   /* a duplicate key: msgspec knows which wins */
            seen |= bit;
        }
        u8 c = b[i];
        i64 e;
        if (key == K_PH) {
            if (c != 34) return -2;
            e = skip_string(b, i, n);
            if (e < 0) return -fail_of(e);
            if (e - i != 3 || b[i + 1] >= 128 || phase[b[i + 1]] == 0) return -2;
            ev->ph = phase[b[i + 1]];
            i = e;
        } else if (key == K_CAT || key == K_NAME) {
            if (c == 110 && key == K_NAME) {
                e = skip_value(b, i, n);
                if (e < 0) return -fail_of(e);
                i = e;   /* null name: kept as "no name" */
            } else if (c != 34) {
                return -2;
            } else {
                e = skip_string(b, i, n);
                if (e < 0) return -fail_of(e);
                if (key == K_CAT) {
                    if (escaped(b, i + 1, e - 1)) return -2;
                    ev->cat_s = i + 1;
                    ev->cat_e = e - 1;
                } else {
                    ev->name_s = i + 1;
                    ev->name_e = e - 1;
                    ev->name_h = hash_bytes(b, i + 1, e - 1);
                    ev->name_esc = escaped(b, i + 1, e - 1);
                    rec_value(rec, i, e, V_NAME, 0);
                }
                i = e;
            }
        } else if (key == K_TS || key == K_DUR) {
            Flt q = float_value(b, i, n);
            if (q.end < 0) return -fail_of(q.end);
            if (key == K_TS) { ev->ts = q.v; ev->ts_exact = q.exact; ev->ts_a = q.a; ev->ts_b = q.z; }
            else { ev->dur = q.v; ev->dur_exact = q.exact; ev->dur_a = q.a; ev->dur_b = q.z; }
            rec_value(rec, i, q.end, key == K_TS ? V_TS : V_DUR, 0);
            i = q.end;
        } else if (key == K_PID || key == K_TID) {
            i64 v;
            e = int_value(b, i, n, &v);
            if (e < 0) return -fail_of(e);
            ev->ints[key == K_PID ? PID : TID] = v;
            rec_value(rec, i, e, V_INT, key == K_PID ? PID : TID);
            i = e;
        } else if (key == K_ARGS && c == 123) {
            e = args_object(b, i, n, ev->ints, ev->raw, ev->hash, rec);
            if (e < 0) return -fail_of(e);
            i = e;
        } else if (key == K_ARGS && c == 110) {
            e = skip_value(b, i, n);   /* args: null */
            if (e < 0) return -fail_of(e);
            i = e;
        } else if (key == K_ARGS) {
            return -2;
        } else {
            e = skip_value(b, i, n);
            if (e < 0) return -fail_of(e);
            rec_value(rec, i, e, V_SKIP, 0);
            i = e;
        }
        i = ws(b, i, n);
        if (i >= n) return -1;
        if (b[i] == 44) { i = ws(b, i + 1, n); continue; }
        if (b[i] == 125) return i + 1;
        return -2;
    }
}

/* the group code of a category's bytes (0: not one kerneldiff reads) */
static inline int8_t group_code(const u8 *b, i64 cat_s, i64 cat_e, const Tables *t) {
    i64 clen = cat_e - cat_s, lo = 0;
    for (i64 k = 0; k < t->ncats; k++) {
        i64 hi = t->ends[k];
        if (hi - lo == clen && memcmp(t->blob + lo, b + cat_s, (size_t)clen) == 0) return t->codes[k];
        lo = hi;
    }
    return 0;
}

/* state: [rows written, events consumed, fixes, next position, status] */
static void scan(const u8 *b, i64 n, i64 pos, i64 limit, Tables *t, i64 *state) {
    i64 rows = 0, events = 0, fixes = 0;
    int status = ST_LIMIT;
    i64 i = ws(b, pos, n);
    Tpl tpl[NTPL];
    int order[NTPL], ntpl = 0, misses = 0, off = 0;   /* off: events to read without trying templates */
    int pre[NTPL][NTPL];   /* the steps two templates share, literals and values (shared_steps) */
    for (int k = 0; k < NTPL; k++) order[k] = k;
    Ev ev;
    Rec rec;
    for (;;) {
        if (i >= limit || i >= n) break;
        if (b[i] == 93) { status = ST_ARRAY_END; break; }
        if (b[i] != 123) { status = ST_BAIL; break; }
        if (rows >= t->cap || fixes + 2 > t->fcap) { status = ST_FULL; break; }
        i64 start = i, end = -1;
        int8_t code = 0;
        if (use_templates && off == 0 && ntpl) {
            /* the most recently used template first; where one's literal k differs, another that
             * shares its steps before k (pre) goes on from there, with the values read so far */
            memcpy(&ev, &EV_EMPTY, sizeof ev);
            unsigned tried = 0;
            int p = 0, cur = order[0], k0 = 0;
            i64 at = start;
            for (;;) {
                int k = 0;
                tried |= 1u << cur;
                end = tpl_event(b, at, n, &tpl[cur], &ev, k0, &k, &at);
                if (end >= 0) {
                    code = tpl[cur].code;
                    for (p = 0; order[p] != cur; p++) {}
                    for (; p > 0; p--) order[p] = order[p - 1];
                    order[0] = cur;
                    break;
                }
                if (end == TPL_VALUE) break;
                int next = -1;
                for (int q = 0; q < ntpl; q++) {
                    int u = order[q];
                    if (!(tried & (1u << u)) && pre[cur][u] >= k) { next = u; break; }
                }
                if (next < 0) break;
                cur = next;
                k0 = k;
            }
            if (end < 0) end = -1;
        } else if (off > 0) off--;
        if (end < 0) {
            memcpy(&ev, &EV_EMPTY, sizeof ev);
            rec.n = 0;
            rec.ok = 1;
            end = full_event(b, start, n, t->phase, &ev, &rec);
            if (end < 0 || ev.ph < 0) {
                i = start;
                status = end == -1 ? ST_LIMIT : ST_BAIL;
                break;
            }
            code = ev.ph == 2 && ev.cat_s >= 0 ? group_code(b, ev.cat_s, ev.cat_e, t) : 0;
            /* a template of this event; after 64 events in a row that none matched (layouts that
             * do not repeat), none is made or tried for the next 4096 */
            if (use_templates && rec.ok && off == 0) {
                if (++misses >= 64) { misses = 0; off = 4096; }
                int slot = ntpl < NTPL ? ntpl++ : order[NTPL - 1];
                for (int q = ntpl - 1; q > 0; q--) order[q] = order[q - 1];
                order[0] = slot;
                Tpl *tp = &tpl[slot];
                i64 at = start;
                for (int k = 0; k < rec.n; k++) {
                    tp->at[k] = at;
                    tp->len[k] = rec.s[k] - at;
                    tp->kind[k] = rec.kind[k];
                    tp->arg[k] = rec.arg[k];
                    at = rec.e[k];
                }
                tp->at[rec.n] = at;
                tp->len[rec.n] = end - at;
                tp->nsteps = rec.n;
                tp->ph = ev.ph;
                tp->code = code;
                for (int q = 0; q < ntpl; q++) pre[slot][q] = pre[q][slot] = q == slot ? TSTEPS : shared_steps(b, tp, &tpl[q]);
            }
        } else misses = 0;
        i = end;
        /* the separator after the event */
        i64 j = ws(b, i, n), nxt;
        if (j >= n) { i = start; break; }
        if (b[j] == 44) nxt = ws(b, j + 1, n);
        else if (b[j] == 93) {
            /* the last event: left to the caller with the document's end, which decides
             * whether the file is whole (a broken end makes the msgspec path drop it) */
            i = start;
            status = ST_ARRAY_END;
            break;
        } else { i = start; status = ST_BAIL; break; }
        events++;
        i = nxt;
        if (code == 0) continue;
        t->code[rows] = code;
        /* column after column (ts, then dur; each integer field): numpy reads a field of chosen
         * rows as one contiguous gather */
        t->floats[rows] = ev.ts;
        t->floats[t->cap + rows] = ev.dur;
        for (int k = 0; k < NINTS; k++) t->ints[k * t->cap + rows] = ev.ints[k];
        t->nhash[rows] = ev.name_h;
        t->nstart[rows] = ev.name_s;
        t->nlen[rows] = ev.name_s >= 0 ? ev.name_e - ev.name_s : -1;
        t->nesc[rows] = (u8)ev.name_esc;
        memcpy(t->shape + 2 * NRAW * rows, ev.raw, sizeof ev.raw);
        for (int k = 0; k < NRAW; k++) t->shash[NRAW * rows + k] = ev.raw[2 * k] >= 0 ? ev.hash[k] : 0;
        /* each distinct name and raw text of the call once, for Python to look up and decode */
        t->nloc[rows] = ev.name_s >= 0 ? distinct_id(&t->names, t->gen, ev.name_h, b, ev.name_s,
                                                      ev.name_e - ev.name_s, rows) : -1;
        for (int k = 0; k < NRAW; k++) {
            i64 s0 = ev.raw[2 * k], len = ev.raw[2 * k + 1] - s0;
            /* keyed as scan._texts_of keys the cache: hash and length; a collective's is read apart */
            t->sloc[NRAW * rows + k] = s0 >= 0 && k != A_COMM - A_DIMS
                ? distinct_id(&t->texts, t->gen, ev.hash[k] ^ ((u64)len << 40), b, s0, len, NRAW * rows + k)
                : -1;
        }
        if (!ev.ts_exact) {
            i64 *f = t->fix + 4 * fixes++;
            f[0] = rows; f[1] = FLOAT_TS; f[2] = ev.ts_a; f[3] = ev.ts_b;
        }
        if (!ev.dur_exact) {
            i64 *f = t->fix + 4 * fixes++;
            f[0] = rows; f[1] = FLOAT_DUR; f[2] = ev.dur_a; f[3] = ev.dur_b;
        }
        rows++;
    }
    state[0] = rows;
    state[1] = events;
    state[2] = fixes;
    state[3] = i;
    state[4] = status;
}

#undef ws
#undef skip_string
#undef skip_string_plain
#undef value_start
#undef member_key
#undef skip_value
#undef args_object
#undef scan
#undef tpl_event
#undef full_event
#undef group_code
