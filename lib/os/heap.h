/*
 * heap.h - make malloc's heap resident ahead of the work that fills it.
 *
 * A process that reads a configuration or a database touches its first
 * megabyte of heap page by page, and each new page is a page fault: about
 * 7-15 us each on a paravirtualised machine (1.5-2 ms a megabyte), where
 * one MADV_POPULATE_WRITE over the same megabyte takes 0.3 ms.
 */
#ifndef FORGE_OS_HEAP_H
#define FORGE_OS_HEAP_H

#include <stddef.h>

/*
 * Grow malloc's main heap by `bytes` and make those pages resident in one
 * system call, so that the allocations which follow land on pages already
 * mapped.  The heap then stays: freed memory goes back to the kernel only
 * above 4 MiB at the top, and blocks under 4 MiB come from the heap rather
 * than from mmap (whose pages would fault again at every allocation).
 * Changes malloc's settings for the whole process (mallopt); the first call
 * only does anything.  Best effort: on a kernel before 5.14 (no
 * MADV_POPULATE_WRITE), or when malloc fails, the pages fault as before.
 * Not thread-safe: call it from main's thread before starting others.
 */
void heap_warm(size_t bytes);

#endif
