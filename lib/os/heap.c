/*
 * heap.c - make malloc's heap resident ahead of its use.  See heap.h.
 */
#include "os/heap.h"

#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

void heap_warm(size_t bytes)
{
	static bool done;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), first, end;
	char *block;

	if (done || bytes == 0)
		return;
	done = true;
	/* under 4 MiB, from the heap (not mmap) and kept there when freed;
	 * a small pad, since the block below already grows the heap */
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	mallopt(M_TRIM_THRESHOLD, 4 << 20);
	mallopt(M_TOP_PAD, 64 << 10);
	if (!(block = malloc(bytes)))
		return;
	first = ((uintptr_t)block + page - 1) & ~(page - 1);
	end = ((uintptr_t)block + bytes) & ~(page - 1);
	if (end > first)
		(void)madvise((void *)first, end - first, MADV_POPULATE_WRITE);
	free(block);
}
