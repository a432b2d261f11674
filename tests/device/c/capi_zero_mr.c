/* Zero-length memory regions (issue 29): rdma-core hands a 0-byte
 * registration to the kernel, which judges it by its address (rxe pins
 * the page holding an address inside a page, refuses one at a page start;
 * siw refuses every one). On rxe, zero-byte SEND, RDMA WRITE and RDMA
 * READ from and to a 0-byte region succeed; one byte through it is a
 * protection error. Run by tests/device/capi.rs on rdma-core's libibverbs
 * and on ours: the outputs must be identical. Prints values and errno
 * names, never addresses or keys.
 * Usage: capi_zero_mr DEVICE GID_INDEX */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

#include "common.h"


static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static int gid_index;
static union ibv_gid gid;

static struct ibv_qp *rc_qp(void)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &ia);
}

static int up(struct ibv_qp *qp, uint32_t remote)
{
	return qp_up(qp, remote, 0, &gid, gid_index);
}

/* Waits (up to a minute) for `want` completions, prints them by wr_id. */
static void drain(const char *what, int want)
{
	struct ibv_wc wc[8], t;
	time_t end = time(NULL) + 60;
	int got = 0, n, i, j;

	while (got < want && time(NULL) < end) {
		n = ibv_poll_cq(cq, want - got, wc + got);
		got += n > 0 ? n : 0;
	}
	for (i = 0; i < got; i++)
		for (j = i + 1; j < got; j++)
			if (wc[j].wr_id < wc[i].wr_id) {
				t = wc[i];
				wc[i] = wc[j];
				wc[j] = t;
			}
	printf("%s:", what);
	for (i = 0; i < got; i++)
		printf(" [%llu %s len %u]", (unsigned long long)wc[i].wr_id, ibv_wc_status_str(wc[i].status),
		       wc[i].opcode & IBV_WC_RECV ? wc[i].byte_len : 0);
	printf("%s\n", got < want ? " (missing)" : "");
}

static int post(struct ibv_qp *qp, uint64_t id, enum ibv_wr_opcode op, struct ibv_mr *mr, uint32_t len,
		struct ibv_mr *remote, uint64_t off)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)remote->addr + off;
	wr.wr.rdma.rkey = remote->rkey;
	return ibv_post_send(qp, &wr, &bad);
}

static int recv(struct ibv_qp *qp, uint64_t id, struct ibv_mr *mr, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

int main(int argc, char **argv)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_device **list;
	struct ibv_mr *z, *za, *zn, *big;
	struct ibv_qp *a, *b;
	char *buf;
	int n, i, rc;

	setlinebuf(stdout);
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (argc > 2 && !strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		printf("usage: capi_zero_mr DEVICE GID_INDEX\n");
		return 1;
	}
	gid_index = atoi(argv[2]);
	ibv_query_gid(ctx, 1, gid_index, &gid);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	buf = aligned_alloc(4096, 3 * 4096);
	memset(buf, 'x', 3 * 4096);
	big = ibv_reg_mr(pd, buf + 2 * 4096, 4096, access);
	printf("%s pd %s cq %s mr %s\n", argv[1], P(pd), P(cq), P(big));
	if (!pd || !cq || !big)
		return 1;

	/* inside a page, at a page start, NULL */
	z = ibv_reg_mr(pd, buf + 100, 0, access);
	printf("reg_mr(0 bytes inside a page) %s", P(z));
	if (z)
		printf(" length %zu addr same %d", z->length, z->addr == buf + 100);
	printf("\n");
	za = ibv_reg_mr(pd, buf + 4096, 0, access);
	printf("reg_mr(0 bytes at a page start) %s\n", P(za));
	zn = ibv_reg_mr(pd, NULL, 0, access);
	printf("reg_mr(0 bytes at NULL) %s\n", P(zn));
	if (za)
		ibv_dereg_mr(za);
	if (zn)
		ibv_dereg_mr(zn);
	if (!z || strncmp(argv[1], "rxe", 3)) {
		if (z)
			printf("dereg_mr %s\n", E(ibv_dereg_mr(z)));
		printf("done\n");
		return 0;
	}

	a = rc_qp();
	b = rc_qp();
	if (!a || !b)
		return 1;
	rc = up(a, b->qp_num);
	printf("connected %s %s\n", E(rc), E(up(b, a->qp_num)));
	/* zero bytes: send from it, receive into it, write to and read from it */
	printf("recv(into 0-byte mr) %s\n", E(recv(b, 1, z, 0)));
	printf("send(from 0-byte mr) %s\n", E(post(a, 2, IBV_WR_SEND, z, 0, z, 0)));
	drain("send 0 bytes", 2);
	printf("write(0 bytes to 0-byte mr) %s\n", E(post(a, 3, IBV_WR_RDMA_WRITE, z, 0, z, 0)));
	printf("read(0 bytes from 0-byte mr) %s\n", E(post(a, 4, IBV_WR_RDMA_READ, z, 0, z, 0)));
	printf("write(0 bytes from big to 0-byte mr) %s\n", E(post(a, 5, IBV_WR_RDMA_WRITE, big, 0, z, 0)));
	drain("zero-byte rdma", 3);
	/* one byte through it: the region covers none */
	printf("write(1 byte to 0-byte mr) %s\n", E(post(a, 6, IBV_WR_RDMA_WRITE, big, 1, z, 0)));
	drain("one byte past it", 1);
	printf("buffer untouched %d\n", buf[100] == 'x' && buf[99] == 'x' && buf[101] == 'x');

	printf("destroy %s", E(ibv_destroy_qp(a)));
	printf(" %s", E(ibv_destroy_qp(b)));
	printf(" mr %s", E(ibv_dereg_mr(z)));
	printf(" %s", E(ibv_dereg_mr(big)));
	printf(" cq %s", E(ibv_destroy_cq(cq)));
	printf(" pd %s\n", E(ibv_dealloc_pd(pd)));
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(buf);
	printf("done\n");
	return 0;
}
