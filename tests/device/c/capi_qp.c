/* Queue pairs, SRQs, AHs, memory windows and the data path through the C
 * ABI, run by tests/device/capi.rs on rdma-core's libibverbs and on ours:
 * the outputs must be identical. Two RC QPs on one device are connected
 * to each other (RoCE v2 GID index from argv). Prints values and errno
 * names, never addresses, keys or QP numbers.
 * Usage: capi_qp DEVICE GID_INDEX */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

#include "common.h"


/* Allocation counting: this program's malloc family wraps glibc's, and
 * both libraries' allocations resolve to it (symbol interposition), so
 * the data path's heap use is visible. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
static int counting;
static long allocs;

void *malloc(size_t n)
{
	allocs += counting;
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	allocs += counting;
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	allocs += counting;
	return __libc_realloc(p, n);
}

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static int gid_index;
static union ibv_gid gid;

static struct ibv_qp *rc_qp(struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	printf("  create_qp(rc%s) %s", srq ? ", srq" : "", P(qp));
	if (qp)
		printf(" state %d type %d pd %s srq %s cap %u %u %u %u\n", qp->state, qp->qp_type,
		       qp->pd == pd ? "same" : "other", qp->srq == srq ? "same" : "other",
		       ia.cap.max_send_wr >= 8, ia.cap.max_recv_wr >= (srq ? 0 : 8),
		       ia.cap.max_send_sge >= 2, ia.cap.max_recv_sge >= (srq ? 0 : 1));
	else
		printf("\n");
	return qp;
}

static int modify(struct ibv_qp *qp, const char *what, struct ibv_qp_attr *a, int mask)
{
	int rc = ibv_modify_qp(qp, a, mask);

	printf("  modify(%s) %s state %d\n", what, E(rc), qp->state);
	return rc;
}

static void up(struct ibv_qp *qp, uint32_t remote)
{
	struct ibv_qp_attr a;

	attr_init(&a);
	modify(qp, "init", &a, INIT_MASK);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	modify(qp, "init->rts", &a, IBV_QP_STATE);
	attr_rtr(&a, remote, 7, &gid, gid_index);
	modify(qp, "rtr", &a, RTR_MASK);
	attr_rts(&a, 7);
	modify(qp, "rts", &a, RTS_MASK);
}

static int by_wr_id(const void *a, const void *b)
{
	const struct ibv_wc *x = a, *y = b;

	return x->wr_id < y->wr_id ? -1 : x->wr_id > y->wr_id;
}

/* Polls until `want` completions arrived (or a minute passed) and prints
 * them sorted by wr_id: the send and receive sides of one CQ complete in
 * an order that depends on timing, on either library. */
static void drain(int want)
{
	struct ibv_wc all[64];
	time_t end = time(NULL) + 60;
	int got = 0, n, i;

	while (got < want && got < 64 && time(NULL) < end) {
		n = ibv_poll_cq(cq, 64 - got < 8 ? 64 - got : 8, all + got);
		if (n < 0) {
			printf("  poll_cq %d\n", n);
			return;
		}
		got += n;
	}
	qsort(all, got, sizeof(all[0]), by_wr_id);
	for (i = 0; i < got; i++)
		printf("  wc id %llu status %s opcode %d len %u flags %u imm %x\n",
		       (unsigned long long)all[i].wr_id, ibv_wc_status_str(all[i].status),
		       all[i].opcode, all[i].status ? 0 : all[i].byte_len,
		       all[i].wc_flags, all[i].wc_flags & IBV_WC_WITH_IMM ? be32toh(all[i].imm_data) : 0);
	printf("  completions %d of %d\n", got, want);
}

/* UD: two QPs on one port, a datagram from u1 to u2, then the address
 * handle answering its sender from the completion (init_ah_from_wc,
 * create_ah_from_wc) and a reply through it. */
static struct ibv_qp *ud_qp(void)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111 };
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	printf("  create_qp(ud) %s\n", P(qp));
	if (!qp)
		return NULL;
	modify(qp, "ud init", &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	a.qp_state = IBV_QPS_RTR;
	modify(qp, "ud rtr", &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 3;
	modify(qp, "ud rts", &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return qp;
}

static void ud_part(struct ibv_mr *mr, char *buf)
{
	struct ibv_qp *u1 = ud_qp(), *u2 = ud_qp();
	struct ibv_ah_attr aa, back;
	struct ibv_ah *ah, *ah2;
	struct ibv_sge rs = { .addr = (uintptr_t)buf + 2048, .length = 40 + 64, .lkey = mr->lkey };
	struct ibv_sge ss = { .addr = (uintptr_t)buf, .length = 6, .lkey = mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 50, .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_send_wr sw = { .wr_id = 51, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc[4], rwc;
	time_t end = time(NULL) + 60;
	int got = 0, have = 0, n, i, rc;

	if (!u1 || !u2)
		return;
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = gid;
	aa.grh.sgid_index = gid_index;
	aa.grh.hop_limit = 1;
	aa.port_num = 1;
	ah = ibv_create_ah(pd, &aa);
	memset(buf + 2048, 0, 200);
	rc = ibv_post_recv(u2, &rw, &rbad);
	sw.wr.ud.ah = ah;
	sw.wr.ud.remote_qpn = u2->qp_num;
	sw.wr.ud.remote_qkey = 0x11111111;
	rc |= ibv_post_send(u1, &sw, &bad);
	printf("  ud post %s\n", E(rc));
	while (got < 2 && time(NULL) < end) {
		n = ibv_poll_cq(cq, 4, wc);
		for (i = 0; i < n; i++) {
			printf("  ud wc id %llu status %s opcode %d len %u grh %d src_qp %s\n",
			       (unsigned long long)wc[i].wr_id, ibv_wc_status_str(wc[i].status),
			       wc[i].opcode, wc[i].byte_len, !!(wc[i].wc_flags & IBV_WC_GRH),
			       wc[i].src_qp == u1->qp_num ? "u1" : "other");
			if (wc[i].wr_id == 50) {
				rwc = wc[i];
				have = 1;
			}
		}
		got += n > 0 ? n : 0;
	}
	printf("  ud payload '%s'\n", buf + 2048 + 40);
	if (have) {
		memset(&back, 0, sizeof(back));
		rc = ibv_init_ah_from_wc(ctx, 1, &rwc, (struct ibv_grh *)(buf + 2048), &back);
		printf("  init_ah_from_wc %d global %u dgid %s sgid_index %u hop_limit %u port %u sl %u\n",
		       rc, back.is_global, !memcmp(&back.grh.dgid, &gid, 16) ? "own" : "other",
		       back.grh.sgid_index, back.grh.hop_limit, back.port_num, back.sl);
		ah2 = ibv_create_ah_from_wc(pd, &rwc, (struct ibv_grh *)(buf + 2048), 1);
		printf("  create_ah_from_wc %s\n", P(ah2));
		if (ah2)
			printf("  destroy_ah %s\n", E(ibv_destroy_ah(ah2)));
	}
	if (ah)
		printf("  destroy_ah %s\n", E(ibv_destroy_ah(ah)));
	printf("  destroy_qp(ud) %s %s\n", E(ibv_destroy_qp(u1)), E(ibv_destroy_qp(u2)));
}

/* The SRQ limit event: s (on the SRQ, limit armed at 2) connected to a
 * new QP t; three receives posted, two consumed: the event names the SRQ
 * (its element pointer), is acknowledged, and destroying the SRQ after
 * that does not wait. */
static void srq_limit_event(struct ibv_srq *srq, struct ibv_qp *s, struct ibv_mr *mr, char *buf)
{
	struct ibv_qp *t = rc_qp(NULL);
	struct ibv_sge rs[3], ss = { .addr = (uintptr_t)buf, .length = 6, .lkey = mr->lkey };
	struct ibv_recv_wr rw[3], *rbad;
	struct ibv_send_wr sw[2], *bad;
	struct ibv_async_event ev;
	time_t end;
	int i, rc;

	if (!t)
		return;
	up(s, t->qp_num);
	up(t, s->qp_num);
	for (i = 0; i < 3; i++) {
		rs[i] = (struct ibv_sge){ .addr = (uintptr_t)buf + 3000 + 64 * i, .length = 64, .lkey = mr->lkey };
		rw[i] = (struct ibv_recv_wr){ .wr_id = 60 + i, .sg_list = &rs[i], .num_sge = 1,
					      .next = i < 2 ? &rw[i + 1] : NULL };
	}
	rc = ibv_post_srq_recv(srq, rw, &rbad);
	printf("  post_srq_recv(3) %s\n", E(rc));
	for (i = 0; i < 2; i++)
		sw[i] = (struct ibv_send_wr){ .wr_id = 70 + i, .sg_list = &ss, .num_sge = 1,
					      .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
					      .next = i ? NULL : &sw[1] };
	rc = ibv_post_send(t, sw, &bad);
	printf("  post_send(2 to the srq qp) %s\n", E(rc));
	drain(4);
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	end = time(NULL) + 30;
	do
		rc = ibv_get_async_event(ctx, &ev);
	while (rc && errno == EAGAIN && time(NULL) < end && !usleep(10000));
	printf("  async event %s %s element %s\n", E(rc ? errno : 0),
	       rc ? "-" : ibv_event_type_str(ev.event_type),
	       rc ? "-" : ev.element.srq == srq ? "the srq" : "other");
	if (!rc)
		ibv_ack_async_event(&ev);
	printf("  destroy_qp %s\n", E(ibv_destroy_qp(t)));
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_qp *a, *b, *s;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq_attr sa;
	struct ibv_srq *srq;
	struct ibv_ah_attr aa;
	struct ibv_ah *ah;
	struct ibv_mw *mw1, *mw2;
	struct ibv_mr *mr;
	struct ibv_sge sge[2];
	struct ibv_send_wr sw[3], *bad;
	struct ibv_recv_wr rw[3], *rbad;
	char *buf;
	int n, i, rc;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (argc > 2 && !strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		printf("usage: capi_qp DEVICE GID_INDEX\n");
		return 1;
	}
	gid_index = atoi(argv[2]);
	ibv_query_gid(ctx, 1, gid_index, &gid);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	buf = aligned_alloc(4096, 8192);
	memset(buf, 0, 8192);
	strcpy(buf, "hello");
	mr = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	printf("%s pd %s cq %s mr %s\n", argv[1], P(pd), P(cq), P(mr));

	a = rc_qp(NULL);
	b = rc_qp(NULL);
	if (!a || !b)
		return 1;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	modify(a, "reset->rtr", &qa, IBV_QP_STATE);
	up(a, b->qp_num);
	up(b, a->qp_num);
	rc = ibv_query_qp(b, &qa, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_PORT, &qia);
	printf("  query_qp %s state %d mtu %d port %u dest %s rq_psn %u timeout %u type %d sig_all %d "
	       "cq %s\n", E(rc), qa.qp_state, qa.path_mtu, qa.port_num,
	       qa.dest_qp_num == a->qp_num ? "a" : "other", qa.rq_psn, qa.timeout, qia.qp_type,
	       qia.sq_sig_all, qia.send_cq == cq ? "same" : "other");

	/* receives: two good, then one with too many SGEs */
	for (i = 0; i < 3; i++) {
		sge[0] = (struct ibv_sge){ .addr = (uintptr_t)buf + 4096 + i * 64, .length = 64, .lkey = mr->lkey };
		rw[i] = (struct ibv_recv_wr){ .wr_id = 100 + i, .sg_list = sge, .num_sge = 1,
					      .next = i < 2 ? &rw[i + 1] : NULL };
	}
	rw[2].num_sge = 5;
	rbad = NULL;
	rc = ibv_post_recv(b, rw, &rbad);
	printf("  post_recv(3, third bad) %s bad %ld\n", E(rc), rbad ? (long)(rbad - rw) : -1L);
	/* sends: send, send with imm, then one with too many SGEs */
	sge[1] = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 6, .lkey = mr->lkey };
	for (i = 0; i < 3; i++)
		sw[i] = (struct ibv_send_wr){ .wr_id = 1 + i, .sg_list = &sge[1], .num_sge = 1,
					      .opcode = i ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
					      .send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(0xabc),
					      .next = i < 2 ? &sw[i + 1] : NULL };
	sw[2].num_sge = 5;
	bad = NULL;
	rc = ibv_post_send(a, sw, &bad);
	printf("  post_send(3, third bad) %s bad %ld\n", E(rc), bad ? (long)(bad - sw) : -1L);
	drain(4);
	printf("  received '%s'\n", buf + 4096 + 128);
	/* RDMA write and read */
	memset(buf + 6000, 0, 16);
	sw[0] = (struct ibv_send_wr){ .wr_id = 9, .sg_list = &sge[1], .num_sge = 1,
				      .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				      .wr.rdma = { .remote_addr = (uintptr_t)buf + 6000, .rkey = mr->rkey } };
	rc = ibv_post_send(a, sw, &bad);
	printf("  post_send(write) %s\n", E(rc));
	drain(1);
	printf("  written '%s'\n", buf + 6000);

	/* the data path allocates nothing: 50 rounds of post_recv, post_send,
	 * poll_cq until both completed */
	{
		struct ibv_wc wc[4];
		time_t end = time(NULL) + 60;
		int round, got, bad_status = 0;

		sge[0] = (struct ibv_sge){ .addr = (uintptr_t)buf + 4096, .length = 64, .lkey = mr->lkey };
		rw[0] = (struct ibv_recv_wr){ .wr_id = 200, .sg_list = sge, .num_sge = 1 };
		sw[0] = (struct ibv_send_wr){ .wr_id = 201, .sg_list = &sge[1], .num_sge = 1,
					      .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
		counting = 1;
		for (round = 0; round < 50 && time(NULL) < end; round++) {
			if (ibv_post_recv(b, rw, &rbad) || ibv_post_send(a, sw, &bad))
				break;
			for (got = 0; got < 2 && time(NULL) < end;) {
				n = ibv_poll_cq(cq, 4, wc);
				for (i = 0; i < n; i++)
					bad_status += wc[i].status != IBV_WC_SUCCESS;
				got += n > 0 ? n : 0;
			}
		}
		counting = 0;
		printf("  data path: %d rounds, %d bad completions, %ld allocations\n", round, bad_status,
		       allocs);
	}
	ud_part(mr, buf);
	errno = 0;
	rc = ibv_destroy_cq(cq);
	printf("  destroy_cq(in use) %s\n", E(rc));

	srq = ibv_create_srq(pd, &sia);
	printf("  create_srq %s max_wr>=16 %d max_sge %u\n", P(srq), sia.attr.max_wr >= 16, sia.attr.max_sge);
	rc = srq ? ibv_query_srq(srq, &sa) : -1;
	printf("  query_srq %s max_wr>=16 %d limit %u\n", E(rc), sa.max_wr >= 16, sa.srq_limit);
	sa.srq_limit = 4;
	rc = srq ? ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) : -1;
	printf("  modify_srq(limit) %s\n", E(rc));
	s = srq ? rc_qp(srq) : NULL;
	sa.srq_limit = 2;
	rc = s ? ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) : -1;
	printf("  modify_srq(limit, in use) %s\n", E(rc));
	rc = srq ? ibv_query_srq(srq, &sa) : -1;
	printf("  query_srq %s limit %u\n", E(rc), sa.srq_limit);
	rc = srq ? ibv_destroy_srq(srq) : -1;
	printf("  destroy_srq(in use) %s\n", E(rc));
	if (s)
		srq_limit_event(srq, s, mr, buf);
	if (s)
		printf("  destroy_qp %s\n", E(ibv_destroy_qp(s)));
	if (srq)
		printf("  destroy_srq %s\n", E(ibv_destroy_srq(srq)));

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = gid;
	aa.grh.sgid_index = gid_index;
	aa.grh.hop_limit = 1;
	aa.port_num = 1;
	ah = ibv_create_ah(pd, &aa);
	printf("  create_ah %s\n", P(ah));
	if (ah)
		printf("  destroy_ah %s\n", E(ibv_destroy_ah(ah)));
	aa.is_global = 0;
	errno = 0;
	ah = ibv_create_ah(pd, &aa);
	printf("  create_ah(no grh on RoCE) %s\n", P(ah));

	mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	printf("  alloc_mw %s %s type %d %d\n", P(mw1), P(mw2), mw1 ? (int)mw1->type : -1,
	       mw2 ? (int)mw2->type : -1);
	/* memory windows bound to the region: type 1 with ibv_bind_mw, type 2
	 * with a bind request; then an RDMA write from b through each key */
	if (mw1 && mw2) {
		struct ibv_mw_bind mb = { .wr_id = 31, .send_flags = IBV_SEND_SIGNALED,
			.bind_info = { .mr = mr, .addr = (uintptr_t)buf + 7000, .length = 64,
				       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE } };
		uint32_t old1 = mw1->rkey;

		rc = ibv_bind_mw(a, mw1, &mb);
		printf("  bind_mw(type 1) %s rkey %s\n", E(rc), mw1->rkey != old1 ? "changed" : "same");
		drain(1);
		memset(&sw[0], 0, sizeof(sw[0]));
		sw[0].wr_id = 32;
		sw[0].opcode = IBV_WR_BIND_MW;
		sw[0].send_flags = IBV_SEND_SIGNALED;
		sw[0].bind_mw.mw = mw2;
		sw[0].bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
		sw[0].bind_mw.bind_info = mb.bind_info;
		sw[0].bind_mw.bind_info.addr = (uintptr_t)buf + 7100;
		rc = ibv_post_send(a, sw, &bad);
		printf("  post_send(bind type 2) %s\n", E(rc));
		drain(1);
		memset(buf + 7000, 0, 200);
		sw[0] = (struct ibv_send_wr){ .wr_id = 33, .sg_list = &sge[1], .num_sge = 1,
					      .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
					      .wr.rdma = { .remote_addr = (uintptr_t)buf + 7000, .rkey = mw1->rkey } };
		sw[1] = sw[0];
		sw[1].wr_id = 34;
		sw[1].wr.rdma.remote_addr = (uintptr_t)buf + 7100;
		sw[1].wr.rdma.rkey = ibv_inc_rkey(mw2->rkey);
		sw[0].next = &sw[1];
		rc = ibv_post_send(b, sw, &bad);
		printf("  post_send(write through windows) %s\n", E(rc));
		drain(2);
		printf("  through windows '%s' '%s'\n", buf + 7000, buf + 7100);
	}
	if (mw1)
		printf("  dealloc_mw %s\n", E(ibv_dealloc_mw(mw1)));
	if (mw2)
		printf("  dealloc_mw %s\n", E(ibv_dealloc_mw(mw2)));

	rc = ibv_destroy_qp(a);
	printf("  destroy_qp %s\n", E(rc));
	rc = ibv_destroy_qp(b);
	printf("  destroy_qp %s\n", E(rc));
	rc = ibv_dereg_mr(mr);
	printf("  dereg_mr %s\n", E(rc));
	rc = ibv_destroy_cq(cq);
	printf("  destroy_cq %s\n", E(rc));
	rc = ibv_dealloc_pd(pd);
	printf("  dealloc_pd %s\n", E(rc));
	rc = ibv_close_device(ctx);
	printf("  close %s\n", E(rc));
	ibv_free_device_list(list);
	free(buf);
	return 0;
}
