/* test_heap.c - heap_warm() makes the heap resident ahead of its use
 * (lib/os/heap.h): allocations after it take (almost) no page faults. */
#include "os/heap.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* 512 KiB in blocks of 200 bytes, each written: without heap_warm() a page
 * fault per new page (about 128); with it, the pages are already there. */
static long faults_of_allocating(void)
{
	enum { N = (512 << 10) / 200 };
	static char *blocks[N];
	long before = minor_faults();

	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(200);
		memset(blocks[i], 1, 200);
	}
	long faults = minor_faults() - before;
	for (int i = 0; i < N; i++)
		free(blocks[i]);
	return faults;
}

static void test_warm_heap_takes_no_faults(void)
{
	char probe[4096] __attribute__((aligned(4096)));

#if defined(__SANITIZE_ADDRESS__)
	SKIP("ASan's malloc is not the heap heap_warm() grows");
#endif
	if (madvise(probe, sizeof probe, 23) != 0)
		SKIP("no MADV_POPULATE_WRITE on this kernel (Linux 5.14)");
	heap_warm(1 << 20);
	long warm = faults_of_allocating();
	CHECK_MSG(warm < 16, "%ld page faults allocating 512 KiB after heap_warm(1 MiB)", warm);
	heap_warm(1 << 20);    /* once per process: nothing more, nothing breaks */
	CHECK(faults_of_allocating() < 16);
}

int main(void)
{
	RUN(test_warm_heap_takes_no_faults);
	return unit_done();
}
