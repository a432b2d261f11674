/* The public structs are the caller's (issue 29): rdma-core sends the
 * kernel what they say (pd->handle, cq->handle, qp->handle, ...,
 * pd->context, cq->context), so a caller that edits one gets the kernel's
 * answer for an object it does not know, and the real object is left
 * alone. Each verb below runs on an object whose handle was XORed with
 * 0xDEADBEEF (or whose context was pointed at a second context of the
 * same device); the field is then restored and the object must still
 * work and be destroyed normally. Run by tests/device/capi.rs on
 * rdma-core's libibverbs and on ours: the outputs must be identical.
 * Usage: capi_fields DEVICE GID_INDEX */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#define E(rc) ((rc) ? strerror(rc) : "ok")
#define P(p) ((p) ? "ok" : strerror(errno))
#define EDIT 0xDEADBEEFu

static struct ibv_context *ctx, *ctx2;
static struct ibv_pd *pd;
static struct ibv_cq *cq, *cq2;
static int gid_index;
static union ibv_gid gid;
static char *buf;
/* libsiw unmaps a CQ's or QP's ring before it asks the kernel to destroy
 * it, and leaves it unmapped when the kernel refuses: the next poll
 * crashes. Those two destroys are left out on siw. */
static int siw;

static struct ibv_qp *make_qp(struct ibv_cq *s, struct ibv_cq *r, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s, .recv_cq = r, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &ia);
}

/* Creating a QP that must fail; one that does not is destroyed. */
static void try_qp(const char *what, struct ibv_cq *s, struct ibv_cq *r, struct ibv_srq *srq)
{
	struct ibv_qp *qp = make_qp(s, r, srq);

	printf("  create_qp(%s) %s\n", what, P(qp));
	if (qp)
		ibv_destroy_qp(qp);
}

static struct ibv_ah *make_ah(void)
{
	struct ibv_ah_attr aa;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = gid;
	aa.grh.sgid_index = gid_index;
	aa.grh.hop_limit = 1;
	aa.port_num = 1;
	return ibv_create_ah(pd, &aa);
}

/* Everything that takes a PD, on the PD as it now is. */
static void on_pd(const char *what)
{
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	struct ibv_srq *srq;
	struct ibv_ah *ah;

	printf("pd(%s)\n", what);
	printf("  dealloc_pd %s\n", E(ibv_dealloc_pd(pd)));
	mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	printf("  reg_mr %s\n", P(mr));
	if (mr)
		ibv_dereg_mr(mr);
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	printf("  alloc_mw %s\n", P(mw));
	if (mw)
		ibv_dealloc_mw(mw);
	try_qp("pd", cq, cq, NULL);
	srq = ibv_create_srq(pd, &sia);
	printf("  create_srq %s\n", P(srq));
	if (srq)
		ibv_destroy_srq(srq);
	ah = make_ah();
	printf("  create_ah %s\n", P(ah));
	if (ah)
		ibv_destroy_ah(ah);
}

/* Everything that takes a CQ, on the CQ as it now is. */
static void on_cq(const char *what)
{
	struct ibv_wc wc;

	printf("cq(%s)\n", what);
	printf("  req_notify_cq %s\n", E(ibv_req_notify_cq(cq, 0)));
	printf("  resize_cq %s\n", E(ibv_resize_cq(cq, 128)));
	printf("  poll_cq %d\n", ibv_poll_cq(cq, 1, &wc));
	if (!siw)
		printf("  destroy_cq %s\n", E(ibv_destroy_cq(cq)));
	try_qp("send cq", cq, cq2, NULL);
	try_qp("recv cq", cq2, cq, NULL);
}

static void up(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	rc = rc ?: ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	rc = rc ?: ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	printf("  up %s state %d\n", E(rc), qp->state);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_cq_init_attr_ex cia = { .cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_context *keep;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_srq_attr sa;
	struct ibv_recv_wr rw, *rbad;
	struct ibv_sge sge;
	struct ibv_mw_bind bind;
	struct ibv_cq_ex *cqx;
	struct ibv_qp *qp;
	struct ibv_srq *srq;
	struct ibv_ah *ah;
	struct ibv_mr *mr, *mr2;
	struct ibv_mw *mw;
	int n, i, rc;

	setlinebuf(stdout);
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (argc > 2 && !strcmp(ibv_get_device_name(list[i]), argv[1])) {
			ctx = ibv_open_device(list[i]);
			ctx2 = ibv_open_device(list[i]);
		}
	if (!ctx || !ctx2) {
		printf("usage: capi_fields DEVICE GID_INDEX\n");
		return 1;
	}
	gid_index = atoi(argv[2]);
	siw = !strncmp(argv[1], "siw", 3);
	ibv_query_gid(ctx, 1, gid_index, &gid);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	cq2 = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	buf = aligned_alloc(4096, 8192);
	memset(buf, 0, 8192);
	mr = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	printf("%s pd %s cq %s %s mr %s\n", argv[1], P(pd), P(cq), P(cq2), P(mr));
	if (!pd || !cq || !cq2 || !mr)
		return 1;

	/* protection domain */
	pd->handle ^= EDIT;
	on_pd("handle");
	pd->handle ^= EDIT;
	keep = pd->context;
	pd->context = ctx2;
	on_pd("context");
	pd->context = keep;
	mr2 = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	printf("pd restored: reg_mr %s dereg_mr %s\n", P(mr2), mr2 ? E(ibv_dereg_mr(mr2)) : "-");

	/* completion queue */
	cq->handle ^= EDIT;
	on_cq("handle");
	cq->handle ^= EDIT;
	keep = cq->context;
	cq->context = ctx2;
	on_cq("context");
	cq->context = keep;
	printf("cq restored: req_notify_cq %s\n", E(ibv_req_notify_cq(cq, 0)));
	/* (libsiw has no extended CQs; this library has them on siw too) */
	cqx = siw ? NULL : ibv_create_cq_ex(ctx, &cia);
	if (!siw)
		printf("create_cq_ex %s\n", P(cqx));
	if (cqx) {
		ibv_cq_ex_to_cq(cqx)->handle ^= EDIT;
		printf("  destroy_cq(ex, handle) %s\n", E(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx))));
		ibv_cq_ex_to_cq(cqx)->handle ^= EDIT;
		printf("  destroy_cq(ex) %s\n", E(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx))));
	}

	/* queue pair */
	qp = make_qp(cq, cq, NULL);
	printf("qp %s\n", P(qp));
	if (!qp)
		return 1;
	qp->handle ^= EDIT;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	rc = ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	printf("  modify_qp(handle) %s state %d\n", E(rc), qp->state);
	printf("  query_qp(handle) %s\n", E(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia)));
	if (!siw)
		printf("  destroy_qp(handle) %s\n", E(ibv_destroy_qp(qp)));
	qp->handle ^= EDIT;
	rc = ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia);
	printf("  query_qp(restored) %s state %d\n", E(rc), qa.qp_state);

	/* shared receive queue */
	srq = ibv_create_srq(pd, &sia);
	printf("srq %s\n", P(srq));
	if (!srq)
		return 1;
	srq->handle ^= EDIT;
	sa = (struct ibv_srq_attr){ .srq_limit = 2 };
	printf("  modify_srq(handle) %s\n", E(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT)));
	printf("  query_srq(handle) %s\n", E(ibv_query_srq(srq, &sa)));
	printf("  destroy_srq(handle) %s\n", E(ibv_destroy_srq(srq)));
	try_qp("srq", cq, cq, srq);
	sge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
	rw = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	printf("  post_srq_recv(handle) %s\n", E(ibv_post_srq_recv(srq, &rw, &rbad)));
	srq->handle ^= EDIT;
	rc = ibv_query_srq(srq, &sa);
	printf("  query_srq(restored) %s max_wr at least 4 %d\n", E(rc), sa.max_wr >= 4);

	/* address handle (none on iWARP) */
	ah = make_ah();
	printf("ah %s\n", P(ah));
	if (ah) {
		ah->handle ^= EDIT;
		printf("  destroy_ah(handle) %s\n", E(ibv_destroy_ah(ah)));
		ah->handle ^= EDIT;
		printf("  destroy_ah(restored) %s\n", E(ibv_destroy_ah(ah)));
	}

	/* memory region */
	mr2 = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	printf("mr %s\n", P(mr2));
	if (mr2) {
		mr2->handle ^= EDIT;
		printf("  dereg_mr(handle) %s\n", E(ibv_dereg_mr(mr2)));
		mr2->handle ^= EDIT;
		printf("  dereg_mr(restored) %s\n", E(ibv_dereg_mr(mr2)));
	}

	/* memory window (none on siw), and a bind through an edited QP */
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	printf("mw %s\n", P(mw));
	if (mw) {
		mw->handle ^= EDIT;
		printf("  dealloc_mw(handle) %s\n", E(ibv_dealloc_mw(mw)));
		mw->handle ^= EDIT;
		up(qp);
		memset(&bind, 0, sizeof(bind));
		bind.wr_id = 5;
		bind.send_flags = IBV_SEND_SIGNALED;
		bind.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)buf, .length = 64,
							    .mw_access_flags = IBV_ACCESS_REMOTE_READ };
		qp->handle ^= EDIT;
		rc = ibv_bind_mw(qp, mw, &bind);
		qp->handle ^= EDIT;
		printf("  bind_mw(qp handle) %s\n", E(rc));
		printf("  dealloc_mw(restored) %s\n", E(ibv_dealloc_mw(mw)));
	}

	printf("destroy qp %s", E(ibv_destroy_qp(qp)));
	printf(" srq %s", E(ibv_destroy_srq(srq)));
	printf(" mr %s", E(ibv_dereg_mr(mr)));
	printf(" cq %s", E(ibv_destroy_cq(cq)));
	printf(" %s", E(ibv_destroy_cq(cq2)));
	printf(" pd %s\n", E(ibv_dealloc_pd(pd)));
	printf("close %s", E(ibv_close_device(ctx2)));
	printf(" %s\n", E(ibv_close_device(ctx)));
	ibv_free_device_list(list);
	free(buf);
	printf("done\n");
	return 0;
}
