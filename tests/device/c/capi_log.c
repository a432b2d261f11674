/* VERBS_LOG_LEVEL / VERBS_LOG_FILE on the C library (tests/device/capi_log.rs):
 * opens the device named argv[1], asks for a QP with far more send SGEs
 * than any device has (refused), and prints what each call answered. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

int main(int argc, char **argv)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	if (!list || argc < 2)
		return 2;
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		printf("ibv_open_device %s failed: %s\n", argv[1], strerror(errno));
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr attr = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 100000, .max_recv_sge = 1 },
	};
	errno = 0;
	struct ibv_qp *qp = ibv_create_qp(pd, &attr);
	printf("ibv_create_qp with 100000 send SGEs: %s\n", qp ? "created" : "refused");
	if (qp)
		ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
