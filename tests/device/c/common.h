/* What the C programs of the device suite share: how they print a verb's
 * result, and the attributes that bring an RC QP up to RTS, connected to
 * a QP of the same device (port 1, the RoCE v2 GID of the given index).
 * Each program includes it; tests/device/capi.rs (compile_c) compiles one
 * .c file at a time, and the #include finds this header next to it.
 * Everything is static inline, so that a program may leave parts unused
 * (the programs are built with -Wall -Werror). */
#ifndef VERBS_DEVICE_C_COMMON_H
#define VERBS_DEVICE_C_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>

/* The result of a verb that returns an errno value, of one that returns a
 * pointer (NULL with errno). */
#define E(rc) ((rc) ? strerror(rc) : "ok")
#define P(p) ((p) ? "ok" : strerror(errno))

/* The attribute masks of the three transitions. */
#define INIT_MASK (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define RTR_MASK                                                                                      \
	(IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |                  \
	 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define RTS_MASK                                                                                      \
	(IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |          \
	 IBV_QP_MAX_QP_RD_ATOMIC)

/* RESET -> INIT on port 1; the remote side may write and read. */
static inline void attr_init(struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_INIT;
	a->port_num = 1;
	a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
}

/* INIT -> RTR towards QP `remote` at the GID `gid` (index `gid_index`). */
static inline void attr_rtr(struct ibv_qp_attr *a, uint32_t remote, uint32_t rq_psn, const union ibv_gid *gid,
			    int gid_index)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = remote;
	a->rq_psn = rq_psn;
	a->max_dest_rd_atomic = 1;
	a->min_rnr_timer = 12;
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.dgid = *gid;
	a->ah_attr.grh.sgid_index = gid_index;
	a->ah_attr.grh.hop_limit = 1;
	a->ah_attr.port_num = 1;
}

/* RTR -> RTS. */
static inline void attr_rts(struct ibv_qp_attr *a, uint32_t sq_psn)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->sq_psn = sq_psn;
	a->max_rd_atomic = 1;
}

/* RESET -> INIT -> RTR -> RTS, both PSNs `psn`: 0 or the errno value of
 * the first transition that failed. */
static inline int qp_up(struct ibv_qp *qp, uint32_t remote, uint32_t psn, const union ibv_gid *gid, int gid_index)
{
	struct ibv_qp_attr a;
	int rc;

	attr_init(&a);
	rc = ibv_modify_qp(qp, &a, INIT_MASK);
	attr_rtr(&a, remote, psn, gid, gid_index);
	rc = rc ?: ibv_modify_qp(qp, &a, RTR_MASK);
	attr_rts(&a, psn);
	return rc ?: ibv_modify_qp(qp, &a, RTS_MASK);
}

#endif
