/*
 * pmpi_fortran.c -- the Fortran entry points of libcolltune-pmpi.so
 * (docs/interposition.md, "Fortran").
 *
 * Open MPI's Fortran bindings (mpif.h, `use mpi`, `use mpi_f08`) call PMPI_<Name>
 * directly, so a Fortran program's collectives never reach colltune's C MPI_<Name>;
 * a tool wraps the Fortran names itself. This file defines, for each line of
 * pmpi_fortran_table.h, a wrapper that converts the Fortran arguments as the library's
 * own binding does (handles through MPI_<Kind>_f2c, the library's Fortran MPI_IN_PLACE
 * and MPI_BOTTOM to the C ones, ierror set from the return code, absent when an mpi_f08
 * caller omits it) and calls the C MPI_<Name>: colltune's intercept, so the decision,
 * the verbose line and the profile are the C callers'. MPI_Init, MPI_Init_thread and
 * MPI_Finalize are wrapped too: the library's own Fortran entry point runs, then
 * colltune sets itself up (or, at MPI_Finalize, first writes its profile).
 *
 * Which names: fortran.cmake lists, at build time, the names of each function that
 * the MPI library's Fortran libraries export (mpi_bcast_, mpi_bcast__, mpi_bcast,
 * MPI_BCAST, the mpi_f08 mpi_bcast_f08_, Open MPI's ompi_bcast_f, MPI_Bcast_f,
 * MPI_Bcast_f08) and writes one CT_FNAME line per name into pmpi_fortran_names.h; only
 * for functions whose bindings call PMPI_<Name> somewhere (the library's Fortran
 * libraries reference it): a binding that calls the C MPI_<Name> (MPICH's, but for a
 * few mpi_f08 ones) already comes through colltune's intercept, once, and stays the
 * library's. The profiling names (pmpi_bcast_, ...) are never defined: a tool above
 * colltune still reaches the library's own.
 *
 * A program built against another MPI library than this build's (colltune disabled
 * itself at MPI_Init, pmpi_library.c): every wrapper calls the library's own Fortran
 * entry point of the same name, untouched.
 */
#include "pmpi_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

_Static_assert(sizeof(MPI_Fint) == sizeof(int),
               "INTEGER arrays are passed on as int arrays (fortran.cmake checks this)");

/* ---- the library's Fortran sentinels ---------------------------------------
 * MPI_IN_PLACE and MPI_BOTTOM of a Fortran caller are the addresses of variables the
 * library defines (a common block of mpif.h, a bind(C) variable of the modules).
 * Found once by name in the process (dlsym(RTLD_DEFAULT): the definition every
 * object is bound to, the program's own copy of a common block included):
 *   Open MPI  the common blocks mpi_fortran_in_place / mpi_fortran_bottom, in every
 *             name mangling (ompi/mpi/fortran/base/constants.h), used by all three
 *             interfaces;
 *   MPICH     MPIR_F08_MPI_IN_PLACE / MPIR_F08_MPI_BOTTOM (mpi_f08), and the pointer
 *             variables MPIR_F_MPI_IN_PLACE / MPIR_F_MPI_BOTTOM that hold mpif.h's
 *             common-block addresses once its Fortran MPI_Init has run (read at each
 *             call). */
enum { S_IN_PLACE, S_BOTTOM };
static const struct {
    const char *name;
    int what, deref;
} sentinel_names[] = {
    {"mpi_fortran_in_place_", S_IN_PLACE, 0}, {"mpi_fortran_in_place", S_IN_PLACE, 0},
    {"mpi_fortran_in_place__", S_IN_PLACE, 0}, {"MPI_FORTRAN_IN_PLACE", S_IN_PLACE, 0},
    {"mpi_fortran_bottom_", S_BOTTOM, 0}, {"mpi_fortran_bottom", S_BOTTOM, 0},
    {"mpi_fortran_bottom__", S_BOTTOM, 0}, {"MPI_FORTRAN_BOTTOM", S_BOTTOM, 0},
    {"MPIR_F08_MPI_IN_PLACE", S_IN_PLACE, 0}, {"MPIR_F08_MPI_BOTTOM", S_BOTTOM, 0},
    {"MPIR_F_MPI_IN_PLACE", S_IN_PLACE, 1}, {"MPIR_F_MPI_BOTTOM", S_BOTTOM, 1},
};
#define NSENTINEL (sizeof sentinel_names / sizeof sentinel_names[0])
static struct {
    void *addr; /* the variable itself, or (deref) the pointer variable */
    int what, deref;
} sentinels[NSENTINEL];
static int nsentinels;
static pthread_once_t sentinels_once = PTHREAD_ONCE_INIT;

static void find_sentinels(void) {
    for (size_t i = 0; i < NSENTINEL; i++) {
        void *a = dlsym(RTLD_DEFAULT, sentinel_names[i].name);
        if (!a) continue;
        sentinels[nsentinels].addr = a;
        sentinels[nsentinels].what = sentinel_names[i].what;
        sentinels[nsentinels].deref = sentinel_names[i].deref;
        nsentinels++;
    }
}

static int is_sentinel(const void *p, int what) {
    if (!p) return 0;
    pthread_once(&sentinels_once, find_sentinels);
    for (int i = 0; i < nsentinels; i++) {
        if (sentinels[i].what != what) continue;
        const void *s = sentinels[i].deref ? *(void *const *)sentinels[i].addr
                                           : sentinels[i].addr;
        if (s && p == s) return 1;
    }
    return 0;
}

static inline void *f_buf(void *p) { return is_sentinel(p, S_BOTTOM) ? MPI_BOTTOM : p; }
static inline void *f_ibuf(void *p) {
    return is_sentinel(p, S_IN_PLACE) ? MPI_IN_PLACE : f_buf(p);
}

/* The next definition of `name` after this library (the MPI library's own binding),
 * looked up once per wrapper. */
static void *f_next(_Atomic(void *) *cache, const char *name) {
    void *f = atomic_load_explicit(cache, memory_order_acquire);
    if (!f) {
        f = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(cache, f, memory_order_release);
    }
    return f;
}

/* f = the next definition of name, as a function pointer */
#define CT_NEXT(f, cache, name)                 \
    do {                                        \
        void *p_ = f_next(&cache, name);        \
        memcpy(&f, &p_, sizeof f);              \
    } while (0)

/* ---- the argument kinds (pmpi_fortran_table.h) -------------------------------
 * For kind K and argument i: CT_P_K(i) its parameter, CT_L_K(i) a local the call
 * needs, CT_A_K(i) what the C function gets, CT_O_K(i) what is done after the call. */
#define CT_P_BUF(i) void *a##i,
#define CT_P_IBUF(i) void *a##i,
#define CT_P_INT(i) MPI_Fint *a##i,
#define CT_P_INTS(i) MPI_Fint *a##i,
#define CT_P_TYPE(i) MPI_Fint *a##i,
#define CT_P_OP(i) MPI_Fint *a##i,
#define CT_P_COMM(i) MPI_Fint *a##i,
#define CT_P_INFO(i) MPI_Fint *a##i,
#define CT_P_REQ(i) MPI_Fint *a##i,
#define CT_A_BUF(i) , f_buf(a##i)
#define CT_A_IBUF(i) , f_ibuf(a##i)
#define CT_A_INT(i) , (int)*a##i
#define CT_A_INTS(i) , (int *)a##i
#define CT_A_TYPE(i) , PMPI_Type_f2c(*a##i)
#define CT_A_OP(i) , PMPI_Op_f2c(*a##i)
#define CT_A_COMM(i) , PMPI_Comm_f2c(*a##i)
#define CT_A_INFO(i) , PMPI_Info_f2c(*a##i)
#define CT_A_REQ(i) , &r##i
#define CT_L_REQ(i) MPI_Request r##i = MPI_REQUEST_NULL;
#define CT_O_REQ(i) if (rc == MPI_SUCCESS) *a##i = PMPI_Request_c2f(r##i);
#define CT_L_BUF(i)
#define CT_L_IBUF(i)
#define CT_L_INT(i)
#define CT_L_INTS(i)
#define CT_L_TYPE(i)
#define CT_L_OP(i)
#define CT_L_COMM(i)
#define CT_L_INFO(i)
#define CT_O_BUF(i)
#define CT_O_IBUF(i)
#define CT_O_INT(i)
#define CT_O_INTS(i)
#define CT_O_TYPE(i)
#define CT_O_OP(i)
#define CT_O_COMM(i)
#define CT_O_INFO(i)
#define CT_N_ONE(k, i) a##i,

/* CT_MAP(m, k1, k2, ...) -> m(k1, 1) m(k2, 2) ... (up to 12 arguments) */
#define CT_CAT(a, b) CT_CAT_(a, b)
#define CT_CAT_(a, b) a##b
#define CT_COUNT(...) CT_COUNT_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define CT_COUNT_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, n, ...) n
#define CT_MAP(m, ...) CT_CAT(CT_MAP, CT_COUNT(__VA_ARGS__))(m, __VA_ARGS__)
#define CT_MAP1(m, a) m(a, 1)
#define CT_MAP2(m, a, b) CT_MAP1(m, a) m(b, 2)
#define CT_MAP3(m, a, b, c) CT_MAP2(m, a, b) m(c, 3)
#define CT_MAP4(m, a, b, c, d) CT_MAP3(m, a, b, c) m(d, 4)
#define CT_MAP5(m, a, b, c, d, e) CT_MAP4(m, a, b, c, d) m(e, 5)
#define CT_MAP6(m, a, b, c, d, e, f) CT_MAP5(m, a, b, c, d, e) m(f, 6)
#define CT_MAP7(m, a, b, c, d, e, f, g) CT_MAP6(m, a, b, c, d, e, f) m(g, 7)
#define CT_MAP8(m, a, b, c, d, e, f, g, h) CT_MAP7(m, a, b, c, d, e, f, g) m(h, 8)
#define CT_MAP9(m, a, b, c, d, e, f, g, h, i) CT_MAP8(m, a, b, c, d, e, f, g, h) m(i, 9)
#define CT_MAP10(m, a, b, c, d, e, f, g, h, i, j) \
    CT_MAP9(m, a, b, c, d, e, f, g, h, i) m(j, 10)
#define CT_MAP11(m, a, b, c, d, e, f, g, h, i, j, k) \
    CT_MAP10(m, a, b, c, d, e, f, g, h, i, j) m(k, 11)
#define CT_MAP12(m, a, b, c, d, e, f, g, h, i, j, k, l) \
    CT_MAP11(m, a, b, c, d, e, f, g, h, i, j, k) m(l, 12)

#define CT_P1(k, i) CT_P_##k(i)
#define CT_L1(k, i) CT_L_##k(i)
#define CT_A1(k, i) CT_A_##k(i)
#define CT_O1(k, i) CT_O_##k(i)
#define CT_REST(...) CT_REST_(__VA_ARGS__)
#define CT_REST_(first, ...) __VA_ARGS__
/* the parameter list without ierror, each followed by a comma; the C call's arguments */
#define CT_PARAMS(...) CT_MAP(CT_P1, __VA_ARGS__)
#define CT_NAMES(...) CT_MAP(CT_N_ONE, __VA_ARGS__)
#define CT_ARGS(...) CT_REST(CT_MAP(CT_A1, __VA_ARGS__))
#define CT_LOCALS(...) CT_MAP(CT_L1, __VA_ARGS__)
#define CT_AFTER(...) CT_MAP(CT_O1, __VA_ARGS__)

/* one converting body per function of the table */
#define CT_F(Name, kinds)                                              \
    static inline void ct_f_##Name(CT_PARAMS kinds MPI_Fint *ierr) { \
        CT_LOCALS kinds                                                \
        int rc = MPI_##Name(CT_ARGS kinds);                            \
        CT_AFTER kinds                                                 \
        if (ierr) *ierr = (MPI_Fint)rc;                                \
    }
#include "pmpi_fortran_table.h"
#undef CT_F

/* one exported function per name the library exports (pmpi_fortran_names.h) */
#define CT_FNAME(sym, Name, kinds)                                                   \
    void sym(CT_PARAMS kinds MPI_Fint *ierr);                                        \
    void sym(CT_PARAMS kinds MPI_Fint *ierr) {                                       \
        if (ct_pmpi_st.disabled) {                                                   \
            static _Atomic(void *) next;                                             \
            void (*f)(CT_PARAMS kinds MPI_Fint *);                                   \
            CT_NEXT(f, next, #sym);                                      \
            if (f) {                                                                 \
                f(CT_NAMES kinds ierr);                                              \
                return;                                                              \
            }                                                                        \
        }                                                                            \
        ct_f_##Name(CT_NAMES kinds ierr);                                            \
    }

/* MPI_Init, MPI_Init_thread, MPI_Finalize: the library's own Fortran entry point of the
 * same name (it may set up its Fortran side, e.g. MPICH's sentinels), with colltune's
 * set-up after it; the C entry point when there is no next definition. The check of the
 * library against this build's comes first (pmpi_library.c). Set-up runs once however
 * many of these nest (Open MPI's mpi_init_f08_ calls ompi_init_f, MPICH's mpi_init_
 * calls the C MPI_Init). */
#define CT_FSETUP(sym, What) CT_FSETUP_##What(sym)
#define CT_FSETUP_Init(sym)                                        \
    void sym(MPI_Fint *ierr);                                      \
    void sym(MPI_Fint *ierr) {                                     \
        static _Atomic(void *) next;                               \
        void (*f)(MPI_Fint *);                                     \
        CT_NEXT(f, next, #sym);                        \
        MPI_Fint rc = MPI_SUCCESS;                                 \
        ct_pmpi_library_check();                                   \
        if (f) f(&rc);                                             \
        else rc = (MPI_Fint)PMPI_Init(NULL, NULL);                 \
        if (rc == MPI_SUCCESS) ct_pmpi_configure();                \
        if (ierr) *ierr = rc;                                      \
    }
#define CT_FSETUP_Init_thread(sym)                                                      \
    void sym(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);                   \
    void sym(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {                  \
        static _Atomic(void *) next;                                                    \
        void (*f)(MPI_Fint *, MPI_Fint *, MPI_Fint *);                                  \
        CT_NEXT(f, next, #sym);                                             \
        MPI_Fint rc = MPI_SUCCESS;                                                      \
        ct_pmpi_library_check();                                                        \
        if (f) {                                                                        \
            f(required, provided, &rc);                                                 \
        } else {                                                                        \
            int p = 0;                                                                  \
            rc = (MPI_Fint)PMPI_Init_thread(NULL, NULL, (int)*required, &p);            \
            *provided = (MPI_Fint)p;                                                    \
        }                                                                               \
        if (rc == MPI_SUCCESS) ct_pmpi_configure();                                     \
        if (ierr) *ierr = rc;                                                           \
    }
#define CT_FSETUP_Finalize(sym)                                    \
    void sym(MPI_Fint *ierr);                                      \
    void sym(MPI_Fint *ierr) {                                     \
        static _Atomic(void *) next;                               \
        void (*f)(MPI_Fint *);                                     \
        CT_NEXT(f, next, #sym);                        \
        MPI_Fint rc = MPI_SUCCESS;                                 \
        ct_pmpi_finalize_begin();                                  \
        if (f) f(&rc);                                             \
        else rc = (MPI_Fint)PMPI_Finalize();                       \
        if (ierr) *ierr = rc;                                      \
    }

#include "pmpi_fortran_names.h"
