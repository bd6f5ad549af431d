# libmscclpp: build, test and install. `make help` lists the targets.

GO      ?= go
NVCC    ?= nvcc
MPICXX  ?= mpicxx
CXX     ?= g++
PREFIX  ?= /usr/local
BUILD   := build
ABS_BUILD := $(abspath $(BUILD))
comma    := ,

LIB      := $(BUILD)/lib/libmscclpp.so
PC       := $(BUILD)/lib/pkgconfig/mscclpp.pc $(BUILD)/lib/pkgconfig/mscclpp_nccl.pc
# include/nccl.h is installed as include/mscclpp_nccl/nccl.h, so that it never shadows a real
# NCCL's header for programs that did not ask for it (pkg-config mscclpp_nccl adds the folder).
HEADERS  := $(filter-out include/nccl.h,$(wildcard include/*.h)) $(wildcard include/mscclpp/*.h)
GO_SRC   := go.mod go.sum $(shell find capi core channels collectives kernels internal include -type f \( -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.s' -o -name '*.ptx' \) -not -name '*_test.go')

# The library's kernels: kernels/src/*.cu compiled to PTX in kernels/ptx/, which is committed and
# embedded by package kernels (so `go build` needs no nvcc). No -lineinfo: it would write
# absolute paths into the PTX.
KERNEL_SRC      := $(wildcard kernels/src/*.cu)
KERNEL_PTX      := $(patsubst kernels/src/%.cu,kernels/ptx/%.ptx,$(KERNEL_SRC))
NVCC_PTX_FLAGS  := -std=c++17 -O3 -ptx -arch=compute_80 -Iinclude

# What the library built here embeds (SASS=1, the default; SASS=0 embeds the PTX alone and needs
# no nvcc): per module a compressed fatbin with the PTX, and for the modules in KERNEL_SASS machine
# code for sm_80 and sm_90 too. Those are the round kernels that reduce, which take CUDA 11.8's
# ptxas about 25 of the 27 s it spends on all modules for sm_90, so a first run does not wait for
# the driver to compile them; the rest (2.5 s with that ptxas) are left to the driver, whose
# compiler is newer than the toolkit's: on 2 x H200 the small-message kernels ran 1-3 % slower as
# CUDA 11.8's machine code than as the driver's, the AllGather of 2 MiB 5 %. The
# fatbins are made from the committed PTX and not committed; next to each, the PTX's sha256,
# which the kernels package's tests compare with the PTX. kernels/fatbin/flags records what
# they were built with, and $(BUILD)/go-tags the Go build tags, so changing either rebuilds.
SASS              ?= 1
KERNEL_SASS       := allreduce_direct allreduce_port allreduce_rsag allreduce_rsag_port reducescatter_put
KERNEL_FATBIN     := $(patsubst kernels/ptx/%.ptx,kernels/fatbin/%.fatbin,$(KERNEL_PTX))
KERNEL_FATBIN_SUM := $(KERNEL_FATBIN:.fatbin=.ptx.sha256)
NVCC_FATBIN_FLAGS := -fatbin -arch=compute_80 -Xfatbin=-compress-all
KERNEL_IMAGES     := $(if $(filter-out 0,$(SASS)),$(KERNEL_FATBIN) $(KERNEL_FATBIN_SUM))
GO_TAGS           := $(if $(filter-out 0,$(SASS)),-tags mscclpp_sass)
GO_TAGS_STAMP     := $(BUILD)/go-tags
KERNEL_SASS_UNKNOWN := $(filter-out $(KERNEL_PTX:kernels/ptx/%.ptx=%),$(KERNEL_SASS))
$(if $(KERNEL_SASS_UNKNOWN),$(error KERNEL_SASS names modules with no PTX: $(KERNEL_SASS_UNKNOWN)))

# $(call write-if-changed,FILE,TEXT): FILE holds TEXT afterwards, and is rewritten (so that what
# depends on it is rebuilt) only when it held something else.
write-if-changed = @mkdir -p $(dir $(1)); echo '$(2)' | cmp -s - $(1) || echo '$(2)' > $(1)

# mpirun refuses to run as root unless told; the examples need more ranks than CI has cores.
MPIRUN       ?= mpirun
MPIRUN_FLAGS := --oversubscribe $(if $(filter 0,$(shell id -u)),--allow-run-as-root) \
	--mca btl self,vader --mca btl_vader_single_copy_mechanism none
NP           ?= 4

# Examples are built against build/ only, through the pkg-config file there.
PKG          := PKG_CONFIG_PATH=$(ABS_BUILD)/lib/pkgconfig pkg-config mscclpp
EXAMPLES     := $(BUILD)/examples/bootstrap $(BUILD)/examples/hostmem_ring
TEST_BINS    := $(BUILD)/tests/refusals $(BUILD)/tests/core_refusals $(BUILD)/tests/env_after_load $(BUILD)/tests/fabric_hostmem

# A recipe that fails leaves no half-written target behind.
.DELETE_ON_ERROR:

PHONY_NCCL := nccl nccl-test
.PHONY: $(PHONY_NCCL) FORCE all lib headers pkgconfig install deps test vet gotest fuzz abi-check kernels kernels-check examples \
	examples-test capi-test mpi-gotest cuda-examples fabric-test fatbins tools gpu-bundle gpu-pack gpu-test gpu-bench gpu-compare gpu-profile clean help

all: lib nccl headers pkgconfig ## build libmscclpp.so, the NCCL layer, the public headers and the pkg-config files

lib: $(LIB)

$(LIB): $(GO_SRC) $(KERNEL_IMAGES) $(GO_TAGS_STAMP)
	@mkdir -p $(BUILD)/lib $(BUILD)/cgo
	$(GO) build $(GO_TAGS) -buildmode=c-shared -trimpath \
		-ldflags='-extldflags=-Wl,-soname,libmscclpp.so' -o $@ ./capi
	@# cgo writes the header of the exports next to the library; it is not a public header.
	@mv $(BUILD)/lib/libmscclpp.h $(BUILD)/cgo/libmscclpp_cgo.h

# The NCCL layer (nccl/, include/nccl.h): a C library over libmscclpp.so's public API that exports
# NCCL's functions. libmscclpp_nccl.so is what LD_PRELOAD and -lmscclpp_nccl take; the same code
# as lib/nccl/libnccl.so.2 serves programs that load libnccl.so.2 from LD_LIBRARY_PATH. Each
# finds libmscclpp.so beside it (RPATH), so there is one Go runtime however they are loaded.
NCCL_LAYER   := $(BUILD)/lib/libmscclpp_nccl.so
NCCL_COMPAT  := $(BUILD)/lib/nccl/libnccl.so.2
NCCL_SRC     := $(wildcard nccl/*.c)
NCCL_CFLAGS  := -std=c11 -D_GNU_SOURCE -O2 -g -fPIC -fvisibility=hidden -Wall -Wextra -Werror -Iinclude
NCCL_LDFLAGS := -shared -Wl,--no-undefined -L$(BUILD)/lib -lmscclpp -ldl -lpthread

nccl: $(NCCL_LAYER) $(NCCL_COMPAT) ## build the NCCL layer: libmscclpp_nccl.so and lib/nccl/libnccl.so.2

$(NCCL_LAYER): $(NCCL_SRC) nccl/shim.h include/nccl.h $(LIB)
	$(CC) $(NCCL_CFLAGS) $(NCCL_SRC) -o $@ $(NCCL_LDFLAGS) -Wl,-soname,libmscclpp_nccl.so -Wl,-rpath,'$$ORIGIN'

$(NCCL_COMPAT): $(NCCL_SRC) nccl/shim.h include/nccl.h $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(NCCL_CFLAGS) $(NCCL_SRC) -o $@ $(NCCL_LDFLAGS) -Wl,-soname,libnccl.so.2 -Wl,-rpath,'$$ORIGIN/..'

headers: $(HEADERS) include/nccl.h
	@mkdir -p $(BUILD)/include/mscclpp $(BUILD)/include/mscclpp_nccl
	cp $(filter include/%.h,$(filter-out include/mscclpp/%,$(HEADERS))) $(BUILD)/include/
	cp include/mscclpp/*.h $(BUILD)/include/mscclpp/
	cp include/nccl.h $(BUILD)/include/mscclpp_nccl/

pkgconfig: $(PC)

$(BUILD)/lib/pkgconfig/%.pc: scripts/%.pc.in
	@mkdir -p $(dir $@)
	sed 's|@PREFIX@|$(ABS_BUILD)|' $< > $@

install: all ## install into PREFIX (default /usr/local)
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/lib/nccl $(DESTDIR)$(PREFIX)/include/mscclpp \
		$(DESTDIR)$(PREFIX)/include/mscclpp_nccl
	install -m 0755 $(LIB) $(NCCL_LAYER) $(DESTDIR)$(PREFIX)/lib/
	install -m 0755 $(NCCL_COMPAT) $(DESTDIR)$(PREFIX)/lib/nccl/
	cp $(BUILD)/include/*.h $(DESTDIR)$(PREFIX)/include/
	cp $(BUILD)/include/mscclpp/*.h $(DESTDIR)$(PREFIX)/include/mscclpp/
	cp include/nccl.h $(DESTDIR)$(PREFIX)/include/mscclpp_nccl/
	for pc in mscclpp mscclpp_nccl; do \
		sed 's|@PREFIX@|$(PREFIX)|' scripts/$$pc.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/$$pc.pc; \
	done

deps: ## install CUDA 11.8 (nvcc, cuda.h, libcuda), OpenMPI and build tools on Debian 12
	./scripts/deps.sh

# ---------------------------------------------------------------------------------------------
# Tests that need no GPU. `make test` is what CI runs.

test: vet kernels-check gotest fabric-test fuzz abi-check capi-test nccl-test examples-test mpi-gotest cuda-examples ## everything that needs no GPU
	@echo "make test: all passed"

vet: $(KERNEL_IMAGES)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet ./...
	$(if $(GO_TAGS),$(GO) vet $(GO_TAGS) ./kernels ./collectives)

gotest: $(KERNEL_IMAGES)
	$(GO) test -race -count=1 ./...
	$(if $(GO_TAGS),$(GO) test -count=1 $(GO_TAGS) ./kernels ./collectives)

# The libfabric transport with 32 ranks in 32 processes, each its own host, over tcp on loopback:
# run alone (not beside the other packages' tests) and without the race detector, whose 32
# instrumented processes would crowd a small machine (gotest runs the same test with 8).
fabric-test: $(BUILD)/bin/fabric_rma_pingpong
	MSCCLPP_TEST_FABRIC_RANKS=32 $(GO) test -count=1 -run '^TestFabricRanksAsHosts$$' ./core
	@# The C baseline of bench/fabric_pingpong runs on both providers (it exits non-zero on any error).
	timeout 60 $(BUILD)/bin/fabric_rma_pingpong -p shm -S 8,65536 -I 100
	timeout 60 $(BUILD)/bin/fabric_rma_pingpong -p tcp -d lo -S 8,65536 -I 100

# The write-with-data ping-pong on package fabric's C side alone, bench/fabric_pingpong's second
# baseline (C, no Go; libfabric dlopened as the library does).
$(BUILD)/bin/fabric_rma_pingpong: bench/fabric_rma_pingpong/main.c core/fabric/shim.c core/fabric/shim.h
	@mkdir -p $(BUILD)/bin
	$(CC) -std=gnu11 -O2 -Wall -Icore/fabric -o $@ bench/fabric_rma_pingpong/main.c core/fabric/shim.c -ldl

# A count of executions, not a duration: with a duration Go 1.26's fuzz coordinator can fail a
# target with a bare "context deadline exceeded" as the time runs out (golang/go#75804, fixed in
# Go 1.27), although no failing input was found. 100000 runs take a few seconds here.
FUZZTIME ?= 100000x
FUZZ_PKGS ?= ./core/bootstrap ./core ./core/legacy
fuzz: ## run each fuzz target briefly
	@for pkg in $(FUZZ_PKGS); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$target for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

kernels: $(KERNEL_PTX) ## regenerate kernels/ptx/*.ptx after editing kernels/src

kernels/ptx/%.ptx: kernels/src/%.cu $(wildcard kernels/src/*.cuh) $(HEADERS)
	$(NVCC) $(NVCC_PTX_FLAGS) $< -o $@

fatbins: $(KERNEL_FATBIN) $(KERNEL_FATBIN_SUM) ## build kernels/fatbin/ from kernels/ptx/ (make does when SASS=1)

# ptxas's report on the machine code (registers, spills) is kept beside it, for kernels-check.
kernels/fatbin/%.fatbin kernels/fatbin/%.ptx.sha256: kernels/ptx/%.ptx kernels/fatbin/flags
	@rm -f kernels/fatbin/$*.ptxas.log
	$(NVCC) $(NVCC_FATBIN_FLAGS) -code=$(if $(filter $*,$(KERNEL_SASS)),sm_80$(comma)sm_90$(comma))compute_80 $< -o kernels/fatbin/$*.fatbin \
		$(if $(filter $*,$(KERNEL_SASS)),-Xptxas -v 2> kernels/fatbin/$*.ptxas.log)
	sha256sum $< | cut -d' ' -f1 > kernels/fatbin/$*.ptx.sha256

# Rewritten only when the fatbins' flags change (so a Makefile edit alone rebuilds nothing); the
# fatbins of modules that no longer exist are removed here, for package kernels embeds them all.
kernels/fatbin/flags: FORCE
	@rm -f $(filter-out $(KERNEL_FATBIN) $(KERNEL_FATBIN_SUM),$(wildcard kernels/fatbin/*.fatbin kernels/fatbin/*.sha256))
	$(call write-if-changed,$@,$(NVCC_FATBIN_FLAGS) sass: $(KERNEL_SASS))

# Rewritten only when SASS changes the Go build tags: the library is then built again.
$(GO_TAGS_STAMP): FORCE
	$(call write-if-changed,$@,$(GO_TAGS))

kernels-check: ## fail when the committed PTX is not what kernels/src compiles to
	@mkdir -p $(BUILD)/ptx-check
	@for src in $(KERNEL_SRC); do \
		name=$$(basename $$src .cu); \
		$(NVCC) $(NVCC_PTX_FLAGS) $$src -o $(BUILD)/ptx-check/$$name.ptx || exit 1; \
		cmp -s $(BUILD)/ptx-check/$$name.ptx kernels/ptx/$$name.ptx || { echo "kernels/ptx/$$name.ptx is stale: run make kernels"; exit 1; }; \
	done
	@test "$$(ls kernels/ptx | wc -l)" -eq "$(words $(KERNEL_SRC))" || { echo "kernels/ptx has PTX without a source"; exit 1; }
	@# Register spills would slow the kernels down: ptxas (the toolkit's, close to the driver's JIT)
	@# must fit every kernel in registers on the architectures the PTX targets.
	@# The modules built as machine code have ptxas's report from the fatbin build (the same
	@# ptxas, both architectures): it is read rather than compiled again.
	@for ptx in $(KERNEL_PTX); do \
		log=kernels/fatbin/$$(basename $$ptx .ptx).ptxas.log; \
		if [ -f $$log ] && [ $$log -nt $$ptx ] && grep -q sm_90 $$log; then \
			spills=$$(grep -c '[1-9][0-9]* bytes spill stores' $$log); \
			[ "$$spills" -eq 0 ] || { echo "$$ptx: $$spills kernels spill registers ($$log)"; exit 1; }; \
			continue; \
		fi; \
		for arch in sm_80 sm_90; do \
			spills=$$(ptxas -arch=$$arch -v $$ptx -o /dev/null 2>&1 | grep -c '[1-9][0-9]* bytes spill stores'); \
			[ "$$spills" -eq 0 ] || { echo "$$ptx: $$spills kernels spill registers on $$arch"; exit 1; }; \
		done; \
	done
	@echo "kernels-check: $(words $(KERNEL_SRC)) PTX files up to date, no register spills on sm_80 and sm_90"

abi-check: ## the legacy header's sizes, offsets, enums and macros, compiled by g++ and nvcc
	./tests/abi/run.sh

$(BUILD)/examples/bootstrap: examples/mpi/bootstrap/main.cpp all
	@mkdir -p $(dir $@)
	$(MPICXX) -std=c++17 -O2 -Wall -Wextra -DOMPI_SKIP_MPICXX $< $$($(PKG) --cflags --libs) -o $@

$(BUILD)/examples/hostmem_ring: examples/mpi/hostmem_ring/main.cpp all
	@mkdir -p $(dir $@)
	$(MPICXX) -std=c++17 -O2 -Wall -Wextra -DOMPI_SKIP_MPICXX $< $$($(PKG) --cflags --libs) -o $@

$(BUILD)/tests/refusals: tests/capi/refusals.cpp all
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O2 -Wall -Wextra $< $$($(PKG) --cflags --libs) -o $@

$(BUILD)/tests/core_refusals: tests/capi/core_refusals.c tests/capi/check.h all
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -Wall -Wextra -Wpedantic $< $$($(PKG) --cflags --libs) -lpthread -o $@

$(BUILD)/tests/fabric_hostmem: tests/capi/fabric_hostmem.c tests/capi/check.h all
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -Wall -Wextra -Wpedantic $< $$($(PKG) --cflags --libs) -lpthread -o $@

$(BUILD)/tests/env_after_load: tests/capi/env_after_load.c all
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -Wall -Wextra -Wpedantic -D_POSIX_C_SOURCE=200112L $< $$($(PKG) --cflags --libs) -o $@


# The CUDA programs (the examples and tutorials of examples/, the GPU tests of tests/gpu, the
# benchmarks of bench/) are compiled and linked here too, so CI catches a header or export change
# that breaks them; they run on the GPU host (make gpu-test, gpu-bench, gpu-profile), each binary
# named after its folder. tests/nccl/ops.cu is an NCCL program: it is linked with the NCCL layer.
CUDA_PROGRAMS := $(wildcard examples/mpi/*/main.cu examples/tutorials/*/main.cu tests/gpu/*/main.cu bench/*/main.cu) tests/nccl/ops.cu
NVCC_FLAGS    := -std=c++17 -O2 -arch=sm_90 -DOMPI_SKIP_MPICXX -Xcompiler -Wall

cuda-examples: all
	@mkdir -p $(BUILD)/examples
	@for src in $(CUDA_PROGRAMS); do \
		name=$$(basename $$(dirname $$src)); \
		[ $$name != nccl ] || name=nccl_$$(basename $$src .cu); \
		echo "nvcc $$src"; \
		$(NVCC) $(NVCC_FLAGS) -I$(BUILD)/include -I$(BUILD)/include/mscclpp_nccl $$($(MPICXX) --showme:compile) $$src -o $(BUILD)/examples/$$name \
			-L$(BUILD)/lib -lmscclpp $$([ $$name != nccl_ops ] || echo -lmscclpp_nccl) -Xlinker -rpath,$(ABS_BUILD)/lib \
			-Xlinker "$$($(MPICXX) --showme:link | sed 's/ /,/g')" || exit 1; \
	done

examples: $(EXAMPLES) cuda-examples ## build the C/C++ and CUDA examples against build/

capi-test: $(TEST_BINS) ## C ABI refusals, log handler, error strings and setenv after load, from C++ and C programs
	$(BUILD)/tests/refusals
	./tests/capi/core_c_exports.sh $(LIB) include/mscclpp/core.h
	./tests/capi/core_c_exports.sh $(LIB) include/mscclpp/collectives.h
	$(BUILD)/tests/core_refusals
	$(BUILD)/tests/fabric_hostmem
	$(BUILD)/tests/env_after_load

nccl-test: all ## the NCCL layer: header layout, exports, and routing to a fake libnccl.so.2 under mpirun
	./tests/nccl/layout.sh
	./tests/nccl/exports.sh $(BUILD)
	@# The layout check linked with the layer: every function the header declares must resolve.
	@mkdir -p $(BUILD)/tests
	$(CC) -std=c11 -Iinclude tests/nccl/layout_check.c -Wl,--no-as-needed -L$(BUILD)/lib -lmscclpp_nccl \
		-Wl,-rpath,$(ABS_BUILD)/lib -o $(BUILD)/tests/nccl_symbols
	LAYOUT_REQUIRE_SYMBOLS=1 $(BUILD)/tests/nccl_symbols >/dev/null
	./tests/nccl/routing.sh $(BUILD) 2 "$(MPIRUN) $(MPIRUN_FLAGS)"

examples-test: examples ## run the examples under mpirun with $(NP) ranks
	./examples/mpi/bootstrap/run.sh $(BUILD)/examples/bootstrap $(NP) "$(MPIRUN) $(MPIRUN_FLAGS)"
	timeout 120 $(MPIRUN) $(MPIRUN_FLAGS) -np $(NP) $(BUILD)/examples/hostmem_ring --separate-hosts

mpi-gotest: ## the Go bootstrap test with the unique id shared through MPI (tests/mpi/gompi)
	@mkdir -p $(BUILD)/tests
	$(GO) test -c -race -o $(BUILD)/tests/gompi_bootstrap.test ./tests/mpi/gompi
	$(MPIRUN) $(MPIRUN_FLAGS) -np $(NP) $(BUILD)/tests/gompi_bootstrap.test -test.count=1

# ---------------------------------------------------------------------------------------------
# GPU tests. The GPU host has no Go: `make gpu-bundle` here builds the library and the Go test
# binaries into build/; carry build/ there and run `make gpu-test`, which needs only CUDA and MPI.

GPU_GO_TESTS := core/cuda core core/fabric core/legacy core/proxy channels collectives

TOOLS := $(wildcard cmd/*)

tools: $(KERNEL_IMAGES) ## build the command-line tools (cmd/*) into build/bin
	@mkdir -p $(BUILD)/bin
	@for t in $(TOOLS); do echo "go build ./$$t"; $(GO) build $(GO_TAGS) -ldflags="-s -w" -o $(BUILD)/bin/$$(basename $$t) ./$$t || exit 1; done

gpu-bundle: all tools $(BUILD)/bin/fabric_rma_pingpong ## build everything `make gpu-test` needs into build/ (needs Go, and nvcc unless SASS=0)
	$(GO) build $(GO_TAGS) -ldflags="-s -w" -o $(BUILD)/bin/example-collectives ./examples/go/collectives
	$(GO) build -ldflags="-s -w" -o $(BUILD)/bin/fabric_pingpong ./bench/fabric_pingpong
	@mkdir -p $(BUILD)/gotest
	@for pkg in $(GPU_GO_TESTS); do \
		if [ -d $$pkg ]; then \
			echo "go test -c ./$$pkg"; \
			$(GO) test -c $(GO_TAGS) -ldflags="-s -w" -o $(BUILD)/gotest/$$(echo $$pkg | tr / _).test ./$$pkg || exit 1; \
		fi; \
	done

# The bundle as one compressed file (28 MB), for carrying to a GPU host with a size limit: carry
# gpu/ instead of build/; the GPU-host scripts unpack it into build/ when build/lib/libmscclpp.so
# is missing there.
GPU_PACK := gpu/bundle.tar.xz

# What the bundle holds: the library, the headers, the Go tests (gotest/) and the tools (bin/:
# mscclpp-bench and the Go example). With the checkout (17 MB) it fits the 64 MiB that may travel;
# GPU_PACK_DIRS="lib include gotest" (15 MB) leaves the tools out.
GPU_PACK_DIRS ?= lib include gotest bin

gpu-pack: gpu-bundle ## gpu-bundle, packed into gpu/bundle.tar.xz (GPU_PACK_DIRS: which folders of build/)
	@mkdir -p $(dir $(GPU_PACK))
	XZ_OPT=-T0 tar -cJf $(GPU_PACK) -C $(BUILD) $(GPU_PACK_DIRS)
	@ls -l $(GPU_PACK)

gpu-bench: ## on the GPU host: build and run the benchmarks against build/ (ARGS=... passes options)
	./scripts/gpu-bench.sh $(ARGS)

gpu-compare: ## on the GPU host: forced algorithms side by side (OP=allreduce ALGOS="a b" ARGS="-b 64M -e 1G -R 1")
	./scripts/gpu-compare.sh $(ARGS)

gpu-profile: ## on the GPU host: one collective under ncu, ours and NCCL's kernels (NP= OP= BYTES= REGISTERED=1)
	./scripts/gpu-profile.sh

gpu-test: ## on the GPU host: build the CUDA/MPI programs against build/, run them and the Go test binaries
	./scripts/gpu-test.sh

clean:
	rm -rf $(BUILD) kernels/fatbin $(dir $(GPU_PACK))

help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s '	'
