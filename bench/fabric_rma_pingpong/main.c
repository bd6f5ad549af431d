// fabric_rma_pingpong: the provider's own floor for what the library's host-memory ping-pong does
// (bench/fabric_pingpong): two processes of one host (fork), an RDM endpoint each with the hints of
// core/fabric/shim.c, and a ping-pong of RMA writes that carry 8 bytes of remote CQ data
// (fi_writedata), each side polling its completion queue for the peer's data. No Go, no library:
// what it measures beside fi_pingpong (send/receive) is the price of RMA with CQ data itself.
//
//   fabric_rma_pingpong [-p provider] [-d domain] [-S size,size,...] [-I iterations] [-j]
//
// -j injects writes of at most the provider's inject size (fi_inject_writedata: no local
// completion). Prints, per size: bytes, iterations, one-way us.
#define _POSIX_C_SOURCE 200809L
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(call)                                                                     \
	do {                                                                            \
		int r_ = (int)(call);                                                   \
		if (r_ != 0) {                                                          \
			fprintf(stderr, "rank %d: %s: %s\n", rank, #call, fi_strerror(-r_)); \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

static int rank;

struct side {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_mr *mr;
	struct fi_info *info;
	char *buf;
	fi_addr_t peer;
	uint64_t raddr, rkey;
	uint64_t posted, completed; // this side's writes with a local completion, and those completed
};

// What one side tells the other through the pipe.
struct card {
	char addr[256];
	size_t addr_len;
	uint64_t buf, key;
};

static void open_side(struct side *s, const char *prov, const char *domain, size_t max)
{
	struct fi_info *h = fi_allocinfo();
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_RMA | FI_MSG | FI_WRITE | FI_REMOTE_WRITE;
	h->mode = 0;
	h->tx_attr->msg_order = FI_ORDER_WAW;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	h->fabric_attr->prov_name = strdup(prov);
	if (domain != NULL)
		h->domain_attr->name = strdup(domain);
	CHECK(fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, h, &s->info));
	fi_freeinfo(h);
	if (s->info->domain_attr->cq_data_size < 8) {
		fprintf(stderr, "%s carries %zu bytes of CQ data, not 8\n", prov, s->info->domain_attr->cq_data_size);
		exit(2);
	}
	CHECK(fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
	CHECK(fi_domain(s->fabric, s->info, &s->domain, NULL));
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE};
	CHECK(fi_cq_open(s->domain, &cq_attr, &s->cq, NULL));
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	CHECK(fi_av_open(s->domain, &av_attr, &s->av, NULL));
	CHECK(fi_endpoint(s->domain, s->info, &s->ep, NULL));
	CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(s->ep, &s->av->fid, 0));
	CHECK(fi_enable(s->ep));
	if (posix_memalign((void **)&s->buf, 4096, max + 4096) != 0)
		exit(1);
	memset(s->buf, 0, max + 4096);
	uint64_t access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	CHECK(fi_mr_reg(s->domain, s->buf, max + 4096, access, 0, 1, 0, &s->mr, NULL));
	if (s->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		CHECK(fi_mr_bind(s->mr, &s->ep->fid, 0));
		CHECK(fi_mr_enable(s->mr));
	}
}

// poll_cq reads the completions there are: it counts this side's completed writes, and returns
// whether the peer's write with data `want` was among them (want 0: none is waited for).
static int poll_cq(struct side *s, uint64_t want)
{
	struct fi_cq_data_entry e[16];
	ssize_t n = fi_cq_read(s->cq, e, 16);
	if (n == -FI_EAGAIN)
		return 0;
	if (n < 0) {
		fprintf(stderr, "rank %d: fi_cq_read: %s\n", rank, fi_strerror((int)-n));
		exit(1);
	}
	int found = 0;
	for (ssize_t i = 0; i < n; i++) {
		if (!(e[i].flags & FI_REMOTE_CQ_DATA))
			s->completed++;
		else if (want != 0 && e[i].data == want)
			found = 1;
	}
	return found;
}

// wait_data polls until the peer's write with data `want` arrives.
static void wait_data(struct side *s, uint64_t want)
{
	while (!poll_cq(s, want))
		;
}

// drain polls until every write of this side has completed: on providers with manual progress
// (rxm) a large write moves only while its sender polls, so a side that stops polling after its
// last write (to wait on the pipe) would leave the peer waiting for it.
static void drain(struct side *s)
{
	while (s->completed < s->posted)
		poll_cq(s, 0);
}

// write_data posts one write of len bytes into the peer's buffer with data as its remote CQ data
// (injected with -j where it fits), progressing and retrying while the provider says -FI_EAGAIN.
static void write_data(struct side *s, size_t len, uint64_t data, int inject)
{
	for (;;) {
		const int injected = inject && len <= s->info->tx_attr->inject_size;
		ssize_t r = injected ? fi_inject_writedata(s->ep, s->buf, len, data, s->peer, s->raddr, s->rkey)
				     : fi_writedata(s->ep, s->buf, len, fi_mr_desc(s->mr), data, s->peer, s->raddr, s->rkey, NULL);
		if (r == 0) {
			s->posted += !injected;
			return;
		}
		if (r != -FI_EAGAIN) {
			fprintf(stderr, "rank %d: fi_writedata: %s\n", rank, fi_strerror((int)-r));
			exit(1);
		}
		poll_cq(s, 0); // progress; no peer data can come while this side owes its write
	}
}

// now_us is the monotonic clock in microseconds.
static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	const char *prov = "tcp", *domain = NULL;
	char sizes_arg[256] = "8,1024,65536";
	long iters = 0;
	int inject = 0, opt;
	while ((opt = getopt(argc, argv, "p:d:S:I:j")) != -1) {
		switch (opt) {
		case 'p': prov = optarg; break;
		case 'd': domain = optarg; break;
		case 'S': snprintf(sizes_arg, sizeof sizes_arg, "%s", optarg); break;
		case 'I': iters = atol(optarg); break;
		case 'j': inject = 1; break;
		default: fprintf(stderr, "usage: %s [-p provider] [-d domain] [-S sizes] [-I iterations] [-j]\n", argv[0]); return 2;
		}
	}
	size_t sizes[32], nsizes = 0, max = 8;
	for (char *tok = strtok(sizes_arg, ","); tok != NULL && nsizes < 32; tok = strtok(NULL, ",")) {
		sizes[nsizes] = strtoull(tok, NULL, 10);
		if (sizes[nsizes] > max)
			max = sizes[nsizes];
		nsizes++;
	}
	int up[2], down[2]; // up: rank 1 to rank 0; down: rank 0 to rank 1
	if (pipe(up) != 0 || pipe(down) != 0)
		return 1;
	pid_t child = fork();
	rank = child == 0 ? 1 : 0;
	int rd = rank == 0 ? up[0] : down[0], wr = rank == 0 ? down[1] : up[1];
	struct side s;
	memset(&s, 0, sizeof s);
	open_side(&s, prov, domain, max);
	struct card mine = {.addr_len = sizeof mine.addr, .buf = (uint64_t)(uintptr_t)s.buf, .key = fi_mr_key(s.mr)}, theirs;
	CHECK(fi_getname(&s.ep->fid, mine.addr, &mine.addr_len));
	if (write(wr, &mine, sizeof mine) != sizeof mine || read(rd, &theirs, sizeof theirs) != sizeof theirs)
		return 1;
	if (fi_av_insert(s.av, theirs.addr, 1, &s.peer, 0, NULL) != 1)
		return 1;
	s.raddr = (s.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? theirs.buf : 0;
	s.rkey = theirs.key;
	if (rank == 0)
		printf("# fabric_rma_pingpong: provider %s, libfabric %u.%u, %s; one-way us\n", s.info->fabric_attr->prov_name,
		       FI_MAJOR(fi_version()), FI_MINOR(fi_version()), inject ? "inject up to the inject size" : "fi_writedata");
	uint64_t seq = 0;
	for (size_t k = 0; k < nsizes; k++) {
		size_t len = sizes[k];
		long n = iters > 0 ? iters : (len <= 65536 ? 10000 : 200);
		char c = 0;
		// Line up before each size.
		if (write(wr, &c, 1) != 1 || read(rd, &c, 1) != 1)
			return 1;
		double start = 0;
		for (long i = -10; i < n; i++) {
			if (i == 0)
				start = now_us();
			seq++;
			if (rank == 0) {
				write_data(&s, len, seq, inject);
				wait_data(&s, seq);
			} else {
				wait_data(&s, seq);
				write_data(&s, len, seq, inject);
			}
		}
		if (rank == 0)
			printf("%10zu %8ld %10.2f\n", len, n, (now_us() - start) / (2.0 * n));
		fflush(stdout);
		drain(&s);
	}
	// Both sides are done before either closes: the peer's last write is read.
	char c = 0;
	if (write(wr, &c, 1) != 1 || read(rd, &c, 1) != 1)
		return 1;
	fi_close(&s.mr->fid);
	fi_close(&s.ep->fid);
	fi_close(&s.av->fid);
	fi_close(&s.cq->fid);
	fi_close(&s.domain->fid);
	fi_close(&s.fabric->fid);
	fi_freeinfo(s.info);
	if (rank == 0) {
		int status = 0;
		waitpid(child, &status, 0);
		return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	}
	return 0;
}
