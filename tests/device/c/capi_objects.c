/* Control-path verbs through the C ABI, run by tests/device/capi.rs on
 * rdma-core's libibverbs and on ours: the outputs must be identical.
 * Prints values and errno names, never addresses. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

static void gid_print(const char *what, union ibv_gid *g)
{
	int i;

	printf("  %s ", what);
	for (i = 0; i < 16; i++)
		printf("%02x", g->raw[i]);
	printf("\n");
}

static void one(struct ibv_device *dev)
{
	struct ibv_context *ctx;
	struct ibv_device_attr attr;
	struct ibv_device_attr_ex ex;
	struct ibv_port_attr port;
	struct ibv_gid_entry entries[64], entry;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd, *pd2;
	struct ibv_async_event ev;
	union ibv_gid gid;
	__be16 pkey;
	ssize_t n;
	int i, rc;

	printf("%s index %d\n", ibv_get_device_name(dev), ibv_get_device_index(dev));
	ctx = ibv_open_device(dev);
	if (!ctx) {
		printf("  open: %s\n", strerror(errno));
		return;
	}
	printf("  num_comp_vectors %d cmd_fd %s async_fd %s\n", ctx->num_comp_vectors,
	       ctx->cmd_fd >= 0 ? "ok" : "bad", ctx->async_fd >= 0 ? "ok" : "bad");
	rc = ibv_query_device(ctx, &attr);
	printf("  query_device %d fw %s max_qp %d max_cqe %d ports %d\n", rc, attr.fw_ver,
	       attr.max_qp, attr.max_cqe, attr.phys_port_cnt);
	rc = ibv_query_device_ex(ctx, NULL, &ex);
	printf("  query_device_ex %d ports_ex %u caps_ex %llx\n", rc, ex.phys_port_cnt_ex,
	       (unsigned long long)ex.device_cap_flags_ex);
	rc = ibv_query_port(ctx, 1, &port);
	printf("  query_port(1) %d state %d mtu %d gids %d link %d\n", rc, port.state,
	       port.active_mtu, port.gid_tbl_len, port.link_layer);
	rc = ibv_query_port(ctx, 7, &port);
	printf("  query_port(7) %d\n", rc);
	for (i = 0; i < 3; i++) {
		rc = ibv_query_gid(ctx, 1, i, &gid);
		printf("  query_gid(1,%d) %d", i, rc);
		gid_print("", &gid);
	}
	errno = 0;
	rc = ibv_query_gid(ctx, 1, 100000, &gid);
	printf("  query_gid(1,100000) %d %s\n", rc, rc ? strerror(errno) : "");
	rc = ibv_query_gid_ex(ctx, 1, 0, &entry, 0);
	printf("  query_gid_ex(1,0) %d type %u port %u index %u\n", rc, entry.gid_type,
	       entry.port_num, entry.gid_index);
	rc = ibv_query_gid_ex(ctx, 1, 5000, &entry, 0);
	printf("  query_gid_ex(1,5000) %d\n", rc);
	n = ibv_query_gid_table(ctx, entries, 64, 0);
	printf("  query_gid_table %zd\n", n);
	for (i = 0; i < n; i++)
		printf("   [%u] port %u type %u\n", entries[i].gid_index, entries[i].port_num,
		       entries[i].gid_type);
	rc = ibv_query_pkey(ctx, 1, 0, &pkey);
	printf("  query_pkey(1,0) %d %04x\n", rc, rc ? 0 : be16toh(pkey));
	errno = 0;
	rc = ibv_query_pkey(ctx, 1, 9999, &pkey);
	printf("  query_pkey(1,9999) %d %s\n", rc, rc ? strerror(errno) : "");
	printf("  pkey_index(ffff) %d\n", ibv_get_pkey_index(ctx, 1, htobe16(0xffff)));
	errno = 0;
	rc = ibv_get_pkey_index(ctx, 1, htobe16(0x1234));
	printf("  pkey_index(1234) %d %s\n", rc, rc < 0 ? strerror(errno) : "");

	pd = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	printf("  alloc_pd %s %s context %s handles %u %u\n", pd ? "ok" : strerror(errno),
	       pd2 ? "ok" : strerror(errno), pd && pd->context == ctx ? "same" : "other",
	       pd ? pd->handle : 99, pd2 ? pd2->handle : 99);
	if (pd)
		printf("  dealloc_pd %d\n", ibv_dealloc_pd(pd));
	if (pd2)
		printf("  dealloc_pd %d\n", ibv_dealloc_pd(pd2));

	ch = ibv_create_comp_channel(ctx);
	printf("  comp_channel %s fd %s context %s refcnt %d\n", ch ? "ok" : strerror(errno),
	       ch && ch->fd >= 0 ? "ok" : "bad", ch && ch->context == ctx ? "same" : "other",
	       ch ? ch->refcnt : -1);
	if (ch)
		printf("  destroy_comp_channel %d\n", ibv_destroy_comp_channel(ch));

	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	errno = 0;
	rc = ibv_get_async_event(ctx, &ev);
	printf("  async_event (non-blocking, none pending) %d %s\n", rc,
	       rc ? strerror(errno) : ibv_event_type_str(ev.event_type));
	if (!rc)
		ibv_ack_async_event(&ev);

	printf("  close %d\n", ibv_close_device(ctx));
}

int main(void)
{
	struct ibv_device **list;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list) {
		printf("no list: %s\n", strerror(errno));
		return 1;
	}
	printf("%d devices\n", n);
	for (i = 0; i < n; i++)
		one(list[i]);
	ibv_free_device_list(list);
	printf("fork status %d\n", ibv_is_fork_initialized());
	printf("fork_init %d\n", ibv_fork_init());
	printf("fork status %d\n", ibv_is_fork_initialized());
	return 0;
}
