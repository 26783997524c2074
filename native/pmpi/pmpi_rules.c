/*
 * pmpi_rules.c -- reader of colltune's own rules file (src/colltune/rules.py):
 *
 *     # colltune-rules 1
 *     # target: colltune
 *     # COLLECTIVE NP_MIN NP_MAX SIZE_MIN SIZE_MAX ALGORITHM PARAMS [MAPPING]
 *     bcast 2 - 0 8191 binomial -
 *     bcast 2 - 8192 - pipeline segsize=8192
 *
 * and, from a study with load levels (docs/workload.md), load classes on the probe
 * index and rules that hold under one class only:
 *     # load-class: quiet 0 9.5
 *     # load-class: busy 9.5 -
 *     bcast 2 - 0 - binomial - load=quiet
 * and node-aware rules, a range of processes per node (either order with load=):
 *     bcast 16 - 0 - binomial - ppn=1-1
 *     bcast 16 - 0 - linear - ppn=2-
 *
 * The same checks as `colltune rules check` (rules/ruleset.py from_text for the
 * form, rules/interpose.py first_problem for the algorithms against the registry's
 * table, which is this library's own): the algorithm and its parameters must be
 * valid for this build of the algorithm library (ct_choice_parse), no test-only
 * algorithm, MAPPING one of core, socket, node; tests/test_pmpi.py runs one set of
 * files through both. The first problem makes the whole file unusable: a caller
 * then runs the MPI library's own collectives.
 */
#include "pmpi_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 10

void ct_pmpi_rules_free(ct_pmpi_rules_t *r) {
    for (int c = 0; c < CT_NCOLL; c++) {
        free(r->rules[c]);
        r->rules[c] = NULL;
        r->nrules[c] = 0;
    }
    r->has_ppn = 0;
}

/* A non-negative decimal integer, or '-' (-1) where allowed. */
/* "1-4", "2-" (no bound: max -1), "4" (exactly 4): 0, else -1 */
static int parse_ppn(const char *t, long long *lo, long long *hi) {
    if (!isdigit((unsigned char)t[0])) return -1;
    char *end;
    errno = 0;
    long long a = strtoll(t, &end, 10), b = a;
    if (errno || a > (1 << 30)) return -1;
    if (*end == '-') {
        const char *q = end + 1;
        if (!*q) {
            b = -1;
            end = (char *)q;
        } else {
            if (!isdigit((unsigned char)*q)) return -1;
            b = strtoll(q, &end, 10);
            if (errno || b > (1 << 30)) return -1;
        }
    }
    if (*end) return -1;
    *lo = a;
    *hi = b;
    return 0;
}

static int parse_bound(const char *s, int allow_dash, long long max, long long *out) {
    if (allow_dash && strcmp(s, "-") == 0) {
        *out = -1;
        return 0;
    }
    if (!*s) return -1;
    for (const char *q = s; *q; q++)
        if (!isdigit((unsigned char)*q)) return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v > max) return -1;
    *out = v;
    return 0;
}

static int fail(char *err, size_t errlen, const char *name, int line, const char *what,
                ct_pmpi_rules_t *out) {
    if (line > 0)
        snprintf(err, errlen, "%s:%d: %s", name, line, what);
    else
        snprintf(err, errlen, "%s: %s", name, what);
    ct_pmpi_rules_free(out);
    return -1;
}

static int add_rule(ct_pmpi_rules_t *out, ct_coll_t c, const ct_pmpi_decision_t *d) {
    ct_pmpi_decision_t *n = realloc(out->rules[c], sizeof *n * (size_t)(out->nrules[c] + 1));
    if (!n) return -1;
    out->rules[c] = n;
    n[out->nrules[c]++] = *d;
    return 0;
}

int ct_pmpi_rules_parse(const char *text, const char *name, int first_id,
                        ct_pmpi_rules_t *out, char *err, size_t errlen) {
    char msg[700];
    memset(out, 0, sizeof *out);
    int lineno = 0, id = first_id;
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        lineno++;
        char line[1024];
        if (len >= sizeof line)
            return fail(err, errlen, name, lineno, "line longer than 1023 characters", out);
        memcpy(line, p, len);
        line[len] = '\0';
        p = eol ? eol + 1 : p + len;
        if (len && line[len - 1] == '\r') line[--len] = '\0';
        char *s = line;
        while (isspace((unsigned char)*s)) s++;
        char *e = s + strlen(s);
        while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
        if (lineno == 1) {
            if (strcmp(s, "# colltune-rules 1") != 0)
                return fail(err, errlen, name, 1,
                            "not a colltune rules file (the first line must be "
                            "'# colltune-rules 1')", out);
            continue;
        }
        if (!*s) continue;
        if (*s == '#') {
            char *body = s + 1;
            while (isspace((unsigned char)*body)) body++;
            if (strncmp(body, "load-class:", 11) == 0) {
                char cname[64], lo_t[64], hi_t[64], tail[2];
                int got = sscanf(body + 11, " %63s %63s %63s %1s", cname, lo_t, hi_t, tail);
                char *e1 = NULL, *e2 = NULL;
                /* plain decimal numbers only (no hex, inf or nan: as rules.py) */
                if (got >= 3 && (strspn(lo_t, "0123456789.eE+-") != strlen(lo_t) ||
                                 (strcmp(hi_t, "-") != 0 &&
                                  strspn(hi_t, "0123456789.eE+-") != strlen(hi_t))))
                    got = 0;
                double lo = got >= 3 ? strtod(lo_t, &e1) : -1;
                double hi = got >= 3 && strcmp(hi_t, "-") != 0 ? strtod(hi_t, &e2) : -1;
                if (got != 3 || !e1 || *e1 || !(lo >= 0) || lo > 1e300 ||
                    (e2 && (*e2 || !(hi > lo) || hi > 1e300)))
                    return fail(err, errlen, name, lineno,
                                "load-class must be 'NAME MIN MAX' with 0 <= MIN < MAX "
                                "(MAX '-' for no bound)", out);
                /* NAME: a letter, then letters, digits, '_' or '-' (as rules.py), and
                 * whole (%63s cuts a longer one) */
                int name_ok = isalpha((unsigned char)cname[0]) && strlen(cname) < 63;
                for (const char *q = cname; *q; q++)
                    if (!isalnum((unsigned char)*q) && *q != '_' && *q != '-') name_ok = 0;
                if (!name_ok)
                    return fail(err, errlen, name, lineno,
                                "load-class NAME must start with a letter and hold letters, "
                                "digits, '_' or '-' (at most 62)", out);
                for (int k = 0; k < out->nclasses; k++)
                    if (strcmp(out->classes[k].name, cname) == 0) {
                        snprintf(msg, sizeof msg, "load-class %s defined twice", cname);
                        return fail(err, errlen, name, lineno, msg, out);
                    }
                if (out->nclasses == CT_PMPI_MAX_CLASSES)
                    return fail(err, errlen, name, lineno, "more than 16 load classes", out);
                ct_pmpi_load_class_t *lc = &out->classes[out->nclasses++];
                snprintf(lc->name, sizeof lc->name, "%s", cname);
                lc->lo = lo;
                lc->hi = hi;
                continue;
            }
            if (strncmp(body, "target:", 7) == 0) {
                char *t = body + 7;
                while (isspace((unsigned char)*t)) t++;
                if (strcmp(t, "colltune") != 0) {
                    snprintf(msg, sizeof msg,
                             "target '%.40s': its algorithms are the MPI library's, not "
                             "colltune's (export it with colltune rules export and give it to "
                             "the library itself)", t);
                    return fail(err, errlen, name, lineno, msg, out);
                }
            }
            continue;
        }
        char *f[MAX_FIELDS];
        int nf = 0;
        char *save = NULL;
        for (char *tok = strtok_r(s, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
            if (nf == MAX_FIELDS) break;
            f[nf++] = tok;
        }
        int load = -1, keyed = 0;
        long long ppn_min = -1, ppn_max = -1; /* ppn=: -1 any; ppn_max -1 no bound */
        while (nf > 7 && (strncmp(f[nf - 1], "load=", 5) == 0 ||
                          strncmp(f[nf - 1], "ppn=", 4) == 0)) {
            const char *kv = f[--nf];
            keyed++;
            if (kv[0] == 'p') {
                if (ppn_min >= 0) return fail(err, errlen, name, lineno, "ppn= given twice", out);
                if (parse_ppn(kv + 4, &ppn_min, &ppn_max)) {
                    snprintf(msg, sizeof msg, "ppn=%.40s: write ppn=MIN-MAX, ppn=MIN- (no upper "
                             "bound) or ppn=N, with whole numbers", kv + 4);
                    return fail(err, errlen, name, lineno, msg, out);
                }
                if (ppn_min < 1 || (ppn_max >= 0 && ppn_max < ppn_min)) {
                    snprintf(msg, sizeof msg, "ppn=%.40s: needs 1 <= MIN <= MAX <= %d", kv + 4,
                             1 << 30);
                    return fail(err, errlen, name, lineno, msg, out);
                }
                continue;
            }
            if (load >= 0) return fail(err, errlen, name, lineno, "load= given twice", out);
            const char *lname = kv + 5;
            for (int k = 0; k < out->nclasses; k++)
                if (strcmp(out->classes[k].name, lname) == 0) load = k;
            if (load < 0) {
                snprintf(msg, sizeof msg, "load=%.60s: no such load class defined above (a "
                         "'# load-class: NAME MIN MAX' line)", lname);
                return fail(err, errlen, name, lineno, msg, out);
            }
        }
        if (nf != 7 && nf != 8) {
            snprintf(msg, sizeof msg,
                     "expected 7 or 8 fields (COLLECTIVE NP_MIN NP_MAX SIZE_MIN SIZE_MAX "
                     "ALGORITHM PARAMS [MAPPING]) and optional load=CLASS and ppn=MIN-MAX, "
                     "found %s%d", nf + keyed == MAX_FIELDS ? "at least " : "", nf + keyed);
            return fail(err, errlen, name, lineno, msg, out);
        }
        ct_coll_t coll;
        if (ct_coll_from_name(f[0], &coll) != MPI_SUCCESS) {
            int n = snprintf(msg, sizeof msg, "unknown collective '%.40s' (valid: ", f[0]);
            for (int c = 0; c < CT_NCOLL && n > 0 && (size_t)n < sizeof msg; c++)
                n += snprintf(msg + n, sizeof msg - (size_t)n, "%s%s", c ? ", " : "",
                              ct_coll_name((ct_coll_t)c));
            if (n > 0 && (size_t)n < sizeof msg) snprintf(msg + n, sizeof msg - (size_t)n, ")");
            return fail(err, errlen, name, lineno, msg, out);
        }
        long long v[4];
        static const char *const what[4] = { "NP_MIN", "NP_MAX", "SIZE_MIN", "SIZE_MAX" };
        for (int k = 0; k < 4; k++)
            if (parse_bound(f[1 + k], k % 2, k < 2 ? 1 << 30 : (long long)1 << 62, &v[k])) {
                snprintf(msg, sizeof msg, "%s '%.40s' is not a non-negative decimal integer%s",
                         what[k], f[1 + k], k % 2 ? " or '-'" : "");
                return fail(err, errlen, name, lineno, msg, out);
            }
        long long np_min = v[0], np_max = v[1], size_min = v[2], size_max = v[3];
        if (np_min < 1) return fail(err, errlen, name, lineno, "NP_MIN must be at least 1", out);
        if (np_max >= 0 && np_max < np_min) {
            snprintf(msg, sizeof msg, "NP_MAX %lld is below NP_MIN %lld", np_max, np_min);
            return fail(err, errlen, name, lineno, msg, out);
        }
        if (size_max >= 0 && size_max < size_min) {
            snprintf(msg, sizeof msg, "SIZE_MAX %lld is below SIZE_MIN %lld", size_max, size_min);
            return fail(err, errlen, name, lineno, msg, out);
        }
        if ((coll == CT_ALLTOALLV || coll == CT_GATHERV || coll == CT_SCATTERV) &&
            (size_min != 0 || size_max >= 0)) { /* decided for size 0 (pmpi_call.c) */
            snprintf(msg, sizeof msg, "%s rules cannot depend on the size: a rank knows only "
                     "its own counts, and every rank must choose alike (write SIZE_MIN 0 and "
                     "SIZE_MAX -)", f[0]);
            return fail(err, errlen, name, lineno, msg, out);
        }
        if (strchr(f[5], ':')) {
            snprintf(msg, sizeof msg, "algorithm '%.60s' is an MPI library's own algorithm; "
                     "this file must name colltune's algorithms or native", f[5]);
            return fail(err, errlen, name, lineno, msg, out);
        }
        size_t plen = strlen(f[6]);
        if (strcmp(f[6], "-") != 0 &&
            (f[6][0] == ',' || f[6][plen - 1] == ',' || strstr(f[6], ",,"))) {
            snprintf(msg, sizeof msg, "PARAMS '%.60s' has an empty item (KEY=VALUE,KEY=VALUE "
                     "or '-')", f[6]);
            return fail(err, errlen, name, lineno, msg, out);
        }
        if (strcmp(f[6], "-") != 0) {
            /* a key given twice is refused (rules.py does too) */
            const char *items[64];
            size_t klen[64];
            int nk = 0;
            for (const char *q = f[6]; *q && nk < 64;) {
                const char *comma = strchr(q, ',');
                size_t il = comma ? (size_t)(comma - q) : strlen(q);
                const char *eq = memchr(q, '=', il);
                size_t kl = eq ? (size_t)(eq - q) : il;
                for (int k = 0; k < nk; k++)
                    if (klen[k] == kl && strncmp(items[k], q, kl) == 0) {
                        snprintf(msg, sizeof msg, "parameter '%.*s' given twice", (int)kl, q);
                        return fail(err, errlen, name, lineno, msg, out);
                    }
                items[nk] = q;
                klen[nk++] = kl;
                q = comma ? comma + 1 : q + il;
            }
        }
        if (nf == 8) {
            /* MAPPING: one of the study's mappings (mpi/placement.py) */
            static const char *const mappings[] = { "core", "socket", "node" };
            int known = 0;
            for (int k = 0; k < 3; k++) known |= strcmp(f[7], mappings[k]) == 0;
            if (!known) {
                char hint[96];
                ct_did_you_mean(f[7], mappings, 3, hint, sizeof hint);
                snprintf(msg, sizeof msg, "MAPPING '%.40s' is not a mapping%s; valid: core, "
                         "socket, node", f[7], hint);
                return fail(err, errlen, name, lineno, msg, out);
            }
        }
        char spec[512];
        if (strcmp(f[6], "-") == 0)
            snprintf(spec, sizeof spec, "%s", f[5]);
        else if ((size_t)snprintf(spec, sizeof spec, "%s:%s", f[5], f[6]) >= sizeof spec)
            return fail(err, errlen, name, lineno, "ALGORITHM and PARAMS too long", out);
        ct_pmpi_decision_t d;
        memset(&d, 0, sizeof d);
        if (ct_choice_parse(coll, spec, &d.choice) != MPI_SUCCESS) {
            snprintf(msg, sizeof msg, "%s", ct_last_error());
            return fail(err, errlen, name, lineno, msg, out);
        }
        if (ct_algo_get(d.choice.algo)->constraints & CT_HIDDEN) {
            snprintf(msg, sizeof msg, "%s/%s is a test-only algorithm (leading '_'); a rules "
                     "file names the others", f[0], f[5]);
            return fail(err, errlen, name, lineno, msg, out);
        }
        d.native = strcmp(ct_algo_get(d.choice.algo)->name, "native") == 0;
        ct_choice_format(&d.choice, d.spec, sizeof d.spec);
        snprintf(d.source, sizeof d.source, "%.140s:%d", name, lineno);
        d.np_min = (int)np_min;
        d.np_max = (int)np_max;
        d.size_min = size_min;
        d.size_max = size_max;
        d.id = id++;
        d.rule = 1;
        d.load = load;
        d.ppn_min = (int)ppn_min;
        d.ppn_max = (int)ppn_max;
        if (ppn_min >= 0) out->has_ppn = 1;
        /* MAPPING (field 8, checked above): the interposition library does not know
         * the job's mapping, so a rule applies whatever mapping it names, as
         * RuleSet.lookup(mapping=None) does */
        if (add_rule(out, coll, &d))
            return fail(err, errlen, name, lineno, "out of memory", out);
    }
    if (lineno == 0)
        return fail(err, errlen, name, 0, "empty file (the first line must be "
                    "'# colltune-rules 1')", out);
    return 0;
}
