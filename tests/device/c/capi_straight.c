/* The data path's straight cases through the C ABI, run by
 * tests/device/capi.rs on rdma-core's libibverbs and on ours: the outputs
 * must be identical. Two RC QPs on one device connected to each other
 * (RoCE v2 GID index from argv).
 *
 * 1. One request of each operation the straight send path takes (SEND,
 *    SEND with immediate, RDMA WRITE with and without immediate, RDMA
 *    READ; with one SGE, inline, or no SGE), each checked end to end: the
 *    completions on both sides and the bytes that arrived.
 * 2. 20 rounds of 12 receives and 12 sends with immediate data, the
 *    completions polled in batches of 5 from CQs of about 20 entries, so
 *    that batches straddle the end of the ring: every completion checked
 *    (order, status, length, immediate data, flags, bytes).
 * 3. Polls that return before looking at the array: an empty CQ with a
 *    NULL array, no room, a negative count.
 * Prints values and errno names, never addresses, keys or QP numbers.
 * Usage: capi_straight DEVICE GID_INDEX */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

#include "common.h"

#define DIE(what) do { printf("%s failed: %s\n", what, strerror(errno)); exit(1); } while (0)

enum { SRC = 0, RECV = 1024, TARGET = 2048, READ_DST = 3072, LEN = 4096 };

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static struct ibv_cq *scq, *rcq;
static struct ibv_qp *a, *b;
static char *buf;
static int gid_index;
static union ibv_gid gid;

static struct ibv_qp *rc_qp(struct ibv_cq *send_cq, struct ibv_cq *recv_cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = send_cq, .recv_cq = recv_cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		DIE("ibv_create_qp");
	return qp;
}

static void up(struct ibv_qp *qp, uint32_t remote)
{
	struct ibv_qp_attr at;

	attr_init(&at);
	if (ibv_modify_qp(qp, &at, INIT_MASK))
		DIE("modify INIT");
	attr_rtr(&at, remote, 9, &gid, gid_index);
	if (ibv_modify_qp(qp, &at, RTR_MASK))
		DIE("modify RTR");
	attr_rts(&at, 9);
	if (ibv_modify_qp(qp, &at, RTS_MASK))
		DIE("modify RTS");
}

/* Polls `cq` in batches of at most `batch` until `want` completions are
 * in `wc` (or a minute passed); returns how many. */
static int wait_cq(struct ibv_cq *cq, struct ibv_wc *wc, int want, int batch)
{
	time_t end = time(NULL) + 60;
	int got = 0, n;

	while (got < want && time(NULL) < end) {
		n = ibv_poll_cq(cq, want - got < batch ? want - got : batch, wc + got);
		if (n < 0) {
			printf("  poll_cq %d %s\n", n, strerror(errno));
			return got;
		}
		got += n;
	}
	return got;
}

static int post_recv(uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(buf + off), .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	return ibv_post_recv(b, &wr, &bad);
}

struct op {
	const char *name;
	enum ibv_wr_opcode opcode;
	int inline_data, num_sge, receives;
};

static const struct op ops[] = {
	{ "send", IBV_WR_SEND, 0, 1, 1 },
	{ "send_with_imm", IBV_WR_SEND_WITH_IMM, 0, 1, 1 },
	{ "send_with_imm no sge", IBV_WR_SEND_WITH_IMM, 0, 0, 1 },
	{ "send inline", IBV_WR_SEND, 1, 1, 1 },
	{ "rdma_write", IBV_WR_RDMA_WRITE, 0, 1, 0 },
	{ "rdma_write inline", IBV_WR_RDMA_WRITE, 1, 1, 0 },
	{ "rdma_write_with_imm", IBV_WR_RDMA_WRITE_WITH_IMM, 0, 1, 1 },
	{ "rdma_read", IBV_WR_RDMA_READ, 0, 1, 0 },
};

/* One request of `op`, checked end to end. */
static void one(int k, const struct op *op)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_wc s, r;
	uint32_t len = 24 + k;
	int rc, i, ok;

	for (i = 0; i < 64; i++) {
		buf[SRC + i] = (char)(k * 16 + i);
		buf[TARGET + i] = (char)(k * 7 + i);
		buf[RECV + i] = 0;
		buf[READ_DST + i] = 0;
	}
	if (op->receives && (rc = post_recv(100 + k, RECV, 64)))
		printf("  post_recv %s\n", E(rc));
	sge.addr = (uintptr_t)(buf + (op->opcode == IBV_WR_RDMA_READ ? READ_DST : SRC));
	sge.length = len;
	sge.lkey = mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = k;
	wr.opcode = op->opcode;
	wr.sg_list = op->num_sge ? &sge : NULL;
	wr.num_sge = op->num_sge;
	wr.send_flags = IBV_SEND_SIGNALED | (op->inline_data ? IBV_SEND_INLINE : 0);
	wr.imm_data = htonl(0x1000 + k);
	wr.wr.rdma.remote_addr = (uintptr_t)(buf + TARGET);
	wr.wr.rdma.rkey = mr->rkey;
	rc = ibv_post_send(a, &wr, &bad);
	printf("  %s: post %s", op->name, E(rc));
	if (rc) {
		printf("\n");
		return;
	}
	if (wait_cq(scq, &s, 1, 1) != 1) {
		printf(" no send completion\n");
		return;
	}
	printf(" send wr_id %d status %d opcode %d", (int)s.wr_id, s.status, s.opcode);
	if (op->opcode == IBV_WR_RDMA_READ)
		printf(" byte_len %u", s.byte_len == len);
	if (op->receives) {
		if (wait_cq(rcq, &r, 1, 1) != 1) {
			printf(" no receive completion\n");
			return;
		}
		printf(" recv wr_id %d status %d opcode %d byte_len %d imm %s", (int)r.wr_id, r.status,
		       r.opcode, r.byte_len == (op->num_sge ? len : 0),
		       r.wc_flags & IBV_WC_WITH_IMM ? (ntohl(r.imm_data) == 0x1000u + k ? "right" : "wrong")
						    : "none");
	}
	/* where the bytes should be now */
	if (op->opcode == IBV_WR_RDMA_READ)
		ok = !memcmp(buf + READ_DST, buf + TARGET, len);
	else if (op->opcode == IBV_WR_RDMA_WRITE || op->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		ok = !memcmp(buf + TARGET, buf + SRC, len);
	else
		ok = op->num_sge ? !memcmp(buf + RECV, buf + SRC, len) : 1;
	printf(" data %s\n", ok ? "ok" : "WRONG");
}

/* 20 rounds of 12 sends with immediate data, polled in batches of 5. */
static void batches(void)
{
	enum { ROUNDS = 20, PER = 12 };
	struct ibv_wc wc[PER];
	int round, i, bad = 0, sends = 0, recvs = 0, rc;

	for (round = 0; round < ROUNDS; round++) {
		for (i = 0; i < PER; i++)
			if ((rc = post_recv(round * PER + i, RECV + 64 * i, 64)))
				printf("  round %d post_recv %s\n", round, E(rc)), bad++;
		for (i = 0; i < PER; i++) {
			struct ibv_sge sge = { .addr = (uintptr_t)(buf + SRC + 64 * i), .length = 8,
					       .lkey = mr->lkey };
			struct ibv_send_wr wr = { .wr_id = round * PER + i, .sg_list = &sge, .num_sge = 1,
						  .opcode = IBV_WR_SEND_WITH_IMM,
						  .send_flags = IBV_SEND_SIGNALED },
				*badwr = NULL;

			wr.imm_data = htonl(round * 1000 + i);
			memset(buf + SRC + 64 * i, round * PER + i, 8);
			if ((rc = ibv_post_send(a, &wr, &badwr)))
				printf("  round %d post_send %s\n", round, E(rc)), bad++;
		}
		sends += wait_cq(scq, wc, PER, 5);
		for (i = 0; i < PER && i < sends - round * PER; i++)
			bad += wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != (uint64_t)(round * PER + i) ||
			       wc[i].opcode != IBV_WC_SEND;
		rc = wait_cq(rcq, wc, PER, 5);
		recvs += rc;
		for (i = 0; i < rc; i++) {
			char want[8];

			memset(want, round * PER + i, 8);
			bad += wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != (uint64_t)(round * PER + i) ||
			       wc[i].opcode != IBV_WC_RECV || wc[i].byte_len != 8 ||
			       !(wc[i].wc_flags & IBV_WC_WITH_IMM) ||
			       ntohl(wc[i].imm_data) != (uint32_t)(round * 1000 + i) ||
			       memcmp(buf + RECV + 64 * i, want, 8);
		}
	}
	printf("  batches: %d sends, %d receives, %d bad\n", sends, recvs, bad);
}

int main(int argc, char **argv)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_wc wc[4];
	int i;

	if (argc < 3 || !list)
		return 2;
	gid_index = atoi(argv[2]);
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		DIE("ibv_open_device");
	if (ibv_query_gid(ctx, 1, gid_index, &gid))
		DIE("ibv_query_gid");
	pd = ibv_alloc_pd(ctx);
	buf = calloc(1, LEN);
	if (!pd || !buf)
		DIE("setup");
	mr = ibv_reg_mr(pd, buf, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	scq = ibv_create_cq(ctx, 20, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 20, NULL, NULL, 0);
	if (!mr || !scq || !rcq)
		DIE("setup");
	a = rc_qp(scq, scq);
	b = rc_qp(rcq, rcq);
	up(a, b->qp_num);
	up(b, a->qp_num);

	printf("one of each:\n");
	for (i = 0; i < (int)(sizeof(ops) / sizeof(ops[0])); i++)
		one(i, &ops[i]);
	printf("batches across the end of the ring:\n");
	batches();
	printf("polls that need no array:\n");
	printf("  empty, NULL array: %d\n", ibv_poll_cq(rcq, 4, NULL));
	printf("  empty, no room: %d\n", ibv_poll_cq(rcq, 0, wc));
	printf("  empty, negative count: %d\n", ibv_poll_cq(rcq, -1, wc));

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("done\n");
	return 0;
}
