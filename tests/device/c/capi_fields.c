/* The public structs are the caller's (issue 29): rdma-core sends the
 * kernel what they say (pd->handle, cq->handle, qp->handle, ...,
 * pd->context, cq->context), so a caller that edits one gets the kernel's
 * answer for an object it does not know, and the real object is left
 * alone. Each verb below runs on an object whose handle was XORed with
 * 0xDEADBEEF (or whose context was pointed at a second context of the
 * same device); the field is then restored and the object must still
 * work and be destroyed normally. Run by tests/device/capi.rs on
 * rdma-core's libibverbs and on ours: the outputs must be identical,
 * except the lines starting with "  rereg" (librxe and libsiw have no
 * rereg_mr, so rdma-core refuses it before the kernel; ours sends it, and
 * answers an edited field as the kernel does).
 * Usage: capi_fields DEVICE GID_INDEX */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "common.h"

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
	if (!siw) {
		/* the context comes from the call, the PD's handle from the PD */
		struct ibv_qp_init_attr_ex ie = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .pd = pd,
			.comp_mask = IBV_QP_INIT_ATTR_PD,
			.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp *qp = ibv_create_qp_ex(ctx, &ie);

		printf("  create_qp_ex %s\n", P(qp));
		if (qp)
			ibv_destroy_qp(qp);
	}
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
	int rc = qp_up(qp, qp->qp_num, 0, &gid, gid_index);

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
	union ibv_gid mgid = { .raw = { 0xff, 0x0e, [15] = 1 } };
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
	printf("  attach_mcast(handle) %s\n", E(ibv_attach_mcast(qp, &mgid, 0)));
	printf("  detach_mcast(handle) %s\n", E(ibv_detach_mcast(qp, &mgid, 0)));
	qp->handle ^= EDIT;
	rc = ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia);
	printf("  query_qp(restored) %s state %d\n", E(rc), qa.qp_state);
	/* (an RC QP joins no group: the kernel's EINVAL once it found the QP) */
	printf("  attach_mcast(restored) %s\n", E(ibv_attach_mcast(qp, &mgid, 0)));

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
		uint32_t lkey = mr2->lkey;
		struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
		int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;

		mr2->handle ^= EDIT;
		rc = ibv_rereg_mr(mr2, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, access);
		printf("  rereg(handle) %d %s\n", rc, rc ? strerror(errno) : "ok");
		mr2->handle ^= EDIT;
		keep = mr2->context;
		mr2->context = ctx2;
		rc = ibv_rereg_mr(mr2, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, access);
		printf("  rereg(context) %d %s\n", rc, rc ? strerror(errno) : "ok");
		mr2->context = keep;
		if (pd2) {
			pd2->handle ^= EDIT;
			rc = ibv_rereg_mr(mr2, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
			printf("  rereg(pd handle) %d %s pd %s\n", rc, rc ? strerror(errno) : "ok",
			       mr2->pd == pd ? "same" : "changed");
			pd2->handle ^= EDIT;
		}
		printf("  rereg: lkey same %d\n", mr2->lkey == lkey);
		mr2->handle ^= EDIT;
		printf("  dereg_mr(handle) %s\n", E(ibv_dereg_mr(mr2)));
		mr2->handle ^= EDIT;
		printf("  dereg_mr(restored) %s\n", E(ibv_dereg_mr(mr2)));
		printf("  pd2 %s\n", pd2 ? E(ibv_dealloc_pd(pd2)) : strerror(errno));
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
