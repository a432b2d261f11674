/* Memory regions and completion queues through the C ABI, run by
 * tests/device/capi.rs on rdma-core's libibverbs and on ours: the outputs
 * must be identical, except the lines starting with "  rereg" (librxe has
 * no rereg_mr; our rxe provider has). Prints values and errno names,
 * never addresses or keys. Usage: capi_mr_cq DEVICE */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#define E(rc) ((rc) ? strerror(errno) : "ok")
#define P(p) ((p) ? "ok" : strerror(errno))

static int cookie;

static void mr_part(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_pd *pd2)
{
	char *buf = aligned_alloc(4096, 3 * 4096);
	struct ibv_mr *mr, *mr2;
	int rc;

	mr = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ);
	printf("  reg_mr %s", P(mr));
	if (mr)
		printf(" addr %s length %zu pd %s context %s keys %s\n",
		       mr->addr == buf ? "same" : "other", mr->length,
		       mr->pd == pd ? "same" : "other", mr->context == ctx ? "same" : "other",
		       mr->lkey || mr->rkey ? "set" : "zero");
	else
		printf("\n");
	errno = 0;
	mr2 = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE);
	printf("  reg_mr(remote write without local write) %s\n", P(mr2));
	if (mr2)
		ibv_dereg_mr(mr2);
	mr2 = ibv_reg_mr_iova2(pd, buf + 4096, 4096, 0x10000, IBV_ACCESS_LOCAL_WRITE);
	printf("  reg_mr_iova2 %s length %zu\n", P(mr2), mr2 ? mr2->length : 0);
	errno = 0;
	rc = ibv_dealloc_pd(pd);
	printf("  dealloc_pd(with MRs) %d %s\n", rc, E(rc));
	if (mr) {
		rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE);
		printf("  rereg access %d %s\n", rc, E(rc));
		rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
		printf("  rereg pd %d %s pd %s\n", rc, E(rc), mr->pd == pd2 ? "new" : "old");
		errno = 0;
		rc = ibv_rereg_mr(mr, 0x40, NULL, NULL, 0, 0);
		printf("  rereg(bad flags) %d %s\n", rc, E(rc));
		errno = 0;
		rc = ibv_rereg_mr(mr, 0, NULL, NULL, 0, 0);
		printf("  rereg(no flags) %d %s\n", rc, E(rc));
		printf("  dereg_mr %d\n", ibv_dereg_mr(mr));
	}
	if (mr2)
		printf("  dereg_mr %d\n", ibv_dereg_mr(mr2));
	free(buf);
}

static void cq_part(struct ibv_context *ctx, int can_resize)
{
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *bad;
	struct ibv_wc wc[4];
	int rc;

	cq = ibv_create_cq(ctx, 16, &cookie, NULL, 0);
	printf("  create_cq %s", P(cq));
	if (!cq) {
		printf("\n");
		return;
	}
	printf(" cqe %d context %s cq_context %s channel %s counters %u %u\n", cq->cqe,
	       cq->context == ctx ? "same" : "other", cq->cq_context == &cookie ? "same" : "other",
	       cq->channel ? "set" : "null", cq->comp_events_completed, cq->async_events_completed);
	printf("  poll_cq(empty) %d\n", ibv_poll_cq(cq, 4, wc));
	rc = ibv_req_notify_cq(cq, 0);
	printf("  req_notify_cq %d\n", rc);
	if (can_resize) {
		rc = ibv_resize_cq(cq, 100);
		printf("  resize_cq(100) %d cqe>=100 %d\n", rc, cq->cqe >= 100);
	}
	printf("  destroy_cq %d\n", ibv_destroy_cq(cq));
	errno = 0;
	bad = ibv_create_cq(ctx, 0, NULL, NULL, 0);
	printf("  create_cq(0) %s\n", P(bad));
	errno = 0;
	bad = ibv_create_cq(ctx, 4, NULL, NULL, 1000);
	printf("  create_cq(vector 1000) %s\n", P(bad));
	errno = 0;
	bad = ibv_create_cq(ctx, 1 << 30, NULL, NULL, 0);
	printf("  create_cq(1<<30) %s\n", P(bad));

	ch = ibv_create_comp_channel(ctx);
	cq = ch ? ibv_create_cq(ctx, 8, NULL, ch, 0) : NULL;
	printf("  create_cq(channel) %s refcnt %d channel %s\n", P(cq), ch ? ch->refcnt : -1,
	       cq && cq->channel == ch ? "same" : "other");
	errno = 0;
	rc = ch ? ibv_destroy_comp_channel(ch) : -1;
	printf("  destroy_comp_channel(in use) %d %s\n", rc, E(rc));
	if (cq) {
		printf("  req_notify_cq(solicited) %d\n", ibv_req_notify_cq(cq, 1));
		ibv_ack_cq_events(cq, 0);
		printf("  destroy_cq %d refcnt %d\n", ibv_destroy_cq(cq), ch->refcnt);
	}
	if (ch)
		printf("  destroy_comp_channel %d\n", ibv_destroy_comp_channel(ch));
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd, *pd2;
	int n, i;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (argc > 1 && !strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		printf("no device %s\n", argc > 1 ? argv[1] : "(none given)");
		return 1;
	}
	printf("%s\n", argv[1]);
	pd = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	if (!pd || !pd2) {
		printf("alloc_pd: %s\n", strerror(errno));
		return 1;
	}
	mr_part(ctx, pd, pd2);
	/* siw has no CQ resize (neither library) */
	cq_part(ctx, strncmp(argv[1], "siw", 3) != 0);
	printf("  dealloc_pd %d %d\n", ibv_dealloc_pd(pd), ibv_dealloc_pd(pd2));
	printf("  close %d\n", ibv_close_device(ctx));
	ibv_free_device_list(list);
	return 0;
}
