/* A C program built against rdma-core's <infiniband/verbs.h> and linked
 * with -libverbs; tests/c_abi.rs runs it on rdma-core's library and on ours
 * (LD_LIBRARY_PATH) and wants byte-identical output. It uses only calls
 * that need no RDMA device. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

/* exported by libibverbs, declared only in rdma-core's private headers
 * (driver.h, marshall.h) */
const char *ibv_get_sysfs_path(void);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);

/* src gets bytes 1, 2, 3, ...; dst 0x5a everywhere; print dst after the copy */
#define COPY(fn, dtype, stype)                                                 \
	do {                                                                   \
		dtype d;                                                       \
		stype s;                                                       \
		size_t k;                                                      \
		memset(&d, 0x5a, sizeof(d));                                   \
		for (k = 0; k < sizeof(s); k++)                                \
			((unsigned char *)&s)[k] = (unsigned char)(k + 1);     \
		fn(&d, &s);                                                    \
		printf(#fn ":");                                               \
		for (k = 0; k < sizeof(d); k++)                                \
			printf("%02x", ((unsigned char *)&d)[k]);              \
		printf("\n");                                                  \
	} while (0)

int main(void)
{
	int n = -7, i;
	struct ibv_device **l;

	/* NULL num_devices must be accepted */
	l = ibv_get_device_list(NULL);
	printf("list(NULL): %s errno=%s\n", l ? "list" : "NULL", l ? "-" : strerror(errno));
	if (l) /* rdma-core's ibv_free_device_list(NULL) crashes */
		ibv_free_device_list(l);
	l = ibv_get_device_list(&n);
	printf("list(&n): %s n=%d\n", l ? "list" : "NULL", n);
	if (l) {
		for (i = 0; i < n; i++)
			printf("  %s %016llx\n", ibv_get_device_name(l[i]),
			       (unsigned long long)be64toh(ibv_get_device_guid(l[i])));
		printf("  terminator %s\n", l[n] ? "missing" : "NULL");
		ibv_free_device_list(l);
	}

	for (i = -2; i < 10; i++)
		printf("node_type %d: %s\n", i, ibv_node_type_str(i));
	for (i = 0; i < 8; i++)
		printf("port_state %d: %s\n", i, ibv_port_state_str(i));
	for (i = 0; i < 24; i++)
		printf("event %d: %s\n", i, ibv_event_type_str(i));
	for (i = 0; i < 26; i++)
		printf("wc_status %d: %s\n", i, ibv_wc_status_str(i));
	for (i = 0; i < 26; i++)
		printf("rate %d: mult %d mbps %d\n", i, ibv_rate_to_mult(i), ibv_rate_to_mbps(i));
	for (i = 0; i < 500; i++)
		if (mult_to_ibv_rate(i) != IBV_RATE_MAX)
			printf("mult %d -> rate %d\n", i, mult_to_ibv_rate(i));
	printf("mbps 25781 -> %d, 1 -> %d\n", mbps_to_ibv_rate(25781), mbps_to_ibv_rate(1));
	printf("sysfs path %s\n", ibv_get_sysfs_path());
	COPY(ibv_copy_ah_attr_from_kern, struct ibv_ah_attr, struct ib_uverbs_ah_attr);
	COPY(ibv_copy_qp_attr_from_kern, struct ibv_qp_attr, struct ib_uverbs_qp_attr);
	COPY(ibv_copy_path_rec_from_kern, struct ibv_sa_path_rec, struct ib_user_path_rec);
	COPY(ibv_copy_path_rec_to_kern, struct ib_user_path_rec, struct ibv_sa_path_rec);
	return 0;
}
