/* ops_bench: rdma-core's libibverbs, one verb at a time, for instruction counts.
 *
 * Opens one device (rxe0), makes two RC QPs on it connected to each other (A -> B)
 * (with -c IP: connected by librdmacm on that address, as iWARP/siw0 needs),
 * and calls each measured verb through a noinline wrapper so that
 *   valgrind --tool=callgrind --toggle-collect='bench_*' ops_bench ...
 * collects only the userspace instructions spent inside the verb:
 *   bench_post_send      ibv_post_send of one 8-byte RDMA WRITE (list of 1) on A
 *   bench_post_send_inline  the same with the 8 bytes inline (IBV_SEND_INLINE; with -i N,
 *                        N >= 8, the QPs' max_inline_data)
 *   bench_post_recv      ibv_post_recv of one WR (one 8-byte SGE) on B
 *   bench_poll_cq        ibv_poll_cq for a batch of N completions already in the CQ
 *   bench_poll_cq_empty  ibv_poll_cq on an empty CQ
 * Everything else (draining, refilling, sleeping) happens outside the wrappers.
 * The Rust twin is benches/ops_bench.rs; keep the two doing the same operations.
 *
 * Output: one line per operation,
 *   ops_bench impl=c op=<name> calls=<n> items=<n> ns_per_call=<wall, informative>
 * (items = completions returned, for poll_cq). Exit status 0 only if every
 * operation succeeded (short poll batches are counted and only warned about).
 *
 * usage: ops_bench [-d dev] [-x gid_index] [-c ip] [-i max_inline] [-n post_iters] [-b batch] [-r poll_rounds]
 * build: gcc -O2 -g -o ops_bench ops_bench.c -libverbs -lrdmacm
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SQ_DEPTH 64
#define RQ_DEPTH 256
#define SIGNAL_EVERY 16
#define MAX_BATCH 64
#define MSG 8

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the measured calls ------------------------------------------------------------ */

__attribute__((noinline)) int bench_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	return ibv_post_send(qp, wr, &bad);
}

__attribute__((noinline)) int bench_post_send_inline(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	return ibv_post_send(qp, wr, &bad);
}

__attribute__((noinline)) int bench_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr)
{
	struct ibv_recv_wr *bad;
	return ibv_post_recv(qp, wr, &bad);
}

__attribute__((noinline)) int bench_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, n, wc);
}

__attribute__((noinline)) int bench_poll_cq_empty(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, n, wc);
}

/* ---- setup --------------------------------------------------------------------------- */

struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	char *buf;
	size_t len;
	struct ibv_cq *scq, *rcq, *ocq; /* A's send CQ, B's recv CQ, the other two */
	struct ibv_qp *a, *b;
	union ibv_gid gid;
	int gid_index;
	uint32_t max_inline; /* -i: the QPs' max_inline_data */
};

static void to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr at = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify_qp INIT");
}

static void to_rtr_rts(struct env *e, struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr at = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest,
		.rq_psn = 0x1234,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.grh = { .dgid = e->gid, .sgid_index = (uint8_t)e->gid_index, .hop_limit = 1 },
			.port_num = 1,
		},
	};
	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify_qp RTR");
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 0x1234;
	at.timeout = 14;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify_qp RTS");
}

/* The resources on ctx (after the device is known). */
static void resources(struct env *e)
{
	e->pd = ibv_alloc_pd(e->ctx);
	if (!e->pd)
		die("ibv_alloc_pd");
	e->len = 1 << 16;
	e->buf = aligned_alloc(4096, e->len);
	memset(e->buf, 0x5a, e->len);
	e->mr = ibv_reg_mr(e->pd, e->buf, e->len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!e->mr)
		die("ibv_reg_mr");
	e->scq = ibv_create_cq(e->ctx, 512, NULL, NULL, 0);
	e->rcq = ibv_create_cq(e->ctx, 512, NULL, NULL, 0);
	e->ocq = ibv_create_cq(e->ctx, 512, NULL, NULL, 0);
	if (!e->scq || !e->rcq || !e->ocq)
		die("ibv_create_cq");
}

static struct ibv_qp *make_qp(struct env *e, struct ibv_cq *scq, struct ibv_cq *rcq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = { .max_send_wr = SQ_DEPTH, .max_recv_wr = RQ_DEPTH, .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = e->max_inline },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);
	if (!qp)
		die("ibv_create_qp");
	to_init(qp);
	return qp;
}

static void setup(struct env *e, const char *name)
{
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list");
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			e->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!e->ctx) {
		fprintf(stderr, "ops_bench: cannot open device %s\n", name);
		exit(1);
	}
	if (ibv_query_gid(e->ctx, 1, e->gid_index, &e->gid))
		die("ibv_query_gid");
	resources(e);
	e->a = make_qp(e, e->scq, e->ocq);
	e->b = make_qp(e, e->ocq, e->rcq);
	to_rtr_rts(e, e->a, e->b->qp_num);
	to_rtr_rts(e, e->b, e->a->qp_num);
}

static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != type) {
		fprintf(stderr, "ops_bench: got %s, wanted %s\n", rdma_event_str(ev->event), rdma_event_str(type));
		exit(1);
	}
	return ev;
}

/* A (client) and B (accepted) connected by librdmacm on ip:port: the way iWARP QPs reach RTS. */
static void setup_cm(struct env *e, const char *ip)
{
	struct rdma_event_channel *chs = rdma_create_event_channel(), *chc = rdma_create_event_channel();
	struct rdma_cm_id *listener, *client, *server;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(7471) };
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 7 };
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = SQ_DEPTH, .max_recv_wr = RQ_DEPTH, .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = e->max_inline },
		.qp_type = IBV_QPT_RC,
	};
	if (!chs || !chc || inet_pton(AF_INET, ip, &sin.sin_addr) != 1)
		die("rdma_create_event_channel / address");
	if (rdma_create_id(chs, &listener, NULL, RDMA_PS_TCP) || rdma_create_id(chc, &client, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_bind_addr(listener, (struct sockaddr *)&sin) || rdma_listen(listener, 1))
		die("rdma_bind_addr/rdma_listen");
	if (rdma_resolve_addr(client, NULL, (struct sockaddr *)&sin, 2000))
		die("rdma_resolve_addr");
	rdma_ack_cm_event(expect(chc, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(client, 2000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(expect(chc, RDMA_CM_EVENT_ROUTE_RESOLVED));
	e->ctx = client->verbs;
	resources(e);
	ia.send_cq = e->scq;
	ia.recv_cq = e->ocq;
	if (rdma_create_qp(client, e->pd, &ia))
		die("rdma_create_qp A");
	e->a = client->qp;
	if (rdma_connect(client, &cp))
		die("rdma_connect");
	ev = expect(chs, RDMA_CM_EVENT_CONNECT_REQUEST);
	server = ev->id;
	rdma_ack_cm_event(ev);
	if (server->verbs != e->ctx) {
		fprintf(stderr, "ops_bench: the request arrived on another context\n");
		exit(1);
	}
	ia.send_cq = e->ocq;
	ia.recv_cq = e->rcq;
	if (rdma_create_qp(server, e->pd, &ia))
		die("rdma_create_qp B");
	e->b = server->qp;
	if (rdma_accept(server, &cp))
		die("rdma_accept");
	rdma_ack_cm_event(expect(chc, RDMA_CM_EVENT_ESTABLISHED));
	rdma_ack_cm_event(expect(chs, RDMA_CM_EVENT_ESTABLISHED));
	/* the ids and channels stay for the process (the connection with them) */
}

/* Poll (unmeasured) until `want` completions came from `cq`; all must be successful. */
static void drain(struct ibv_cq *cq, int want)
{
	struct ibv_wc wc[16];
	uint64_t t0 = now_ns();
	while (want > 0) {
		int k = ibv_poll_cq(cq, want < 16 ? want : 16, wc);
		if (k < 0)
			die("ibv_poll_cq");
		for (int i = 0; i < k; i++)
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "ops_bench: completion error %s (wr_id %llu)\n",
					ibv_wc_status_str(wc[i].status), (unsigned long long)wc[i].wr_id);
				exit(1);
			}
		want -= k;
		if (now_ns() - t0 > 30ull * 1000000000u) {
			fprintf(stderr, "ops_bench: timed out waiting for completions\n");
			exit(1);
		}
	}
}

static void report(const char *op, long calls, long items, uint64_t ns)
{
	printf("ops_bench impl=c op=%s calls=%ld items=%ld ns_per_call=%.0f\n", op, calls, items,
	       calls ? (double)ns / (double)calls : 0.0);
}

int main(int argc, char **argv)
{
	struct env e = { 0 };
	const char *dev = getenv("VERBS_TEST_RXE") ? getenv("VERBS_TEST_RXE") : "rxe0";
	const char *cm_ip = NULL;
	long iters = 2000, rounds = 50;
	int batch = 16, opt;
	e.gid_index = getenv("VM_RXE_GID_INDEX") ? atoi(getenv("VM_RXE_GID_INDEX")) : 1;
	while ((opt = getopt(argc, argv, "d:x:c:i:n:b:r:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'x': e.gid_index = atoi(optarg); break;
		case 'c': cm_ip = optarg; break;
		case 'i': e.max_inline = (uint32_t)atoi(optarg); break;
		case 'n': iters = atol(optarg); break;
		case 'b': batch = atoi(optarg); break;
		case 'r': rounds = atol(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-d dev] [-x gid_index] [-c ip] [-i max_inline] [-n post_iters] [-b batch] [-r poll_rounds]\n",
				argv[0]);
			return 2;
		}
	}
	if (batch < 1 || batch > MAX_BATCH || batch > SIGNAL_EVERY * 4) {
		fprintf(stderr, "ops_bench: batch must be 1..%d\n", MAX_BATCH);
		return 2;
	}
	if (cm_ip)
		setup_cm(&e, cm_ip);
	else
		setup(&e, dev);
	char *local = e.buf, *remote = e.buf + 4096;
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = MSG, .lkey = e.mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { .remote_addr = (uintptr_t)remote, .rkey = e.mr->rkey },
	};
	uint64_t t, ns;

	/* post_send: 8-byte RDMA WRITEs, every SIGNAL_EVERY-th signaled and waited for. */
	ns = 0;
	for (long i = 0; i < iters; i++) {
		wr.wr_id = (uint64_t)i;
		wr.send_flags = (i % SIGNAL_EVERY == SIGNAL_EVERY - 1) ? IBV_SEND_SIGNALED : 0;
		t = now_ns();
		if (bench_post_send(e.a, &wr))
			die("ibv_post_send");
		ns += now_ns() - t;
		if (wr.send_flags)
			drain(e.scq, 1);
	}
	/* the tail: one signaled WR so that the SQ is empty again (not measured) */
	wr.send_flags = IBV_SEND_SIGNALED;
	{
		struct ibv_send_wr *bad;
		if (ibv_post_send(e.a, &wr, &bad))
			die("ibv_post_send");
	}
	drain(e.scq, 1);
	report("post_send", iters, iters, ns);

	/* post_send_inline: the same WRITEs with the 8 bytes copied into the WQE. */
	if (e.max_inline >= MSG) {
		uint64_t data = 0x5a5a5a5a5a5a5a5aull;
		struct ibv_sge isge = { .addr = (uintptr_t)&data, .length = MSG };
		struct ibv_send_wr iwr = wr;
		iwr.sg_list = &isge;
		ns = 0;
		for (long i = 0; i < iters; i++) {
			iwr.wr_id = (uint64_t)i;
			iwr.send_flags = IBV_SEND_INLINE |
					 ((i % SIGNAL_EVERY == SIGNAL_EVERY - 1) ? IBV_SEND_SIGNALED : 0);
			t = now_ns();
			if (bench_post_send_inline(e.a, &iwr))
				die("ibv_post_send inline");
			ns += now_ns() - t;
			if (iwr.send_flags & IBV_SEND_SIGNALED)
				drain(e.scq, 1);
		}
		iwr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
		{
			struct ibv_send_wr *bad;
			if (ibv_post_send(e.a, &iwr, &bad))
				die("ibv_post_send inline");
		}
		drain(e.scq, 1);
		report("post_send_inline", iters, iters, ns);
	}

	/* post_recv: fill B's RQ one WR at a time, then consume with SENDs from A. */
	struct ibv_sge rsge = { .addr = (uintptr_t)(e.buf + 8192), .length = MSG, .lkey = e.mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 };
	struct ibv_send_wr swr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND };
	long done = 0;
	ns = 0;
	while (done < iters) {
		long chunk = iters - done < RQ_DEPTH / 2 ? iters - done : RQ_DEPTH / 2;
		for (long i = 0; i < chunk; i++) {
			rwr.wr_id = (uint64_t)(done + i);
			t = now_ns();
			if (bench_post_recv(e.b, &rwr))
				die("ibv_post_recv");
			ns += now_ns() - t;
		}
		for (long i = 0; i < chunk; i++) {
			struct ibv_send_wr *bad;
			swr.wr_id = (uint64_t)i;
			swr.send_flags = (i % SIGNAL_EVERY == SIGNAL_EVERY - 1 || i == chunk - 1) ? IBV_SEND_SIGNALED : 0;
			if (ibv_post_send(e.a, &swr, &bad))
				die("ibv_post_send SEND");
			if (swr.send_flags)
				drain(e.scq, 1);
		}
		drain(e.rcq, (int)chunk);
		done += chunk;
	}
	report("post_recv", iters, iters, ns);

	/* poll_cq: `batch` signaled WRITEs complete, then one poll takes them all. */
	struct ibv_wc wc[MAX_BATCH];
	long got = 0, short_batches = 0;
	useconds_t wait_us = 2000;
	ns = 0;
	for (long r = 0; r < rounds; r++) {
		wr.send_flags = IBV_SEND_SIGNALED;
		for (int i = 0; i < batch; i++) {
			struct ibv_send_wr *bad;
			wr.wr_id = (uint64_t)i;
			if (ibv_post_send(e.a, &wr, &bad))
				die("ibv_post_send");
		}
		usleep(wait_us); /* let the device finish all of them */
		t = now_ns();
		int k = bench_poll_cq(e.scq, batch, wc);
		ns += now_ns() - t;
		if (k < 0)
			die("ibv_poll_cq");
		for (int i = 0; i < k; i++)
			if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != (uint64_t)i) {
				fprintf(stderr, "ops_bench: bad completion %d: %s\n", i, ibv_wc_status_str(wc[i].status));
				return 1;
			}
		got += k;
		if (k < batch) {
			short_batches++;
			wait_us *= 2;
			drain(e.scq, batch - k);
		}
	}
	report("poll_cq", rounds, got, ns);
	printf("ops_bench impl=c op=poll_cq_batch batch=%d short_batches=%ld\n", batch, short_batches);

	/* poll_cq on an empty CQ */
	ns = 0;
	long nonzero = 0;
	for (long i = 0; i < iters; i++) {
		t = now_ns();
		int k = bench_poll_cq_empty(e.rcq, batch, wc);
		ns += now_ns() - t;
		if (k != 0)
			nonzero++;
	}
	report("poll_cq_empty", iters, 0, ns);

	if (!cm_ip) { /* with -c the ids own the QPs; the process exit tears down the rest */
		ibv_destroy_qp(e.a);
		ibv_destroy_qp(e.b);
		ibv_destroy_cq(e.scq);
		ibv_destroy_cq(e.rcq);
		ibv_destroy_cq(e.ocq);
		ibv_dereg_mr(e.mr);
		ibv_dealloc_pd(e.pd);
		ibv_close_device(e.ctx);
		free(e.buf);
	}
	if (short_batches)
		fprintf(stderr, "ops_bench: warning: %ld short poll batches (the device was slower than the wait)\n",
			short_batches);
	if (nonzero) {
		fprintf(stderr, "ops_bench: %ld polls of the empty CQ returned completions\n", nonzero);
		return 1;
	}
	return 0;
}
