/*
 * socket_traffic.c -- libcolltune-traffic.so: the socket traffic of a collective call.
 *
 * MPICH's algorithm functions are internal to libmpi (no PLT to interpose) and its
 * internal point-to-point traffic bypasses PMPI, so `colltune rules verify` tells
 * MPICH's algorithms apart by the pattern of bytes they put on the wire: with every
 * rank made to look like its own node (MPIR_CVAR_NOLOCAL=1) and the network library
 * limited to TCP (UCX_TLS=tcp,self / FI_PROVIDER=tcp), every message of the collective
 * goes through send/sendto/sendmsg/write/writev on a socket, which this library,
 * preloaded, counts (and forwards unchanged with dlsym RTLD_NEXT).
 *
 * Only what is sent between colltune_observe_mark("LABEL") and
 * colltune_observe_mark(NULL) counts (colltune-which marks each size). At exit each
 * process appends to $COLLTUNE_OBSERVE_DIR/traffic.<pid>.txt one line per label:
 *
 *   LABEL<TAB>rank=R bytes=B peers=P sends=S
 *
 * bytes: all bytes written to sockets; peers: sockets written to; sends: calls.
 * The rank comes from the launcher's environment (PMI_RANK, OMPI_COMM_WORLD_RANK).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_LABELS 128
#define MAX_FD 4096

typedef struct {
    char label[96];
    long long bytes, sends;
    int peers;
} traffic_t;

static traffic_t labels[MAX_LABELS];
static int nlabels;
static traffic_t *cur;
static long long fd_bytes[MAX_FD];
static signed char fd_sock[MAX_FD]; /* 0 unknown, 1 socket, -1 not */

void colltune_observe_mark(const char *label);

void colltune_observe_mark(const char *label) {
    if (label) {
        if (nlabels == MAX_LABELS) return;
        cur = &labels[nlabels++];
        snprintf(cur->label, sizeof cur->label, "%s", label);
        memset(fd_bytes, 0, sizeof fd_bytes);
        memset(fd_sock, 0, sizeof fd_sock); /* descriptors may have been reused */
    } else if (cur) {
        for (int i = 0; i < MAX_FD; i++)
            if (fd_bytes[i]) cur->peers++;
        cur = NULL;
    }
}

static void count(int fd, long long n) {
    if (!cur || n <= 0 || fd < 0 || fd >= MAX_FD) return;
    if (!fd_sock[fd]) {
        struct stat st;
        fd_sock[fd] = (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) ? 1 : -1;
    }
    if (fd_sock[fd] < 0) return;
    cur->bytes += n;
    cur->sends++;
    fd_bytes[fd] += n;
}

static void *next(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "libcolltune-traffic: %s not found\n", name);
        abort();
    }
    return p;
}

typedef ssize_t (*send_fn)(int, const void *, size_t, int);
typedef ssize_t (*sendto_fn)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
typedef ssize_t (*sendmsg_fn)(int, const struct msghdr *, int);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);

#define REAL(type, name)                                                                     \
    static type real;                                                                        \
    if (!real) {                                                                             \
        void *p = next(#name);                                                               \
        memcpy(&real, &p, sizeof real);                                                      \
    }

ssize_t send(int fd, const void *buf, size_t len, int flags) {
    REAL(send_fn, send)
    ssize_t n = real(fd, buf, len, flags);
    count(fd, n);
    return n;
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
               socklen_t tolen) {
    REAL(sendto_fn, sendto)
    ssize_t n = real(fd, buf, len, flags, to, tolen);
    count(fd, n);
    return n;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
    REAL(sendmsg_fn, sendmsg)
    ssize_t n = real(fd, msg, flags);
    count(fd, n);
    return n;
}

ssize_t write(int fd, const void *buf, size_t len) {
    REAL(write_fn, write)
    ssize_t n = real(fd, buf, len);
    count(fd, n);
    return n;
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    REAL(writev_fn, writev)
    ssize_t n = real(fd, iov, iovcnt);
    count(fd, n);
    return n;
}

__attribute__((destructor)) static void dump(void) {
    const char *dir = getenv("COLLTUNE_OBSERVE_DIR");
    if (!dir || !nlabels) return;
    const char *rank = getenv("PMI_RANK");
    if (!rank) rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank) rank = getenv("PMIX_RANK");
    char path[4096];
    snprintf(path, sizeof path, "%s/traffic.%ld.txt", dir, (long)getpid());
    FILE *f = fopen(path, "a");
    if (!f) return;
    for (int i = 0; i < nlabels; i++)
        fprintf(f, "%s\trank=%s bytes=%lld peers=%d sends=%lld\n", labels[i].label,
                rank ? rank : "-1", labels[i].bytes, labels[i].peers, labels[i].sends);
    fclose(f);
}
