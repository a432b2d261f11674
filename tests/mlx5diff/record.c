/* Records what rdma-core's libmlx5 writes (issue 26 item 3): run on the simulated ConnectX
 * by scripts/mlx5diff-record.sh. For each QP and each list of send requests it prints the
 * requests, the basic blocks of the send ring libmlx5 wrote and its doorbell record; for each
 * chosen CQE it prints the 64 bytes put into the CQ and the ibv_wc libmlx5's poll made of it.
 * The QPs are in RTS towards a QP that does not exist; only the bytes
 * libmlx5 wrote are read, right after ibv_post_send returns. Format: see tests/mlx5diff.rs. */
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <unistd.h>

#define DIE(...) do { fprintf(stderr, "record: " __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } while (0)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_ah *ah;

struct q {
	const char *name;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct mlx5dv_qp dq;
	struct mlx5dv_cq dc;
	uint32_t max_post, got_inl, req[3], gen, wrap;
	const char *base;
	uint32_t uidx, ci, posted; /* posted: requests since the last retirement */
	uint16_t last_idx;         /* index of the last WQE posted */
	int type;
};

static void hex(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
}

static uint32_t dbrec(struct q *q) { return ntohl(q->dq.dbrec[1]); }

static void make_qp(struct q *q, const char *name, enum ibv_qp_type t, uint32_t wr, uint32_t sge, uint32_t inl, uint32_t uidx)
{
	q->name = name; q->type = t; q->uidx = uidx; q->posted = 0;
	q->req[0] = wr; q->req[1] = sge; q->req[2] = inl;
	if (!q->base) q->base = name;
	q->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!q->cq) DIE("ibv_create_cq");
	struct ibv_qp_init_attr a = { .send_cq = q->cq, .recv_cq = q->cq, .qp_type = t,
		.cap = { .max_send_wr = wr, .max_recv_wr = 4, .max_send_sge = sge, .max_recv_sge = 1, .max_inline_data = inl } };
	q->qp = ibv_create_qp(pd, &a);
	if (!q->qp) DIE("ibv_create_qp %s", name);
	/* libmlx5 posts only on a QP in RTS: RTS towards a QP number that does not exist (the
	 * simulated NIC executes the requests and fails them; it never writes the send ring) */
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111 };
	if (ibv_modify_qp(q->qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  (t == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)))
		DIE("ibv_modify_qp INIT %s", name);
	{
		union ibv_gid g; ibv_query_gid(ctx, 1, 3, &g);
		struct ibv_qp_attr r = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = 0xfffff0,
			.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
			.ah_attr = { .is_global = 1, .port_num = 1, .grh = { .dgid = g, .sgid_index = 3, .hop_limit = 1 } } };
		int e = ibv_modify_qp(q->qp, &r, IBV_QP_STATE | (t == IBV_QPT_RC ? IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0));
		struct ibv_qp_attr s2 = { .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1 };
		e |= ibv_modify_qp(q->qp, &s2, IBV_QP_STATE | IBV_QP_SQ_PSN | (t == IBV_QPT_RC ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC : 0));
		if (e) DIE("rts");
	}
	struct mlx5dv_obj o = { .qp = { q->qp, &q->dq }, .cq = { q->cq, &q->dc } };
	if (mlx5dv_init_obj(&o, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ)) DIE("mlx5dv_init_obj");
	if (q->dq.sq.stride != 64) DIE("stride %u", q->dq.sq.stride);
	/* the bytes libmlx5 leaves alone are seen to stay: the replay fills the same */
	memset(q->dq.sq.buf, 0xee, (size_t)q->dq.sq.wqe_cnt * 64);
	q->max_post = a.cap.max_send_wr;
	q->got_inl = a.cap.max_inline_data;
	printf("qp %s %s req %u %u %u qpn %u uidx %u wqe_cnt %u got %u %u %u bf %u cqe_cnt %u\n", name,
	       t == IBV_QPT_RC ? "RC" : "UD", wr, sge, inl, q->qp->qp_num, uidx, q->dq.sq.wqe_cnt,
	       a.cap.max_send_wr, a.cap.max_send_sge, a.cap.max_inline_data, q->dq.bf.size, q->dc.cqe_cnt);
}

/* puts the 64 CQE bytes at the consumer index (owner bit of this pass) and polls: twice, into
 * an ibv_wc filled with 0x00 and then one filled with 0xff, so that fields libmlx5 leaves
 * unwritten show as differing; prints the CQE and both ibv_wc */
static void put32(uint8_t *c, int off, uint32_t v) { v = htonl(v); memcpy(c + off, &v, 4); }
static void put16(uint8_t *c, int off, uint16_t v) { v = htons(v); memcpy(c + off, &v, 2); }

static void cqe(struct q *q, uint8_t c[64])
{
	printf("cqe ");
	for (int pass = 0; pass < 2; pass++) {
		uint8_t *slot = (uint8_t *)q->dc.buf + (size_t)(q->ci & (q->dc.cqe_cnt - 1)) * q->dc.cqe_size + q->dc.cqe_size - 64;
		c[63] = (c[63] & 0xfe) | !!(q->ci & q->dc.cqe_cnt);
		memcpy(slot, c, 63);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		slot[63] = c[63];
		struct ibv_wc wc;
		memset(&wc, pass ? 0xff : 0x00, sizeof(wc));
		int n = ibv_poll_cq(q->cq, 1, &wc);
		if (n != 1) DIE("ibv_poll_cq: %d", n);
		/* wr_id comes from the QP's wrid table, not the CQE (nothing was posted): not recorded */
		wc.wr_id = 0;
		if (!pass) { hex(c, 64); printf(" wc0 "); } else printf(" wc1 ");
		hex(&wc, sizeof(wc));
		q->ci++;
	}
	printf("\n");
}

static void cqes(struct q *q)
{
	const uint8_t req_ops[] = { 0x08, 0x09, 0x0a, 0x0b, 0x01, 0x10, 0x11, 0x12 };
	const uint8_t synd[] = { 0x01, 0x02, 0x04, 0x05, 0x06, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x22, 0x99 };
	for (unsigned k = 0; k < sizeof req_ops; k++) {
		uint8_t c[64] = { 0 };
		put32(c, 32, q->uidx);
		put32(c, 44, 0x1234 + k);
		put32(c, 56, (uint32_t)req_ops[k] << 24 | q->qp->qp_num);
		put16(c, 60, (uint16_t)k);
		c[63] = 0 << 4; /* MLX5_CQE_REQ */
		cqe(q, c);
	}
	for (uint8_t op = 1; op <= 4; op++)
		for (unsigned v = 0; v < 4; v++) {
			uint8_t c[64] = { 0 };
			c[19] = v & 1 ? 0x85 : 0x03;                   /* ml_path */
			put16(c, 22, 0x1200 + v);                      /* slid */
			put32(c, 24, (v & 3) << 28 | (v * 5 & 0xf) << 24 | (0xabcde + v)); /* g, sl, src_qp */
			put32(c, 32, q->uidx);
			put32(c, 36, 0x01020304 + 0x01010101 * v);     /* imm / inval rkey / pkey */
			put32(c, 44, 0x40 * v + 1);                    /* byte_cnt */
			put32(c, 56, q->qp->qp_num);
			c[63] = op << 4;
			cqe(q, c);
		}
	for (int resp = 0; resp < 2; resp++)
		for (unsigned k = 0; k < sizeof synd; k++) {
			uint8_t c[64] = { 0 };
			put32(c, 32, q->uidx);
			c[54] = 0x40 + k; /* vendor_err_synd */
			c[55] = synd[k];
			put32(c, 56, (uint32_t)0x0a << 24 | q->qp->qp_num);
			put16(c, 60, (uint16_t)k);
			c[63] = (resp ? 14 : 13) << 4;
			cqe(q, c);
		}
}

/* a requester CQE for the last WQE posted: libmlx5 retires it and every WQE before it */
static void retire(struct q *q)
{
	uint8_t c[64] = { 0 };
	put32(c, 32, q->uidx);
	put32(c, 56, (uint32_t)0x0a << 24 | q->qp->qp_num);
	put16(c, 60, q->last_idx);
	c[63] = 0 << 4;
	cqe(q, c);
	printf("retire %s %u\n", q->name, q->last_idx);
	q->posted = 0;
}

static const char *opname[] = { [IBV_WR_RDMA_WRITE] = "RDMA_WRITE", [IBV_WR_RDMA_WRITE_WITH_IMM] = "RDMA_WRITE_WITH_IMM",
	[IBV_WR_SEND] = "SEND", [IBV_WR_SEND_WITH_IMM] = "SEND_WITH_IMM", [IBV_WR_RDMA_READ] = "RDMA_READ",
	[IBV_WR_ATOMIC_CMP_AND_SWP] = "ATOMIC_CMP_AND_SWP", [IBV_WR_ATOMIC_FETCH_AND_ADD] = "ATOMIC_FETCH_AND_ADD",
	[IBV_WR_SEND_WITH_INV] = "SEND_WITH_INV" };
__attribute__((unused)) static const uint8_t mlx5_op[] = { [IBV_WR_RDMA_WRITE] = 0x08, [IBV_WR_RDMA_WRITE_WITH_IMM] = 0x09, [IBV_WR_SEND] = 0x0a,
	[IBV_WR_SEND_WITH_IMM] = 0x0b, [IBV_WR_RDMA_READ] = 0x10, [IBV_WR_ATOMIC_CMP_AND_SWP] = 0x11,
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = 0x12, [IBV_WR_SEND_WITH_INV] = 0x01 };

static uint8_t inl_bufs[64][1024]; /* one per request of a list */
static struct ibv_sge sges[64][16];

/* posts `n` requests of `op` with `nsge` SGEs (or `inl` inline bytes if >= 0), flags */
static void post(struct q *q, const char *case_name, int op, int n, int nsge, int inl, unsigned flags)
{
	if ((uint32_t)n > q->max_post)
		return;
	if (q->posted + n > q->max_post && q->wrap)
		retire(q);
	if (q->posted + n > q->max_post) {
		/* no completion retires what was posted: a fresh QP of the same request */
		char nm[64];
		snprintf(nm, sizeof nm, "%s.%u", q->base, ++q->gen);
		make_qp(q, strdup(nm), q->type, q->req[0], q->req[1], q->req[2], 0);
	}
	struct ibv_send_wr wr[64];
	memset(wr, 0, sizeof(wr));
	printf("list %s %s\n", q->name, case_name);
	for (int i = 0; i < n; i++) {
		struct ibv_send_wr *w = &wr[i];
		int atomic = op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
		static uint64_t wr_id = 100;
		w->wr_id = wr_id++;
		w->next = i + 1 < n ? &wr[i + 1] : NULL;
		w->opcode = op;
		w->send_flags = flags | (inl >= 0 ? IBV_SEND_INLINE : 0);
		w->imm_data = htonl(0x01020304 + i); /* for INV: invalidate_rkey aliases it */
		if (op == IBV_WR_SEND_WITH_INV) w->invalidate_rkey = 0x5566770 + i;
		if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			w->wr.atomic.remote_addr = 0x7000 + 8 * i; w->wr.atomic.rkey = 0x99a0 + i;
			w->wr.atomic.compare_add = 0x1111222233334444ull + i; w->wr.atomic.swap = 0x5555666677778888ull;
		} else {
			w->wr.rdma.remote_addr = 0xdeadbeef00001000ull + 0x100 * i; w->wr.rdma.rkey = 0x4321 + i;
		}
		if (q->type == IBV_QPT_UD) {
			w->wr.ud.ah = ah; w->wr.ud.remote_qpn = 0xabcde + i; w->wr.ud.remote_qkey = 0x11111111 + i;
		}
		int ns = nsge;
		if (inl >= 0) {
			/* one SGE, or two halves when long enough (libmlx5 concatenates them) */
			uint8_t *inl_data = inl_bufs[i];
			for (int k = 0; k < inl; k++) inl_data[k] = (uint8_t)(k * 7 + i + 1);
			if (inl >= 8 && q->req[1] >= 2) {
				sges[i][0] = (struct ibv_sge){ (uintptr_t)inl_data, inl / 2, 0 };
				sges[i][1] = (struct ibv_sge){ (uintptr_t)inl_data + inl / 2, inl - inl / 2, 0 };
				ns = 2;
			} else {
				sges[i][0] = (struct ibv_sge){ (uintptr_t)inl_data, inl, 0 };
				ns = 1;
			}
		} else {
			for (int k = 0; k < nsge; k++)
				sges[i][k] = (struct ibv_sge){ 0x1122334455660000ull + 0x1000 * k + i, k == 1 && nsge > 2 ? 0 : 0x100 + k, 0x0a0b0c00 + k };
		}
		w->sg_list = sges[i];
		w->num_sge = ns;
		/* (wr.rdma, wr.atomic and wr.ud share a union: UD prints zeros for the others) */
		int u = q->type == IBV_QPT_UD;
		printf("wr %llu %s %u imm %u inv %u raddr %llu rkey %u cmp %llu swap %llu ud %u %u", (unsigned long long)w->wr_id,
		       opname[op], flags, ntohl(w->imm_data), w->invalidate_rkey,
		       u ? 0ull : (unsigned long long)(atomic ? w->wr.atomic.remote_addr : w->wr.rdma.remote_addr),
		       u ? 0 : atomic ? w->wr.atomic.rkey : w->wr.rdma.rkey,
		       u ? 0ull : (unsigned long long)w->wr.atomic.compare_add, u ? 0ull : (unsigned long long)w->wr.atomic.swap,
		       q->type == IBV_QPT_UD ? w->wr.ud.remote_qpn : 0, q->type == IBV_QPT_UD ? w->wr.ud.remote_qkey : 0);
		if (inl >= 0) {
			printf(" inline ");
			if (inl) hex(inl_bufs[i], inl); else printf("-");
		} else {
			printf(" sges");
			for (int k = 0; k < nsge; k++)
				printf(" %llu:%u:%u", (unsigned long long)sges[i][k].addr, sges[i][k].length, sges[i][k].lkey);
		}
		printf("\n");
	}
	uint32_t before = dbrec(q);
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(q->qp, wr, &bad);
	uint32_t after = dbrec(q);
	/* which doorbell libmlx5 rang (BlueFlame copy or 8-byte store) is in the daemon's trace,
	 * keyed by QP number and the last WQE's index: the script adds it as "ring BF|DB" */
	printf("end rc %d bad %d dbrec %08x", rc, bad ? (int)(bad - wr) : -1, after);
	if (rc == 0) {
		int last = before;
		for (uint32_t i = before; i != (after & 0xffff); i = (i + 1) & 0xffff) {
			uint8_t *b = (uint8_t *)q->dq.sq.buf + 64 * (i & (q->dq.sq.wqe_cnt - 1));
			if ((uint16_t)(b[1] << 8 | b[2]) == (uint16_t)i && (b[4] << 16 | b[5] << 8 | b[6]) == (int)q->qp->qp_num) last = i;
		}
		printf(" doorbell %#x %d", q->qp->qp_num, last);
		usleep(3000); /* the daemon scans the UAR before the register half is used again */
	}
	printf("\n");
	for (uint32_t i = before; i != (after & 0xffff); i = (i + 1) & 0xffff) {
		uint32_t s = i & (q->dq.sq.wqe_cnt - 1);
		printf("bb %u ", s); hex((uint8_t *)q->dq.sq.buf + 64 * s, 64); printf("\n");
	}
	if (rc != 0) {
		/* libmlx5 may have written part of the refused request (it copies inline data before
		 * it finds the size over the limit): the ring as it left it, a WQE's worth of blocks */
		for (uint32_t i = before; i != ((before + 4) & 0xffff) && i - before < q->dq.sq.wqe_cnt; i = (i + 1) & 0xffff) {
			uint32_t s = i & (q->dq.sq.wqe_cnt - 1);
			printf("left %u ", s); hex((uint8_t *)q->dq.sq.buf + 64 * s, 64); printf("\n");
		}
	}
	if (rc == 0) {
		/* the index of the last WQE: its ctrl segment's wqe_index field */
		int idx = before;
		for (uint32_t i = before; i != (after & 0xffff); i = (i + 1) & 0xffff) {
			uint8_t *b = (uint8_t *)q->dq.sq.buf + 64 * (i & (q->dq.sq.wqe_cnt - 1));
			uint16_t wi = (uint16_t)(b[1] << 8 | b[2]);
			if (wi == (uint16_t)i && b[4] == (q->qp->qp_num >> 16 & 0xff)) idx = i;
		}
		q->last_idx = (uint16_t)idx;
		q->posted += n;
	}
}

int main(void)
{
	int num;
	struct ibv_device **l = ibv_get_device_list(&num);
	if (!l || !num) DIE("no device");
	ctx = ibv_open_device(l[0]);
	if (!ctx) DIE("ibv_open_device");
	pd = ibv_alloc_pd(ctx);
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, 3, &gid)) DIE("ibv_query_gid");
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1, .sl = 3,
		.grh = { .dgid = gid, .sgid_index = 3, .hop_limit = 64, .traffic_class = 0x28, .flow_label = 0x12345 } };
	ah = ibv_create_ah(pd, &aa);
	if (!ah) DIE("ibv_create_ah");
	printf("ah sl 3 sgid_index 3 hop_limit 64 traffic_class 40 flow_label 74565 dgid ");
	hex(gid.raw, 16); printf("\n");

	/* CQEs first: the first QP libmlx5 makes has user index 0 (mlx5_store_uidx); it posts
	 * nothing, so the simulated NIC never writes its CQ */
	static struct q cq_qp;
	make_qp(&cq_qp, "cqe_qp", IBV_QPT_RC, 4, 1, 0, 0);
	cqes(&cq_qp);
	/* wrapping the ring: a UD QP (user index 1) sending unsignaled inline data to a QP that
	 * does not exist (the simulated NIC drops it and writes no CQE); requester CQEs put into
	 * its CQ retire what was posted, so libmlx5 writes on past the ring's end */
	char name[128];
	static struct q wq;
	make_qp(&wq, "ud_wrap", IBV_QPT_UD, 4, 1, 60, 1);
	wq.wrap = 1;
	for (unsigned k = 0; k < wq.dq.sq.wqe_cnt * 3; k++) {
		const int sizes[] = { 0, 60, 17, 44, 1, 33, 60, 12 };
		snprintf(name, sizeof name, "wrap%u_inline%d", k, sizes[k % 8]);
		post(&wq, name, k % 3 ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM, 1 + (k % 5 == 4), 0, sizes[k % 8], k % 7 ? 0 : IBV_SEND_SOLICITED);
	}
	static struct q qs[4];
	make_qp(&qs[0], "rc_16_2_0", IBV_QPT_RC, 16, 2, 0, 2);
	make_qp(&qs[1], "rc_8_4_128", IBV_QPT_RC, 8, 4, 128, 1);
	make_qp(&qs[2], "rc_4_1_60", IBV_QPT_RC, 4, 1, 60, 2);
	make_qp(&qs[3], "ud_8_2_64", IBV_QPT_UD, 8, 2, 64, 3);
	const int rc_ops[] = { IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_INV, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD };
	const unsigned flagsets[] = { 0, IBV_SEND_SIGNALED, IBV_SEND_FENCE, IBV_SEND_SOLICITED,
		IBV_SEND_SIGNALED | IBV_SEND_FENCE | IBV_SEND_SOLICITED };
	for (int qi = 0; qi < 4; qi++) {
		struct q *q = &qs[qi];
		int nops = q->type == IBV_QPT_UD ? 2 : 8;
		uint32_t max_sge = qi == 0 ? 2 : qi == 1 ? 4 : qi == 2 ? 1 : 2;
		int max_inl = (int)q->got_inl; /* what libmlx5 reported: up to it, and one over */
		for (int oi = 0; oi < nops; oi++) {
			int op = rc_ops[oi];
			int atomic = op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
			for (uint32_t s = atomic ? 1 : 0; s <= (atomic ? 1 : max_sge); s++) {
				snprintf(name, sizeof name, "%s_sge%u", opname[op], s);
				post(q, name, op, 1, s, -1, IBV_SEND_SIGNALED);
			}
			for (unsigned f = 0; f < sizeof flagsets / sizeof *flagsets; f++) {
				snprintf(name, sizeof name, "%s_flags%u", opname[op], flagsets[f]);
				post(q, name, op, 1, atomic ? 1 : max_sge, -1, flagsets[f]);
			}
			if (!atomic && op != IBV_WR_RDMA_READ && max_inl > 0) {
				const int sizes[] = { 0, 1, 4, 12, 13, 16, 17, 44, 45, 60, 64, 100, 128, max_inl };
				for (unsigned k = 0; k < sizeof sizes / sizeof *sizes; k++) {
					if (sizes[k] > max_inl || (k + 1 < sizeof sizes / sizeof *sizes && sizes[k] == max_inl)) continue;
					snprintf(name, sizeof name, "%s_inline%d", opname[op], sizes[k]);
					post(q, name, op, 1, 0, sizes[k], IBV_SEND_SIGNALED);
				}
				snprintf(name, sizeof name, "%s_inline_over", opname[op]);
				post(q, name, op, 1, 0, max_inl + 1, IBV_SEND_SIGNALED);
			}
			snprintf(name, sizeof name, "%s_list3", opname[op]);
			post(q, name, op, 3, atomic ? 1 : max_sge, -1, 0);
		}
		/* too many SGEs: refused */
		snprintf(name, sizeof name, "SEND_sge_over");
		post(q, name, IBV_WR_SEND, 1, max_sge + 1, -1, 0);
	}
	return 0;
}
