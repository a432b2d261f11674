/* Posting to a queue pair in the Error state (issue 29): the IB spec and
 * rdma-core + rxe accept a send request (and a memory-window bind) on a
 * QP in ERR and complete it with IBV_WC_WR_FLUSH_ERR. Also one thread
 * posting RDMA writes while another moves the QP to ERR: every post is
 * accepted and every request completes (success before, flush after).
 * Run by tests/device/capi.rs on rdma-core's libibverbs and on ours: the
 * outputs must be identical. Prints values and errno names, never
 * addresses, keys or QP numbers.
 * Usage: capi_err DEVICE GID_INDEX */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

#include "common.h"


static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static int gid_index;
static union ibv_gid gid;
static char *buf;

static struct ibv_qp *rc_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &ia);
}

static int up(struct ibv_qp *qp, uint32_t remote)
{
	return qp_up(qp, remote, 0, &gid, gid_index);
}

static int to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

/* One completion (or none within a minute). */
static int one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	time_t end = time(NULL) + 60;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0 && time(NULL) < end)
		;
	return n;
}

static void show(const char *what, int rc, struct ibv_cq *cq)
{
	struct ibv_wc wc;
	int n = rc ? 0 : one(cq, &wc);

	printf("%s: post %s", what, E(rc));
	if (n == 1)
		printf(" completion wr_id %llu status %s\n", (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status));
	else
		printf(" completions %d\n", n);
}

/* The race: one thread posts RDMA writes, the other moves the QP to ERR. */
static struct ibv_qp *rq;
static struct ibv_cq *rcq;
static uint32_t rkey;
static atomic_int posted;
#define ROUNDS 200

static void *poster(void *arg)
{
	struct ibv_wc wc[16];
	long done = 0, bad_status = 0, refused = 0;
	int first_errno = 0, first_at = -1, last_errno = 0;
	time_t end;
	int i, n, rc;

	(void)arg;
	for (i = 0; i < ROUNDS; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr *bad;

		wr.wr.rdma.remote_addr = (uintptr_t)buf + 4096;
		wr.wr.rdma.rkey = rkey;
		while ((rc = ibv_post_send(rq, &wr, &bad)) == ENOMEM) {
			/* send queue full: make room */
			n = ibv_poll_cq(rcq, 16, wc);
			for (int j = 0; j < n; j++)
				bad_status += wc[j].status != IBV_WC_SUCCESS && wc[j].status != IBV_WC_WR_FLUSH_ERR;
			done += n > 0 ? n : 0;
		}
		if (rc) {
			refused++;
			if (first_at < 0) {
				first_errno = rc;
				first_at = i;
			}
			last_errno = rc;
		}
		atomic_store(&posted, i + 1);
		n = ibv_poll_cq(rcq, 16, wc);
		for (int j = 0; j < n; j++)
			bad_status += wc[j].status != IBV_WC_SUCCESS && wc[j].status != IBV_WC_WR_FLUSH_ERR;
		done += n > 0 ? n : 0;
	}
	end = time(NULL) + 60;
	while (done < ROUNDS - refused && time(NULL) < end) {
		n = ibv_poll_cq(rcq, 16, wc);
		for (int j = 0; j < n; j++)
			bad_status += wc[j].status != IBV_WC_SUCCESS && wc[j].status != IBV_WC_WR_FLUSH_ERR;
		done += n > 0 ? n : 0;
	}
	printf("race: %d posts, %ld refused, every posted request completed %s, other statuses %ld\n", ROUNDS,
	       refused, done == ROUNDS - refused ? "yes" : "no", bad_status);
	if (refused) /* the cause (rdma-core refuses none) */
		printf("race: first refused post %d: %s, last: %s\n", first_at, strerror(first_errno),
		       strerror(last_errno));
	return NULL;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_cq *cq, *cq2;
	struct ibv_qp *a, *b, *c, *d;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_mw_bind bind;
	struct ibv_mw *mw1, *mw2;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	pthread_t t;
	uint32_t old;
	int n, i, rc;

	setlinebuf(stdout);
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (argc > 2 && !strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		printf("usage: capi_err DEVICE GID_INDEX\n");
		return 1;
	}
	gid_index = atoi(argv[2]);
	ibv_query_gid(ctx, 1, gid_index, &gid);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	cq2 = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	buf = aligned_alloc(4096, 8192);
	memset(buf, 0, 8192);
	strcpy(buf, "hello");
	mr = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	printf("%s pd %s cq %s %s mr %s\n", argv[1], P(pd), P(cq), P(cq2), P(mr));
	if (!pd || !cq || !cq2 || !mr)
		return 1;
	a = rc_qp(cq);
	b = rc_qp(cq);
	if (!a || !b)
		return 1;
	rc = up(a, b->qp_num);
	printf("connected %s %s\n", E(rc), E(up(b, a->qp_num)));
	rc = to_err(a);
	ibv_query_qp(a, &qa, IBV_QP_STATE, &qia);
	printf("modify(err) %s state %d query %d\n", E(rc), a->state, qa.qp_state);

	sge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 6, .lkey = mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	show("send in err", ibv_post_send(a, &wr, &bad), cq);
	wr.wr_id = 2;
	wr.send_flags = 0;
	show("unsignaled send in err", ibv_post_send(a, &wr, &bad), cq);
	wr = (struct ibv_send_wr){ .wr_id = 3, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = (uintptr_t)buf + 4096;
	wr.wr.rdma.rkey = mr->rkey;
	show("rdma write in err", ibv_post_send(a, &wr, &bad), cq);
	wr.wr_id = 4;
	wr.opcode = IBV_WR_RDMA_READ;
	show("rdma read in err", ibv_post_send(a, &wr, &bad), cq);
	wr.wr_id = 5;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	wr.opcode = IBV_WR_SEND;
	show("inline send in err", ibv_post_send(a, &wr, &bad), cq);

	mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	printf("windows %s %s\n", P(mw1), P(mw2));
	if (mw1) {
		memset(&bind, 0, sizeof(bind));
		bind.wr_id = 6;
		bind.send_flags = IBV_SEND_SIGNALED;
		bind.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)buf, .length = 64,
							    .mw_access_flags = IBV_ACCESS_REMOTE_READ };
		old = mw1->rkey;
		rc = ibv_bind_mw(a, mw1, &bind);
		show("bind_mw(type 1) in err", rc, cq);
		printf("  rkey changed %s\n", mw1->rkey != old ? "yes" : "no");
	}
	if (mw2) {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 7;
		wr.opcode = IBV_WR_BIND_MW;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.bind_mw.mw = mw2;
		wr.bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
		wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)buf, .length = 64,
								  .mw_access_flags = IBV_ACCESS_REMOTE_READ };
		show("post bind_mw(type 2) in err", ibv_post_send(a, &wr, &bad), cq);
	}
	n = ibv_poll_cq(cq, 1, &(struct ibv_wc){ 0 });
	printf("nothing more: %d\n", n);

	/* the race */
	rcq = cq2;
	c = rc_qp(cq2);
	d = rc_qp(cq2);
	if (!c || !d)
		return 1;
	rc = up(c, d->qp_num);
	printf("race pair connected %s %s\n", E(rc), E(up(d, c->qp_num)));
	rq = c;
	rkey = mr->rkey;
	pthread_create(&t, NULL, poster, NULL);
	while (atomic_load(&posted) < ROUNDS / 4)
		;
	rc = to_err(c);
	pthread_join(t, NULL);
	printf("race: modify(err) %s\n", E(rc));

	printf("destroy %s", E(ibv_destroy_qp(a)));
	printf(" %s", E(ibv_destroy_qp(b)));
	printf(" %s", E(ibv_destroy_qp(c)));
	printf(" %s", E(ibv_destroy_qp(d)));
	if (mw1)
		printf(" mw %s", E(ibv_dealloc_mw(mw1)));
	if (mw2)
		printf(" mw %s", E(ibv_dealloc_mw(mw2)));
	printf(" mr %s", E(ibv_dereg_mr(mr)));
	printf(" cq %s", E(ibv_destroy_cq(cq)));
	printf(" %s", E(ibv_destroy_cq(cq2)));
	printf(" pd %s", E(ibv_dealloc_pd(pd)));
	printf(" close %s\n", E(ibv_close_device(ctx)));
	ibv_free_device_list(list);
	free(buf);
	printf("done\n");
	return 0;
}
