/* driver_common.c -- helpers shared by the colltune MPI programs. */
#include "driver_common.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    unsigned flag;
    const char *name;
} constraint_names[] = {
    { CT_NEED_COMMUTATIVE, "commutative" }, { CT_NEED_POW2, "power_of_two" },
    { CT_NEED_EVEN, "even_processes" },     { CT_NEED_TWO_PROCS, "two_processes" },
    { CT_NEED_COUNT_GE_P, "count_ge_processes" },
};

void ct_print_registry_json(FILE *f, int include_hidden) {
    int first = 1;
    fprintf(f, "{\"version\": \"%s\", \"algorithms\": [\n", COLLTUNE_VERSION);
    for (int i = 0; i < ct_algo_count(); i++) {
        const ct_algo_t *a = ct_algo_get(i);
        if ((a->constraints & CT_HIDDEN) && !include_hidden) continue;
        fprintf(f, "%s  {\"name\": ", first ? "" : ",\n");
        first = 0;
        ct_json_str(f, a->name);
        fprintf(f, ", \"collective\": ");
        ct_json_str(f, ct_coll_name(a->coll));
        fprintf(f, ", \"params\": [");
        for (int j = 0; j < a->nparams; j++) {
            const ct_param_spec_t *ps = &a->params[j];
            fprintf(f, "%s{\"name\": ", j ? ", " : "");
            ct_json_str(f, ct_param_name(ps->id));
            if (ps->def_algo) {
                fprintf(f, ", \"kind\": \"algorithm\", \"default\": ");
                ct_json_str(f, ps->def_algo);
                fprintf(f, ", \"of\": "); /* the inner algorithm's collective */
                ct_json_str(f, ct_coll_name(ct_hier_inner_coll(a->coll, ps->id)));
            } else if (ps->id == CT_P_SEGSIZE && ps->def == CT_SEGSIZE_AUTO) {
                /* segsize=auto: chosen per call by the rule named in auto_rule */
                fprintf(f, ", \"kind\": \"int\", \"default\": \"auto\", \"auto_rule\": ");
                ct_json_str(f, ct_segsize_rule_name(i));
                fprintf(f, ", \"min\": %ld, \"max\": %ld", ps->min, ps->max);
            } else {
                fprintf(f, ", \"kind\": \"int\", \"default\": %ld, \"min\": %ld, \"max\": %ld",
                        ps->def, ps->min, ps->max);
            }
            fprintf(f, ", \"help\": ");
            ct_json_str(f, ct_param_help(ps->id));
            fputc('}', f);
        }
        if (ct_coll_remaps(a->coll)) { /* the dispatcher's own parameter, on every algorithm */
            fprintf(f, "%s{\"name\": \"remap\", \"kind\": \"choice\", \"default\": \"none\", "
                    "\"values\": [\"none\", \"seq\", \"rr\", \"auto\"], \"auto\": \"%s\", "
                    "\"help\": ", a->nparams ? ", " : "", ct_remap_name(ct_remap_auto(i)));
            ct_json_str(f, ct_param_help(CT_P_REMAP));
            fputc('}', f);
        }
        fprintf(f, "], \"constraints\": [");
        int k = 0;
        for (size_t c = 0; c < sizeof constraint_names / sizeof constraint_names[0]; c++)
            if (a->constraints & constraint_names[c].flag) {
                fprintf(f, "%s", k++ ? ", " : "");
                ct_json_str(f, constraint_names[c].name);
            }
        fprintf(f, "], \"fallback\": ");
        if (a->fallback) ct_json_str(f, a->fallback);
        else fputs("null", f);
        fprintf(f, ", \"cost\": ");
        if (a->cost) ct_json_str(f, a->cost);
        else fputs("null", f);
        fprintf(f, ", \"summary\": ");
        ct_json_str(f, a->summary);
        fprintf(f, ", \"ompi_name\": ");
        if (a->ompi_name) ct_json_str(f, a->ompi_name);
        else fputs("null", f);
        fprintf(f, ", \"hidden\": %s}", (a->constraints & CT_HIDDEN) ? "true" : "false");
    }
    fprintf(f, "\n]}\n");
}

int ct_split(const char *list, char ***out) {
    int n = 0, cap = 8;
    char **items = malloc((size_t)cap * sizeof *items);
    char *copy = strdup(list ? list : "");
    char *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!*t) continue;
        if (n == cap) items = realloc(items, (size_t)(cap *= 2) * sizeof *items);
        items[n++] = strdup(t);
    }
    free(copy);
    *out = items;
    return n;
}

int ct_split_specs(const char *list, char ***out) {
    char **tok;
    int nt = ct_split(list, &tok), n = 0;
    char **items = malloc((size_t)(nt ? nt : 1) * sizeof *items);
    for (int i = 0; i < nt; i++) {
        /* key=value continues the spec before it, also when its value is an inner
         * algorithm with parameters (inter=knomial:radix=3): a '=' before any ':' */
        const char *eq = strchr(tok[i], '='), *colon = strchr(tok[i], ':');
        int is_param = eq && (!colon || eq < colon);
        if (is_param && n > 0) {
            size_t len = strlen(items[n - 1]) + strlen(tok[i]) + 2;
            char *joined = malloc(len);
            snprintf(joined, len, "%s,%s", items[n - 1], tok[i]);
            free(items[n - 1]);
            items[n - 1] = joined;
            free(tok[i]);
        } else {
            items[n++] = tok[i];
        }
    }
    free(tok);
    *out = items;
    return n;
}

void ct_free_list(char **items, int n) {
    for (int i = 0; i < n; i++) free(items[i]);
    free(items);
}

int ct_dtype_from_name(const char *name, MPI_Datatype *dt) {
    if (!strcmp(name, "char")) *dt = MPI_SIGNED_CHAR;
    else if (!strcmp(name, "int")) *dt = MPI_INT;
    else if (!strcmp(name, "float")) *dt = MPI_FLOAT;
    else if (!strcmp(name, "double")) *dt = MPI_DOUBLE;
    else return -1;
    return 0;
}

int ct_op_from_name(const char *name, MPI_Op *op) {
    if (!strcmp(name, "sum")) *op = MPI_SUM;
    else if (!strcmp(name, "max")) *op = MPI_MAX;
    else if (!strcmp(name, "min")) *op = MPI_MIN;
    else if (!strcmp(name, "prod")) *op = MPI_PROD;
    else return -1;
    return 0;
}


void ct_print_placement(MPI_Comm comm) {
    MPI_Comm node;
    int on_node = 1, lead = 0, ppn = 1, nodes = 1, nrank = 0, rank = 0, np = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &np);
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_size(node, &on_node);
        MPI_Comm_rank(node, &nrank);
        lead = nrank == 0;
        MPI_Comm_free(&node);
    }
    MPI_Allreduce(&on_node, &ppn, 1, MPI_INT, MPI_MAX, comm);
    MPI_Allreduce(&lead, &nodes, 1, MPI_INT, MPI_SUM, comm);
    if (rank == 0) {
        printf("{\"kind\": \"placement\", \"np\": %d, \"nodes\": %d, \"ppn\": %d}\n", np,
               nodes, ppn);
        fflush(stdout);
    }
}
