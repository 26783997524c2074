/*
 * choice.c -- algorithm choices as text: collective and parameter names,
 * parsing of "name:key=value,..." specs, checks of a choice against the
 * registry's declared ranges, and formatting back to a spec.
 */
#include "ct_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

static const char *coll_names[CT_NCOLL] = { "bcast",     "reduce",   "gather",    "allgather",
                                            "allreduce", "alltoall", "alltoallv", "scatter",
                                            "barrier", "reduce_scatter_block", "reduce_scatter",
                                            "allgatherv", "gatherv", "scatterv" };

const char *ct_coll_name(ct_coll_t coll) {
    return (coll >= 0 && coll < CT_NCOLL) ? coll_names[coll] : "?";
}

int ct_coll_from_name(const char *name, ct_coll_t *out) {
    char valid[256] = "";
    size_t used = 0;
    for (int c = 0; c < CT_NCOLL; c++) {
        if (name && strcmp(name, coll_names[c]) == 0) {
            *out = (ct_coll_t)c;
            return MPI_SUCCESS;
        }
        int w = snprintf(valid + used, sizeof valid - used, "%s%s", c ? ", " : "", coll_names[c]);
        if (w > 0 && (size_t)w < sizeof valid - used) used += (size_t)w;
    }
    return ct_set_error(MPI_ERR_ARG, "unknown collective '%s'; valid: %s",
                        name ? name : "(null)", valid);
}

static const struct {
    const char *name, *help;
} param_info[CT_NPARAMS] = {
    { "segsize", "segment size in bytes (0 = no segmentation; auto = chosen per call from the message size and the process count; Bcast cuts bytes of the type signature, Reduce/Allreduce whole elements)" },
    { "fanout", "number of children per tree node / number of chains" },
    { "radix", "k-nomial tree radix" },
    { "bcast", "inner Bcast algorithm (ALG, or ALG:key=value+key=value with its own parameters)" },
    { "reduce", "inner Reduce algorithm (ALG, or ALG:key=value+key=value)" },
    { "gather", "inner Gather algorithm (ALG, or ALG:key=value+key=value)" },
    { "remap", "rank remapping: none, seq (run as if ranks were placed sequentially over the nodes), rr (as if round-robin), auto (the order that suits the algorithm)" },
    { "max_requests", "outstanding sends (and as many receives) per process, 0 = one to every other process at once" },
    { "inter", "hierarchical: the algorithm among the node leaders (ALG, or ALG:key=value+key=value with its own parameters)" },
    { "intra", "hierarchical: the algorithm inside each node (ALG, or ALG:key=value+key=value)" },
    { "vppn", "hierarchical: virtual nodes of this many consecutive ranks (the last one may be smaller); 0 = the real nodes (shared memory, or COLLTUNE_NODES / COLLTUNE_VIRTUAL_PPN)" },
    { "leaders", "multi-leader hierarchical: the vector cut into this many slices per node, each owned by one rank of the node (its leader), every owner in the inter-node phase of its slice; 0 = one per rank of the largest node" },
};

static const char *remap_names[] = { "none", "seq", "rr", "auto" };
const char *ct_remap_name(long remap) {
    return remap >= 0 && remap <= CT_REMAP_AUTO ? remap_names[remap] : "?";
}
/* remap applies to the collectives whose result does not depend on a rank
 * order the layer cannot restore (Gather is not among them) */
static int remap_allowed(ct_coll_t coll) {
    return coll == CT_BCAST || coll == CT_REDUCE || coll == CT_ALLGATHER ||
           coll == CT_ALLREDUCE;
}
int ct_coll_remaps(ct_coll_t coll) { return remap_allowed(coll); }

const char *ct_param_name(ct_param_id_t id) {
    return (id >= 0 && id < CT_NPARAMS) ? param_info[id].name : "?";
}
const char *ct_param_help(ct_param_id_t id) {
    return (id >= 0 && id < CT_NPARAMS) ? param_info[id].help : "?";
}

/* the collective of an inner-algorithm parameter of an algorithm of `outer` (hier.c) */
#define inner_coll(id) ct_hier_inner_coll(a->coll, (id))
static int is_inner(ct_param_id_t id) {
    return id == CT_P_BCAST || id == CT_P_REDUCE || id == CT_P_GATHER || id == CT_P_INTER ||
           id == CT_P_INTRA;
}

/* ---- inner choices with parameters of their own (ct_inner_value) --------------
 * A process-wide table of interned choices: entries only ever added, under the lock,
 * each written before the count that publishes it, read without a lock (as util.c's
 * datatype table); one table for every thread and communicator. */
static ct_choice_t inner_tab[CT_INNER_MAX];
static _Atomic int inner_n;
static pthread_mutex_t inner_lock = PTHREAD_MUTEX_INITIALIZER;

/* two choices alike, field by field (a struct's padding is not compared) */
static int same_inner(const ct_choice_t *x, const ct_choice_t *y) {
    return x->algo == y->algo && memcmp(x->params.v, y->params.v, sizeof x->params.v) == 0;
}

/* the interned choice a value stands for; NULL for a registry index or garbage */
static const ct_choice_t *inner_entry(long v) {
    if (v < CT_INNER_BASE) return NULL;
    long slot = v - CT_INNER_BASE;
    return slot < atomic_load_explicit(&inner_n, memory_order_acquire) ? &inner_tab[slot]
                                                                        : NULL;
}
/* the registry index of the inner algorithm a value names; -1 for garbage */
static int inner_algo(long v) {
    const ct_choice_t *e = inner_entry(v);
    if (e) return e->algo;
    return v >= 0 && v < CT_INNER_BASE ? (int)v : -1;
}

int ct_inner_choice(long value, ct_choice_t *out) {
    const ct_choice_t *e = inner_entry(value);
    if (e) {
        *out = *e;
        return MPI_SUCCESS;
    }
    if (inner_algo(value) < 0 || !ct_algo_get(inner_algo(value)))
        return ct_set_error(MPI_ERR_ARG, "inner algorithm value %ld is neither a registry "
                            "index nor a ct_inner_value handle", value);
    return ct_choice_default((int)value, out);
}

int ct_inner_value(const ct_choice_t *inner, long *value) {
    CT_CHECK(ct_choice_check(inner));
    const ct_algo_t *ia = ct_algo_get(inner->algo);
    if (ia->constraints & CT_HIDDEN)
        return ct_set_error(MPI_ERR_ARG, "%s/%s is a test-only algorithm: never inner",
                            ct_coll_name(ia->coll), ia->name);
    if (strncmp(ia->name, "hier", 4) == 0)
        return ct_set_error(MPI_ERR_ARG, "%s/%s: an inner algorithm cannot itself be "
                            "hierarchical", ct_coll_name(ia->coll), ia->name);
    if (inner->params.v[CT_P_REMAP] != CT_REMAP_NONE)
        return ct_set_error(MPI_ERR_ARG, "%s/%s: remap does not apply to an inner algorithm "
                            "(the dispatcher remaps the outer call only)",
                            ct_coll_name(ia->coll), ia->name);
    /* the algorithm's own parameters over its defaults: entries it does not read
     * never make two equal choices differ */
    ct_choice_t def, c;
    CT_CHECK(ct_choice_default(inner->algo, &def));
    c = def;
    for (int j = 0; j < ia->nparams; j++) {
        ct_param_id_t id = ia->params[j].id;
        if (is_inner(id) && inner->params.v[id] >= CT_INNER_BASE)
            return ct_set_error(MPI_ERR_ARG, "%s/%s: %s: an inner algorithm's own inner "
                                "algorithms take no parameters (one level of nesting)",
                                ct_coll_name(ia->coll), ia->name, ct_param_name(id));
        c.params.v[id] = inner->params.v[id];
    }
    if (same_inner(&c, &def)) {
        *value = inner->algo;
        return MPI_SUCCESS;
    }
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&inner_lock);
    int n = atomic_load_explicit(&inner_n, memory_order_relaxed), slot = 0;
    while (slot < n && !same_inner(&inner_tab[slot], &c)) slot++;
    if (slot == n) {
        if (n == CT_INNER_MAX) {
            rc = ct_set_error(MPI_ERR_ARG, "%s/%s: more than %d different inner algorithms "
                              "with parameters in one process", ct_coll_name(ia->coll),
                              ia->name, CT_INNER_MAX);
        } else {
            inner_tab[n] = c;
            atomic_store_explicit(&inner_n, n + 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&inner_lock);
    if (rc == MPI_SUCCESS) *value = CT_INNER_BASE + slot;
    return rc;
}

/* "linear, chain, ..." of one collective (visible entries only) */
static void list_names(ct_coll_t coll, int skip_native, char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ct_algo_count(); i++) {
        const ct_algo_t *a = ct_algo_get(i);
        if (a->coll != coll || (a->constraints & CT_HIDDEN)) continue;
        if (skip_native && strcmp(a->name, "native") == 0) continue;
        int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", a->name);
        if (w < 0 || (size_t)w >= len - used) break;
        used += (size_t)w;
    }
}

/* " (did you mean 'x'?)" for the visible name of `coll` closest to `word` (edit
 * distance, close enough to be a typo), else "": as base/errors.did_you_mean */
static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b), row[64];
    if (la >= 63 || lb >= 63) return (size_t)-1;
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

void ct_did_you_mean(const char *word, const char *const *cands, int n, char *buf, size_t len) {
    size_t best = (size_t)-1;
    const char *pick = NULL;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t d = edit_distance(word, cands[i]);
        size_t la = strlen(word), lb = strlen(cands[i]), mx = la > lb ? la : lb;
        /* similar enough: about 60 % of the letters in common */
        if (d < mx && 20 * (mx - d) >= 6 * (la + lb) && d < best) {
            best = d;
            pick = cands[i];
        }
    }
    if (pick) snprintf(buf, len, " (did you mean '%s'?)", pick);
}

static void suggest_algo(ct_coll_t coll, const char *word, char *buf, size_t len) {
    const char *cands[128];
    int n = 0;
    for (int i = 0; i < ct_algo_count() && n < 128; i++) {
        const ct_algo_t *a = ct_algo_get(i);
        if (a->coll == coll && !(a->constraints & CT_HIDDEN)) cands[n++] = a->name;
    }
    ct_did_you_mean(word, cands, n, buf, len);
}

int ct_choice_default(int algo, ct_choice_t *out) {
    const ct_algo_t *a = ct_algo_get(algo);
    if (!a)
        return ct_set_error(MPI_ERR_ARG, "algorithm index %d out of range [0, %d)", algo,
                            ct_algo_count());
    memset(out, 0, sizeof *out);
    out->algo = algo;
    for (int j = 0; j < a->nparams; j++) {
        const ct_param_spec_t *ps = &a->params[j];
        if (is_inner(ps->id)) {
            int inner = ct_algo_find(inner_coll(ps->id), ps->def_algo);
            if (inner < 0)
                return ct_set_error(MPI_ERR_INTERN, "registry: %s/%s default %s=%s unknown",
                                    ct_coll_name(a->coll), a->name, ct_param_name(ps->id),
                                    ps->def_algo);
            out->params.v[ps->id] = inner;
        } else {
            out->params.v[ps->id] = ps->def;
        }
    }
    return MPI_SUCCESS;
}

const ct_param_spec_t *ct_param_spec(const ct_algo_t *a, ct_param_id_t id) {
    for (int j = 0; j < a->nparams; j++)
        if (a->params[j].id == id) return &a->params[j];
    return NULL;
}

static int range_error(const ct_algo_t *a, const ct_param_spec_t *ps, long v) {
    return ct_set_error(MPI_ERR_ARG, "%s/%s: %s=%ld is out of range: valid %ld..%ld%s (%s)",
                        ct_coll_name(a->coll), a->name, ct_param_name(ps->id), v, ps->min,
                        ps->max, ps->def == CT_SEGSIZE_AUTO ? " or auto" : "",
                        ct_param_help(ps->id));
}

static int check_value(const ct_algo_t *a, const ct_param_spec_t *ps, long v) {
    if (is_inner(ps->id)) {
        const ct_algo_t *in = ct_algo_get(inner_algo(v));
        if (in && in->coll == inner_coll(ps->id) && strncmp(in->name, "hier", 4) == 0)
            return ct_set_error(MPI_ERR_ARG, "%s/%s: %s=%s: an inner algorithm cannot itself "
                                "be hierarchical", ct_coll_name(a->coll), a->name,
                                ct_param_name(ps->id), in->name);
        if (!in || in->coll != inner_coll(ps->id) || (in->constraints & CT_HIDDEN)) {
            char names[512];
            list_names(inner_coll(ps->id), 0, names, sizeof names);
            return ct_set_error(MPI_ERR_ARG, "%s/%s: %s must be a %s algorithm; valid: %s",
                                ct_coll_name(a->coll), a->name, ct_param_name(ps->id),
                                ct_coll_name(inner_coll(ps->id)), names);
        }
        return MPI_SUCCESS;
    }
    /* auto: where it is the default (the algorithms with a rule) */
    if (ps->id == CT_P_SEGSIZE && v == CT_SEGSIZE_AUTO && ps->def == CT_SEGSIZE_AUTO)
        return MPI_SUCCESS;
    if (v < ps->min || v > ps->max) return range_error(a, ps, v);
    return MPI_SUCCESS;
}

int ct_choice_check(const ct_choice_t *c) {
    const ct_algo_t *a = c ? ct_algo_get(c->algo) : NULL;
    if (!a)
        return ct_set_error(MPI_ERR_ARG, "invalid algorithm choice (index %d)",
                            c ? c->algo : -1);
    long rm = c->params.v[CT_P_REMAP];
    if (rm < CT_REMAP_NONE || rm > CT_REMAP_AUTO)
        return ct_set_error(MPI_ERR_ARG, "%s/%s: remap=%ld is invalid; valid: none, seq, rr, auto",
                            ct_coll_name(a->coll), a->name, rm);
    if (rm != CT_REMAP_NONE && !remap_allowed(a->coll))
        return ct_set_error(MPI_ERR_ARG, "%s/%s: remap applies to bcast, reduce, allgather and "
                            "allreduce algorithms only", ct_coll_name(a->coll), a->name);
    for (int j = 0; j < a->nparams; j++)
        CT_CHECK(check_value(a, &a->params[j], c->params.v[a->params[j].id]));
    return MPI_SUCCESS;
}

static int parse_choice(ct_coll_t coll, const char *spec, ct_choice_t *out, int nested);

/* The value of inner-algorithm parameter ps of algorithm a: "ALG" (its registry index)
 * or "ALG:key=value+key=value" (ct_inner_value); nested: a's own value is one. */
static int parse_inner(const ct_algo_t *a, const ct_param_spec_t *ps, const char *val,
                       int nested, long *out) {
    char spec[512], names[512], hint[96];
    snprintf(spec, sizeof spec, "%s", val);
    char *colon = strchr(spec, ':');
    if (colon) *colon = '\0';
    long v = ct_algo_find(inner_coll(ps->id), spec);
    if (v < 0 || (ct_algo_get((int)v)->constraints & CT_HIDDEN)) {
        list_names(inner_coll(ps->id), 0, names, sizeof names);
        suggest_algo(inner_coll(ps->id), spec, hint, sizeof hint);
        return ct_set_error(MPI_ERR_ARG, "%s/%s: unknown %s algorithm '%s'%s; valid: %s",
                            ct_coll_name(a->coll), a->name, ct_coll_name(inner_coll(ps->id)),
                            spec, hint, names);
    }
    CT_CHECK(check_value(a, ps, v)); /* never hierarchical */
    *out = v;
    if (!colon) return MPI_SUCCESS;
    if (nested)
        return ct_set_error(MPI_ERR_ARG, "%s/%s: %s=%s: an inner algorithm's own inner "
                            "algorithms take no parameters (name it alone: %s=%s)",
                            ct_coll_name(a->coll), a->name, ct_param_name(ps->id), val,
                            ct_param_name(ps->id), spec);
    /* ALG:key=value+key=value -> the spec ALG:key=value,key=value */
    *colon = ':';
    for (char *q = colon + 1; *q; q++)
        if (*q == '+') *q = ',';
    ct_choice_t c;
    int rc = parse_choice(inner_coll(ps->id), spec, &c, 1);
    if (rc == MPI_SUCCESS) rc = ct_inner_value(&c, out);
    if (rc != MPI_SUCCESS) {
        char why[512];
        snprintf(why, sizeof why, "%s", ct_last_error());
        return ct_set_error(rc, "%s/%s: %s=%s: %s", ct_coll_name(a->coll), a->name,
                            ct_param_name(ps->id), val, why);
    }
    return MPI_SUCCESS;
}

int ct_choice_parse(ct_coll_t coll, const char *spec, ct_choice_t *out) {
    return parse_choice(coll, spec, out, 0);
}

static int parse_choice(ct_coll_t coll, const char *spec, ct_choice_t *out, int nested) {
    char buf[512], names[512];
    if (coll < 0 || coll >= CT_NCOLL)
        return ct_set_error(MPI_ERR_ARG, "invalid collective %d", (int)coll);
    if (!spec || !*spec) {
        list_names(coll, 0, names, sizeof names);
        return ct_set_error(MPI_ERR_ARG, "empty %s algorithm name; valid: %s",
                            ct_coll_name(coll), names);
    }
    if (strlen(spec) >= sizeof buf)
        return ct_set_error(MPI_ERR_ARG, "algorithm spec too long (%zu characters)",
                            strlen(spec));
    strcpy(buf, spec);
    char *colon = strchr(buf, ':');
    if (colon) *colon = '\0';
    int algo = ct_algo_find(coll, buf);
    char hint[96];
    if (algo < 0) {
        list_names(coll, 0, names, sizeof names);
        suggest_algo(coll, buf, hint, sizeof hint);
        return ct_set_error(MPI_ERR_ARG, "unknown %s algorithm '%s'%s; valid: %s",
                            ct_coll_name(coll), buf, hint, names);
    }
    CT_CHECK(ct_choice_default(algo, out));
    const ct_algo_t *a = ct_algo_get(algo);
    if (!colon) return MPI_SUCCESS;
    char *save = NULL;
    for (char *kv = strtok_r(colon + 1, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return ct_set_error(MPI_ERR_ARG, "%s/%s: parameter '%s' has no value (use key=value)",
                                ct_coll_name(coll), a->name, kv);
        *eq = '\0';
        const char *key = kv, *val = eq + 1;
        if (nested && strcmp(key, "remap") == 0)
            return ct_set_error(MPI_ERR_ARG, "%s/%s: remap does not apply to an inner "
                                "algorithm (the dispatcher remaps the outer call only)",
                                ct_coll_name(coll), a->name);
        if (strcmp(key, "remap") == 0 && remap_allowed(coll)) {
            long rm = -1;
            for (int k = 0; k <= CT_REMAP_AUTO; k++)
                if (strcmp(val, remap_names[k]) == 0) rm = k;
            if (rm < 0)
                return ct_set_error(MPI_ERR_ARG, "%s/%s: remap='%s' is invalid; valid: none, "
                                    "seq, rr, auto", ct_coll_name(coll), a->name, val);
            out->params.v[CT_P_REMAP] = rm;
            continue;
        }
        int id = -1;
        for (int p = 0; p < CT_NPARAMS; p++)
            if (strcmp(key, ct_param_name((ct_param_id_t)p)) == 0) id = p;
        const ct_param_spec_t *ps = id >= 0 ? ct_param_spec(a, (ct_param_id_t)id) : NULL;
        if (!ps) {
            char valid[256] = "";
            const char *known[CT_NPARAMS + 1];
            int nknown = 0;
            size_t used = 0;
            for (int j = 0; j < a->nparams; j++) {
                int w = snprintf(valid + used, sizeof valid - used, "%s%s", j ? ", " : "",
                                 ct_param_name(a->params[j].id));
                if (w > 0 && (size_t)w < sizeof valid - used) used += (size_t)w;
                if (nknown < CT_NPARAMS) known[nknown++] = ct_param_name(a->params[j].id);
            }
            if (remap_allowed(coll)) {
                snprintf(valid + used, sizeof valid - used, "%sremap", used ? ", " : "");
                known[nknown++] = "remap";
            }
            ct_did_you_mean(key, known, nknown, hint, sizeof hint);
            return ct_set_error(MPI_ERR_ARG, "%s/%s has no parameter '%s'%s; valid: %s",
                                ct_coll_name(coll), a->name, key, hint,
                                valid[0] ? valid : "(none)");
        }
        long v;
        if (is_inner(ps->id)) {
            CT_CHECK(parse_inner(a, ps, val, nested, &v));
        } else if (ps->id == CT_P_SEGSIZE && strcmp(val, "auto") == 0) {
            if (ps->def != CT_SEGSIZE_AUTO)
                return ct_set_error(MPI_ERR_ARG, "%s/%s: segsize=auto: this algorithm has no "
                                    "segment-size rule (its default is %ld); valid %ld..%ld",
                                    ct_coll_name(coll), a->name, ps->def, ps->min, ps->max);
            v = CT_SEGSIZE_AUTO;
        } else {
            char *end = NULL;
            errno = 0;
            v = strtol(val, &end, 10);
            /* accept k/K and m/M suffixes for sizes */
            if (end && (*end == 'k' || *end == 'K')) { v *= 1024; end++; }
            else if (end && (*end == 'm' || *end == 'M')) { v *= 1024 * 1024; end++; }
            if (errno || !end || end == val || *end)
                return ct_set_error(MPI_ERR_ARG, "%s/%s: %s='%s' is not an integer",
                                    ct_coll_name(coll), a->name, key, val);
            /* a number in range (auto is written as the word) */
            if (v < ps->min || v > ps->max) return range_error(a, ps, v);
        }
        CT_CHECK(check_value(a, ps, v));
        out->params.v[ps->id] = v;
    }
    return MPI_SUCCESS;
}

void ct_choice_format(const ct_choice_t *c, char *buf, size_t len) {
    const ct_algo_t *a = ct_algo_get(c->algo);
    if (!len) return;
    if (!a) {
        snprintf(buf, len, "?");
        return;
    }
    size_t used = 0;
    int w = snprintf(buf, len, "%s", a->name);
    if (w < 0 || (size_t)w >= len) return;
    used = (size_t)w;
    for (int j = 0; j < a->nparams; j++) {
        ct_param_id_t id = a->params[j].id;
        if (is_inner(id)) {
            const ct_choice_t *e = inner_entry(c->params.v[id]);
            const ct_algo_t *in = ct_algo_get(inner_algo(c->params.v[id]));
            char sub[256] = "?";
            if (e) { /* ALG:key=value+key=value (one level: its own inner ones are names) */
                ct_choice_format(e, sub, sizeof sub);
                for (char *q = strchr(sub, ':'); q && *q; q++)
                    if (*q == ',') *q = '+';
            } else if (in) {
                snprintf(sub, sizeof sub, "%s", in->name);
            }
            w = snprintf(buf + used, len - used, "%s%s=%s", j ? "," : ":", ct_param_name(id),
                         sub);
        } else if (id == CT_P_SEGSIZE && c->params.v[id] == CT_SEGSIZE_AUTO) {
            w = snprintf(buf + used, len - used, "%s%s=auto", j ? "," : ":", ct_param_name(id));
        } else {
            w = snprintf(buf + used, len - used, "%s%s=%ld", j ? "," : ":", ct_param_name(id),
                         c->params.v[id]);
        }
        if (w < 0 || (size_t)w >= len - used) return;
        used += (size_t)w;
    }
    if (c->params.v[CT_P_REMAP] != CT_REMAP_NONE)
        snprintf(buf + used, len - used, "%sremap=%s", a->nparams ? "," : ":",
                 ct_remap_name(c->params.v[CT_P_REMAP]));
}
