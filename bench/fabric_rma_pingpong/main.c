// fabric_rma_pingpong: the floor under the library's host-memory ping-pong (bench/fabric_pingpong)
// with no Go in the path: two processes of one host (fork), each with the endpoint that package
// fabric's C side opens (core/fabric/shim.c, linked in: the same hints, registration, writes and
// completion polls), ping-ponging RMA writes that carry 8 bytes of remote CQ data, each side
// polling its completion queue for the peer's data. What it measures beside fi_pingpong
// (send/receive) is the price of RMA with CQ data itself, and beside fabric_pingpong, what Go adds.
//
//   fabric_rma_pingpong [-p provider] [-d domain] [-S size,size,...] [-I iterations]
//
// Prints, per size: bytes, iterations, one-way us.
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

static int rank;

// fail reports a failed step of this rank and exits.
static void fail(const char *what, long r)
{
	fprintf(stderr, "rank %d: %s: %s\n", rank, what, r < 0 ? mscclpp_fab_strerror((int)-r) : "failed");
	exit(1);
}

struct side {
	struct mscclpp_fab_ep *e;
	struct mscclpp_fab_mr *mr;
	char *buf;
	uint64_t key;
	uint64_t peer, raddr, rkey;
	uint64_t posted, completed; // this side's writes, and those completed
};

// What one side tells the other through the pipe.
struct card {
	char addr[256];
	size_t addr_len;
	uint64_t buf, key;
};

static void open_side(struct side *s, const char *prov, const char *domain, size_t max)
{
	const char *where = "";
	int r = mscclpp_fab_open(prov, domain, 0, &s->e, &where);
	if (r != 0)
		fail(where, r);
	if (!mscclpp_fab_remote_data(s->e)) {
		fprintf(stderr, "%s carries no 8 bytes of remote CQ data\n", mscclpp_fab_provider_name(s->e));
		exit(2);
	}
	if (posix_memalign((void **)&s->buf, 4096, max + 4096) != 0)
		fail("allocate", 0);
	memset(s->buf, 0, max + 4096);
	if ((r = mscclpp_fab_reg(s->e, (uint64_t)(uintptr_t)s->buf, max + 4096, 0, &s->mr, &s->key, &where)) != 0)
		fail(where, r);
}

// poll_cq reads the completions there are: it counts this side's completed writes, and returns
// whether the peer's write with data `want` was among them (want 0: none is waited for).
static int poll_cq(struct side *s, uint64_t want)
{
	uint64_t ctxs[16], lens[16], datas[16];
	char err[256];
	ssize_t n = mscclpp_fab_poll(s->e, ctxs, lens, datas, 16, err, sizeof err);
	if (n < 0) {
		fprintf(stderr, "rank %d: fi_cq_read: %s\n", rank, err);
		exit(1);
	}
	int found = 0;
	for (ssize_t i = 0; i < n; i++) {
		if (ctxs[i] != MSCCLPP_FAB_REMOTE_DATA)
			s->completed++;
		else if (want != 0 && datas[i] == want)
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

// write_data posts one write of len bytes into the peer's buffer with data as its remote CQ data,
// progressing and retrying while the provider says -FI_EAGAIN.
static void write_data(struct side *s, size_t len, uint64_t data)
{
	for (;;) {
		ssize_t r = mscclpp_fab_writedata(s->e, (uint64_t)(uintptr_t)s->buf, len, s->mr, s->peer, s->raddr, s->rkey,
						  data, 0);
		if (r == 0) {
			s->posted++;
			return;
		}
		if (r != -FI_EAGAIN)
			fail("fi_writedata", r);
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
	int opt;
	while ((opt = getopt(argc, argv, "p:d:S:I:")) != -1) {
		switch (opt) {
		case 'p': prov = optarg; break;
		case 'd': domain = optarg; break;
		case 'S': snprintf(sizes_arg, sizeof sizes_arg, "%s", optarg); break;
		case 'I': iters = atol(optarg); break;
		default: fprintf(stderr, "usage: %s [-p provider] [-d domain] [-S sizes] [-I iterations]\n", argv[0]); return 2;
		}
	}
	size_t sizes[32], nsizes = 0, max = 8;
	for (char *tok = strtok(sizes_arg, ","); tok != NULL && nsizes < 32; tok = strtok(NULL, ",")) {
		sizes[nsizes] = strtoull(tok, NULL, 10);
		if (sizes[nsizes] > max)
			max = sizes[nsizes];
		nsizes++;
	}
	char err[256];
	const char *lib = getenv("MSCCLPP_FABRIC_LIBRARY"); // as package fabric loads it
	if (mscclpp_fab_load(lib != NULL && lib[0] != '\0' ? lib : "libfabric.so.1", err, sizeof err) != 0) {
		fprintf(stderr, "load libfabric: %s\n", err);
		return 1;
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
	struct card mine = {.addr_len = sizeof mine.addr, .buf = (uint64_t)(uintptr_t)s.buf, .key = s.key}, theirs;
	int r = mscclpp_fab_name(s.e, mine.addr, &mine.addr_len);
	if (r != 0)
		fail("fi_getname", r);
	if (write(wr, &mine, sizeof mine) != sizeof mine || read(rd, &theirs, sizeof theirs) != sizeof theirs)
		return 1;
	if ((r = mscclpp_fab_insert(s.e, theirs.addr, &s.peer)) != 0)
		fail("fi_av_insert", r);
	s.raddr = mscclpp_fab_virt_addr(s.e) ? theirs.buf : 0;
	s.rkey = theirs.key;
	const uint32_t version = mscclpp_fab_version();
	if (rank == 0)
		printf("# fabric_rma_pingpong: provider %s, libfabric %u.%u, fi_writedata; one-way us\n",
		       mscclpp_fab_provider_name(s.e), version >> 16, version & 0xffff);
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
				write_data(&s, len, seq);
				wait_data(&s, seq);
			} else {
				wait_data(&s, seq);
				write_data(&s, len, seq);
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
	mscclpp_fab_unreg(s.mr);
	mscclpp_fab_close(s.e);
	if (rank == 0) {
		int status = 0;
		waitpid(child, &status, 0);
		return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	}
	return 0;
}
