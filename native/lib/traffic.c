/*
 * traffic.c -- the traffic counters (ct_traffic_enable): while enabled, the
 * algorithms' sends (ct_send, ct_isend, ct_sendrecv in ct_internal.h) add their
 * bytes and one message per destination world rank. colltune-traffic-count
 * (tools/traffic_count.c) reads them around one call.
 */
#include "ct_internal.h"

long long *ct_traffic_bytes_, *ct_traffic_msgs_;

void ct_traffic_enable(long long *bytes, long long *msgs) {
    ct_traffic_msgs_ = msgs;
    ct_traffic_bytes_ = bytes;
}
void ct_traffic_disable(void) {
    ct_traffic_bytes_ = NULL;
    ct_traffic_msgs_ = NULL;
}

void ct_traffic_add(int count, MPI_Datatype dt, int dest, MPI_Comm comm) {
    if (dest == MPI_PROC_NULL || count <= 0 || !ct_traffic_bytes_) return;
    int size = 0, w = MPI_UNDEFINED;
    MPI_Group g, wg;
    if (ct_type_size(dt, &size) != MPI_SUCCESS) return;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_translate_ranks(g, 1, &dest, wg, &w);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    if (w == MPI_UNDEFINED || w < 0) return;
    ct_traffic_bytes_[w] += (long long)count * size;
    if (ct_traffic_msgs_) ct_traffic_msgs_[w] += 1;
}
