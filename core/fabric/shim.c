/*
 * The C side of package fabric: libfabric loaded with dlopen, an RDM endpoint with its completion
 * queue and address vector, memory registration, RMA writes and completion polling. See shim.h.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "shim.h"

/* The exported functions this package calls, through pointers (typed from the headers). */
static __typeof__(&fi_getinfo) p_getinfo;
static __typeof__(&fi_freeinfo) p_freeinfo;
static __typeof__(&fi_dupinfo) p_dupinfo;
static __typeof__(&fi_fabric) p_fabric;
static __typeof__(&fi_strerror) p_strerror;
static __typeof__(&fi_version) p_version;

/* The API version asked for: the headers the library was built with. */
#define API_VERSION FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

/* Write-after-write ordering between RMA writes: a signal written after data lands after it. */
#ifdef FI_ORDER_RMA_WAW
#define ORDER_WAW FI_ORDER_RMA_WAW
#else
#define ORDER_WAW FI_ORDER_WAW
#endif

struct mscclpp_fab_ep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	uint64_t next_key; /* keys this side picks when the provider does not */
};

struct mscclpp_fab_mr {
	struct fid_mr *mr;
	void *desc;
};

int mscclpp_fab_load(const char *path, char *err, size_t err_len)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		snprintf(err, err_len, "%s", dlerror());
		return -1;
	}
#define RESOLVE(ptr, name)                                                    \
	do {                                                                  \
		*(void **)&ptr = dlsym(h, name);                              \
		if (ptr == NULL) {                                            \
			snprintf(err, err_len, "%s: no %s", path, name);      \
			return -1;                                            \
		}                                                             \
	} while (0)
	RESOLVE(p_getinfo, "fi_getinfo");
	RESOLVE(p_freeinfo, "fi_freeinfo");
	RESOLVE(p_dupinfo, "fi_dupinfo");
	RESOLVE(p_fabric, "fi_fabric");
	RESOLVE(p_strerror, "fi_strerror");
	RESOLVE(p_version, "fi_version");
#undef RESOLVE
	return 0;
}

uint32_t mscclpp_fab_version(void) { return p_version(); }

const char *mscclpp_fab_strerror(int code) { return p_strerror(code); }

/* hints returns what every endpoint of this package asks for, and with MSCCLPP_FAB_OPEN_HMEM in
 * flags device memory registered with the provider too. */
static struct fi_info *hints(const char *prov, const char *domain, int flags)
{
	struct fi_info *h = p_dupinfo(NULL);
	if (h == NULL)
		return NULL;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_RMA | FI_MSG | FI_WRITE | FI_REMOTE_WRITE;
	h->mode = 0; /* operation contexts are plain numbers: no FI_CONTEXT */
	h->addr_format = FI_FORMAT_UNSPEC;
	h->tx_attr->msg_order = ORDER_WAW;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	if (prov != NULL && prov[0] != '\0')
		h->fabric_attr->prov_name = strdup(prov);
	if (domain != NULL && domain[0] != '\0')
		h->domain_attr->name = strdup(domain);
	if (flags & MSCCLPP_FAB_OPEN_HMEM) {
		h->caps |= FI_HMEM;
		h->domain_attr->mr_mode |= FI_MR_HMEM;
	}
	return h;
}

/* The name of what mscclpp_fab_list lists, in one row of fi_getinfo's answer. */
static const char *listed_name(const struct fi_info *i, int what)
{
	return what == MSCCLPP_FAB_LIST_DOMAINS ? i->domain_attr->name : i->fabric_attr->prov_name;
}

int mscclpp_fab_list(const char *prov, int what, char *out, size_t out_len)
{
	struct fi_info *h = hints(prov, NULL, 0), *list = NULL;
	if (h == NULL)
		return -FI_ENOMEM;
	int r = p_getinfo(API_VERSION, NULL, NULL, 0, h, &list);
	p_freeinfo(h);
	out[0] = '\0';
	if (r == -FI_ENODATA)
		return 0;
	if (r != 0)
		return r;
	size_t used = 0;
	for (struct fi_info *i = list; i != NULL; i = i->next) {
		const char *name = listed_name(i, what);
		/* Each name once, in libfabric's order of preference. */
		int seen = 0;
		for (struct fi_info *j = list; j != i; j = j->next)
			if (strcmp(listed_name(j, what), name) == 0)
				seen = 1;
		if (seen)
			continue;
		int n = snprintf(out + used, out_len - used, "%s%s", used ? "," : "", name);
		if (n < 0 || (size_t)n >= out_len - used)
			break;
		used += n;
	}
	p_freeinfo(list);
	return 0;
}

/* pick_domain keeps, of e->info's answers, the first on `domain` alone: a layered provider (rxm
 * over tcp in libfabric 1.17) answers with every domain whatever the hints name. -FI_ENODATA when
 * none is on it. */
static int pick_domain(struct mscclpp_fab_ep *e, const char *domain, const char **where)
{
	*where = "fi_getinfo";
	struct fi_info *pick = NULL;
	for (struct fi_info *i = e->info; i != NULL && pick == NULL; i = i->next)
		if (i->domain_attr != NULL && i->domain_attr->name != NULL && strcmp(i->domain_attr->name, domain) == 0)
			pick = i;
	if (pick == NULL)
		return -FI_ENODATA;
	struct fi_info *one = p_dupinfo(pick); /* the one entry, without the rest of the list */
	if (one == NULL) {
		*where = "allocate";
		return -FI_ENOMEM;
	}
	p_freeinfo(e->info);
	e->info = one;
	return 0;
}

int mscclpp_fab_open(const char *prov, const char *domain, int flags, struct mscclpp_fab_ep **out, const char **where)
{
	*out = NULL;
	struct mscclpp_fab_ep *e = calloc(1, sizeof *e);
	struct fi_info *h = hints(prov, domain, flags);
	if (e == NULL || h == NULL) {
		free(e);
		if (h)
			p_freeinfo(h);
		*where = "allocate";
		return -FI_ENOMEM;
	}
	e->next_key = 1;
	int r = p_getinfo(API_VERSION, NULL, NULL, 0, h, &e->info);
	p_freeinfo(h);
	if (r != 0) {
		*where = "fi_getinfo";
		goto fail;
	}
	if (domain != NULL && domain[0] != '\0' && (r = pick_domain(e, domain, where)) != 0)
		goto fail;
	*where = "fi_fabric";
	if ((r = p_fabric(e->info->fabric_attr, &e->fabric, NULL)) != 0)
		goto fail;
	*where = "fi_domain";
	if ((r = fi_domain(e->fabric, e->info, &e->domain, NULL)) != 0)
		goto fail;
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE};
	*where = "fi_cq_open";
	if ((r = fi_cq_open(e->domain, &cq_attr, &e->cq, NULL)) != 0)
		goto fail;
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	*where = "fi_av_open";
	if ((r = fi_av_open(e->domain, &av_attr, &e->av, NULL)) != 0)
		goto fail;
	*where = "fi_endpoint";
	if ((r = fi_endpoint(e->domain, e->info, &e->ep, NULL)) != 0)
		goto fail;
	*where = "fi_ep_bind (completion queue)";
	if ((r = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV)) != 0)
		goto fail;
	*where = "fi_ep_bind (address vector)";
	if ((r = fi_ep_bind(e->ep, &e->av->fid, 0)) != 0)
		goto fail;
	*where = "fi_enable";
	if ((r = fi_enable(e->ep)) != 0)
		goto fail;
	*out = e;
	return 0;
fail:
	mscclpp_fab_close(e);
	return r;
}

int mscclpp_fab_hmem(struct mscclpp_fab_ep *e)
{
	const char *domain = e->info->domain_attr->name;
	struct fi_info *h = hints(e->info->fabric_attr->prov_name, domain, MSCCLPP_FAB_OPEN_HMEM), *list = NULL;
	if (h == NULL)
		return -FI_ENOMEM;
	int r = p_getinfo(API_VERSION, NULL, NULL, 0, h, &list);
	p_freeinfo(h);
	if (r == -FI_ENODATA)
		return 0;
	if (r != 0)
		return r;
	int found = 0;
	for (struct fi_info *i = list; i != NULL && !found; i = i->next)
		found = (i->caps & FI_HMEM) != 0 &&
			(domain == NULL || (i->domain_attr->name != NULL && strcmp(i->domain_attr->name, domain) == 0));
	p_freeinfo(list);
	return found;
}

const char *mscclpp_fab_provider_name(struct mscclpp_fab_ep *e) { return e->info->fabric_attr->prov_name; }
const char *mscclpp_fab_domain_name(struct mscclpp_fab_ep *e) { return e->info->domain_attr->name; }
const char *mscclpp_fab_fabric_name(struct mscclpp_fab_ep *e) { return e->info->fabric_attr->name; }
int mscclpp_fab_remote_data(struct mscclpp_fab_ep *e) { return e->info->domain_attr->cq_data_size >= 8; }
int mscclpp_fab_virt_addr(struct mscclpp_fab_ep *e) { return (e->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0; }
size_t mscclpp_fab_max_msg(struct mscclpp_fab_ep *e) { return e->info->ep_attr->max_msg_size; }

int mscclpp_fab_name(struct mscclpp_fab_ep *e, void *buf, size_t *len) { return fi_getname(&e->ep->fid, buf, len); }

int mscclpp_fab_insert(struct mscclpp_fab_ep *e, const void *addr, uint64_t *fi_addr)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	int n = fi_av_insert(e->av, addr, 1, &a, 0, NULL);
	if (n < 0)
		return n;
	if (n != 1)
		return -FI_EINVAL;
	*fi_addr = a;
	return 0;
}

/* What a registration allows: writes and reads from it here, the peers' writes and reads into it. */
#define MR_ACCESS (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

static int finish_reg(struct mscclpp_fab_ep *e, struct mscclpp_fab_mr *m, int r, struct mscclpp_fab_mr **out,
		      uint64_t *key, const char **where);

int mscclpp_fab_reg(struct mscclpp_fab_ep *e, uint64_t addr, size_t len, uint64_t requested_key,
		    struct mscclpp_fab_mr **out, uint64_t *key, const char **where)
{
	*out = NULL;
	struct mscclpp_fab_mr *m = calloc(1, sizeof *m);
	if (m == NULL) {
		*where = "allocate";
		return -FI_ENOMEM;
	}
	uint64_t want = requested_key ? requested_key : __atomic_fetch_add(&e->next_key, 1, __ATOMIC_RELAXED);
	*where = "fi_mr_reg";
	int r = fi_mr_reg(e->domain, (void *)(uintptr_t)addr, len, MR_ACCESS, 0, want, 0, &m->mr, NULL);
	return finish_reg(e, m, r, out, key, where);
}

int mscclpp_fab_reg_cuda(struct mscclpp_fab_ep *e, uint64_t addr, size_t len, int device, struct mscclpp_fab_mr **out,
			 uint64_t *key, const char **where)
{
	*out = NULL;
	if (!(e->info->caps & FI_HMEM)) {
		*where = "register device memory on an endpoint opened without FI_HMEM";
		return -FI_EOPNOTSUPP;
	}
	struct mscclpp_fab_mr *m = calloc(1, sizeof *m);
	if (m == NULL) {
		*where = "allocate";
		return -FI_ENOMEM;
	}
	struct iovec iov = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = MR_ACCESS,
		.requested_key = __atomic_fetch_add(&e->next_key, 1, __ATOMIC_RELAXED),
		.iface = FI_HMEM_CUDA,
	};
	attr.device.cuda = device;
	*where = "fi_mr_regattr (CUDA memory)";
	int r = fi_mr_regattr(e->domain, &attr, 0, &m->mr);
	return finish_reg(e, m, r, out, key, where);
}

/* finish_reg binds and enables a registration where the provider wants it (FI_MR_ENDPOINT) and
 * hands it out; r is the registration's result so far. */
static int finish_reg(struct mscclpp_fab_ep *e, struct mscclpp_fab_mr *m, int r, struct mscclpp_fab_mr **out,
		      uint64_t *key, const char **where)
{
	if (r != 0) {
		free(m);
		return r;
	}
	if (e->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		*where = "fi_mr_bind";
		if ((r = fi_mr_bind(m->mr, &e->ep->fid, 0)) == 0) {
			*where = "fi_mr_enable";
			r = fi_mr_enable(m->mr);
		}
		if (r != 0) {
			fi_close(&m->mr->fid);
			free(m);
			return r;
		}
	}
	m->desc = fi_mr_desc(m->mr);
	*key = fi_mr_key(m->mr);
	*out = m;
	return 0;
}

int mscclpp_fab_unreg(struct mscclpp_fab_mr *m)
{
	int r = fi_close(&m->mr->fid);
	free(m);
	return r;
}

ssize_t mscclpp_fab_write(struct mscclpp_fab_ep *e, uint64_t addr, size_t len, struct mscclpp_fab_mr *mr,
			  uint64_t peer, uint64_t raddr, uint64_t key, uint64_t ctx)
{
	return fi_write(e->ep, (const void *)(uintptr_t)addr, len, mr ? mr->desc : NULL, (fi_addr_t)peer, raddr, key, (void *)(uintptr_t)ctx);
}

ssize_t mscclpp_fab_writedata(struct mscclpp_fab_ep *e, uint64_t addr, size_t len, struct mscclpp_fab_mr *mr,
			      uint64_t peer, uint64_t raddr, uint64_t key, uint64_t data, uint64_t ctx)
{
	return fi_writedata(e->ep, (const void *)(uintptr_t)addr, len, mr ? mr->desc : NULL, data, (fi_addr_t)peer, raddr, key,
			    (void *)(uintptr_t)ctx);
}

ssize_t mscclpp_fab_send(struct mscclpp_fab_ep *e, uint64_t addr, size_t len, struct mscclpp_fab_mr *mr,
			 uint64_t peer, uint64_t ctx)
{
	return fi_send(e->ep, (const void *)(uintptr_t)addr, len, mr ? mr->desc : NULL, (fi_addr_t)peer, (void *)(uintptr_t)ctx);
}

ssize_t mscclpp_fab_recv(struct mscclpp_fab_ep *e, uint64_t addr, size_t len, struct mscclpp_fab_mr *mr, uint64_t ctx)
{
	return fi_recv(e->ep, (void *)(uintptr_t)addr, len, mr ? mr->desc : NULL, FI_ADDR_UNSPEC, (void *)(uintptr_t)ctx);
}

int mscclpp_fab_send_after_write(struct mscclpp_fab_ep *e)
{
	return (e->info->tx_attr->msg_order & FI_ORDER_SAW) != 0 && (e->info->rx_attr->msg_order & FI_ORDER_SAW) != 0;
}

int mscclpp_fab_msg_ordered(struct mscclpp_fab_ep *e)
{
	return (e->info->tx_attr->msg_order & FI_ORDER_SAS) != 0 && (e->info->rx_attr->msg_order & FI_ORDER_SAS) != 0;
}

ssize_t mscclpp_fab_poll(struct mscclpp_fab_ep *e, uint64_t *ctxs, uint64_t *lens, uint64_t *datas, size_t max, char *err,
			size_t err_len)
{
	struct fi_cq_data_entry entries[64];
	if (max > 64)
		max = 64;
	ssize_t n = fi_cq_read(e->cq, entries, max);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry ee;
		memset(&ee, 0, sizeof ee);
		if (fi_cq_readerr(e->cq, &ee, 0) < 0) {
			snprintf(err, err_len, "fi_cq_readerr failed");
			return -FI_EOTHER;
		}
		snprintf(err, err_len, "%s", fi_cq_strerror(e->cq, ee.prov_errno, ee.err_data, NULL, 0));
		return ee.err ? -(ssize_t)ee.err : -FI_EOTHER;
	}
	if (n < 0)
		return n;
	for (ssize_t i = 0; i < n; i++) {
		/* A peer's RMA write with data; a message that carries data too stays a message (its
		 * receive buffer must be accounted for). */
		const int remote = (entries[i].flags & FI_REMOTE_CQ_DATA) && !(entries[i].flags & FI_RECV);
		ctxs[i] = remote ? MSCCLPP_FAB_REMOTE_DATA : (uint64_t)(uintptr_t)entries[i].op_context;
		lens[i] = !remote && (entries[i].flags & FI_RECV) ? entries[i].len : 0;
		datas[i] = remote ? entries[i].data : 0;
	}
	return n;
}

void mscclpp_fab_close(struct mscclpp_fab_ep *e)
{
	if (e == NULL)
		return;
	if (e->ep)
		fi_close(&e->ep->fid);
	if (e->av)
		fi_close(&e->av->fid);
	if (e->cq)
		fi_close(&e->cq->fid);
	if (e->domain)
		fi_close(&e->domain->fid);
	if (e->fabric)
		fi_close(&e->fabric->fid);
	if (e->info)
		p_freeinfo(e->info);
	free(e);
}
