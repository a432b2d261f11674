/* The verbs a soft device lacks, through the C ABI: importing a context,
 * PD, MR or DM from another process's command fd, dma-buf registration and
 * ECE, and the SRQ types of ibv_create_srq_ex. Run by tests/device/capi.rs on rdma-core's libibverbs and on ours:
 * return values and errno names must be identical (rdma-core answers for
 * rxe and siw, whose providers have none of these, with the errno printed
 * here).
 * Usage: capi_import_ece DEVICE */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#define RC(rc) ((rc) == 0 ? "ok" : strerror(rc))
#define P(p) ((p) ? "ok" : strerror(errno))

int main(int argc, char **argv)
{
	struct ibv_context *ctx = NULL;
	int n;
	if (argc != 2)
		return 2;
	struct ibv_device **list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		return 1;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	printf("setup %s %s %s\n", P(pd), P(cq), P(qp));

	errno = 0;
	struct ibv_context *imp = ibv_import_device(ctx->cmd_fd);
	printf("import_device %s\n", P(imp));
	if (imp)
		ibv_close_device(imp);
	errno = 0;
	printf("import_pd %s\n", P(ibv_import_pd(ctx, 1)));
	errno = 0;
	printf("import_mr %s\n", P(ibv_import_mr(pd, 1)));
	errno = 0;
	printf("import_dm %s\n", P(ibv_import_dm(ctx, 1)));
	errno = 0;
	printf("reg_dmabuf_mr %s\n", P(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE)));

	struct ibv_ece ece = { 0 };
	errno = 0;
	printf("query_ece %s\n", RC(ibv_query_ece(qp, &ece)));
	ece.vendor_id = 0x15b3;
	errno = 0;
	printf("set_ece %s\n", RC(ibv_set_ece(qp, &ece)));

	/* ibv_create_srq_ex: a basic SRQ of a PD (verbs.h takes it to
	 * ibv_create_srq), and what neither device has: tag matching. */
	struct ibv_srq_init_attr_ex sx = { .attr = { .max_wr = 4, .max_sge = 1 },
					   .comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE,
					   .srq_type = IBV_SRQT_BASIC, .pd = pd };
	struct ibv_srq *srq = ibv_create_srq_ex(ctx, &sx);
	printf("create_srq_ex(basic) %s max_wr %s\n", P(srq), sx.attr.max_wr >= 4 ? "at least 4" : "small");
	if (srq)
		ibv_destroy_srq(srq);
	/* (An XRC SRQ needs an XRC domain, which neither device opens.) */
	sx.cq = cq;
	sx.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
	sx.srq_type = IBV_SRQT_TM;
	sx.tm_cap.max_num_tags = 4;
	sx.tm_cap.max_ops = 4;
	errno = 0;
	printf("create_srq_ex(tm) %s\n", P(ibv_create_srq_ex(ctx, &sx)));

	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
