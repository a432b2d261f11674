/* A C program built against rdma-core's <infiniband/verbs.h> and linked
 * with -libverbs; tests/c_abi.rs runs it on rdma-core's library and on ours
 * (LD_LIBRARY_PATH) and wants byte-identical output. It uses only calls
 * that need no RDMA device. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

/* exported by libibverbs, declared only in rdma-core's private driver.h */
const char *ibv_get_sysfs_path(void);

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
	return 0;
}
