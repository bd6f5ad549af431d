/*
 * Declarations of the C side of package fabric. Nothing here links against libfabric: its
 * headers supply types and the inline calls that go through each object's ops table, and the
 * six exported functions (fi_getinfo, fi_freeinfo, fi_dupinfo, fi_fabric, fi_strerror,
 * fi_version) are called through pointers resolved with dlsym.
 */
#ifndef MSCCLPP_FABRIC_SHIM_H
#define MSCCLPP_FABRIC_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rdma/fi_errno.h>

#pragma GCC visibility push(hidden)

/* One open RDM endpoint and what it hangs on. */
struct mscclpp_fab_ep;
struct mscclpp_fab_mr;

/* mscclpp_fab_load dlopens path and resolves the exported functions; -1 and a message on failure. */
int mscclpp_fab_load(const char *path, char *err, size_t err_len);

/* mscclpp_fab_version returns fi_version() of the loaded library (major << 16 | minor). */
uint32_t mscclpp_fab_version(void);

/* mscclpp_fab_strerror returns fi_strerror(code) (code positive). */
const char *mscclpp_fab_strerror(int code);

/* What mscclpp_fab_list lists. */
enum { MSCCLPP_FAB_LIST_PROVIDERS = 0, MSCCLPP_FAB_LIST_DOMAINS = 1 };

/*
 * mscclpp_fab_list writes, separated by commas and each once, the names of the providers
 * (MSCCLPP_FAB_LIST_PROVIDERS) or of the domains (NICs, interfaces: MSCCLPP_FAB_LIST_DOMAINS)
 * that offer an RDM endpoint with RMA and write-after-write ordering, of provider prov (NULL: of
 * any), in libfabric's order, into out. Returns 0 or a negative libfabric error.
 */
int mscclpp_fab_list(const char *prov, int what, char *out, size_t out_len);

/* Flags of mscclpp_fab_open. */
enum {
	MSCCLPP_FAB_OPEN_HMEM = 1, /* FI_HMEM and FI_MR_HMEM: device memory registered with the provider */
};

/*
 * mscclpp_fab_open opens an RDM endpoint of provider prov (NULL: libfabric's first choice), with
 * a completion queue and an address vector. domain, when not NULL, picks the domain (NIC) by
 * name; flags are MSCCLPP_FAB_OPEN_*. Returns 0 or a negative libfabric error (-FI_ENODATA when
 * no endpoint offers what was asked); where says which step failed.
 */
int mscclpp_fab_open(const char *prov, const char *domain, int flags, struct mscclpp_fab_ep **out, const char **where);

/* Facts about an open endpoint. */
const char *mscclpp_fab_provider_name(struct mscclpp_fab_ep *e);
const char *mscclpp_fab_domain_name(struct mscclpp_fab_ep *e);
const char *mscclpp_fab_fabric_name(struct mscclpp_fab_ep *e);
int mscclpp_fab_virt_addr(struct mscclpp_fab_ep *e); /* remote addresses are virtual addresses, not offsets */
/* 1 when the endpoint's provider offers the same endpoint on the same domain with FI_HMEM (memory
 * of a device, such as a GPU, registered with the provider: FI_MR_HMEM), 0 when not, or a
 * negative libfabric error. */
int mscclpp_fab_hmem(struct mscclpp_fab_ep *e);
size_t mscclpp_fab_max_msg(struct mscclpp_fab_ep *e);

/* mscclpp_fab_name copies the endpoint's address into buf (*len bytes at most) and sets *len. */
int mscclpp_fab_name(struct mscclpp_fab_ep *e, void *buf, size_t *len);

/* mscclpp_fab_insert adds a peer's address to the address vector and returns its fi_addr_t. */
int mscclpp_fab_insert(struct mscclpp_fab_ep *e, const void *addr, uint64_t *fi_addr);

/* mscclpp_fab_reg registers len bytes at addr for local writes and remote writes into it. */
int mscclpp_fab_reg(struct mscclpp_fab_ep *e, uint64_t addr, size_t len, uint64_t requested_key,
		    struct mscclpp_fab_mr **out, uint64_t *key, const char **where);
/* mscclpp_fab_reg_cuda is mscclpp_fab_reg for len bytes of CUDA device memory at addr on device
 * (an ordinal), on an endpoint opened with MSCCLPP_FAB_OPEN_HMEM. */
int mscclpp_fab_reg_cuda(struct mscclpp_fab_ep *e, uint64_t addr, size_t len, int device, struct mscclpp_fab_mr **out,
			 uint64_t *key, const char **where);
int mscclpp_fab_unreg(struct mscclpp_fab_mr *mr);

/*
 * mscclpp_fab_write posts a write of len bytes from addr (inside mr) to raddr/key at peer, with
 * context ctx in its completion. Returns 0, -FI_EAGAIN (progress, then retry) or an error.
 */
ssize_t mscclpp_fab_write(struct mscclpp_fab_ep *e, uint64_t addr, size_t len, struct mscclpp_fab_mr *mr,
			  uint64_t peer, uint64_t raddr, uint64_t key, uint64_t ctx);

/*
 * mscclpp_fab_writedata is mscclpp_fab_write with remote CQ data: the peer's completion queue
 * reports data once the len bytes (len may be 0) have landed.
 */
ssize_t mscclpp_fab_writedata(struct mscclpp_fab_ep *e, uint64_t addr, size_t len, struct mscclpp_fab_mr *mr,
			      uint64_t peer, uint64_t raddr, uint64_t key, uint64_t data, uint64_t ctx);

/* mscclpp_fab_remote_data reports whether the endpoint carries 8 bytes of remote CQ data. */
int mscclpp_fab_remote_data(struct mscclpp_fab_ep *e);

/*
 * mscclpp_fab_send posts a message of len bytes from addr (inside mr) to peer, with context ctx
 * in its completion. Returns 0, -FI_EAGAIN (progress, then retry) or an error.
 */
ssize_t mscclpp_fab_send(struct mscclpp_fab_ep *e, uint64_t addr, size_t len, struct mscclpp_fab_mr *mr,
			 uint64_t peer, uint64_t ctx);

/*
 * mscclpp_fab_recv posts a buffer of len bytes at addr (inside mr) for the next message from any
 * peer, with context ctx in the completion that says a message arrived in it. Returns 0,
 * -FI_EAGAIN or an error.
 */
ssize_t mscclpp_fab_recv(struct mscclpp_fab_ep *e, uint64_t addr, size_t len, struct mscclpp_fab_mr *mr, uint64_t ctx);

/* mscclpp_fab_msg_ordered reports whether messages to one peer arrive in the order they were sent. */
int mscclpp_fab_msg_ordered(struct mscclpp_fab_ep *e);

/* mscclpp_fab_send_after_write reports whether a message to a peer arrives after the RMA writes
 * posted to it before (FI_ORDER_SAW). */
int mscclpp_fab_send_after_write(struct mscclpp_fab_ep *e);

/* The context mscclpp_fab_poll reports for a peer's write with remote CQ data. */
#define MSCCLPP_FAB_REMOTE_DATA UINT64_MAX

/*
 * mscclpp_fab_poll reads up to max completions, storing their contexts in ctxs, their lengths
 * (the bytes of a message received; 0 for the others) in lens, and their remote CQ data (0 for
 * the others) in datas; a peer's RMA write with remote CQ data has context MSCCLPP_FAB_REMOTE_DATA.
 * It returns how many, 0 when there are none, or a negative error, whose text it copies into err.
 */
ssize_t mscclpp_fab_poll(struct mscclpp_fab_ep *e, uint64_t *ctxs, uint64_t *lens, uint64_t *datas, size_t max, char *err,
			size_t err_len);

/* mscclpp_fab_close closes the endpoint and everything it hangs on. */
void mscclpp_fab_close(struct mscclpp_fab_ep *e);

#pragma GCC visibility pop

#endif
