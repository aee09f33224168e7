/* fuzz_junit.c - libFuzzer target: the JUnit XML reader (lib/testrun/junit.c),
 * and writing back what it read. */
#include "testrun/junit.h"
#include "testrun/testrun.h"

#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	struct testrun r;

	if (!sink)
		sink = fopen("/dev/null", "w");
	testrun_init(&r);
	if (junit_parse(&r, (const char *)data, size) == 1 && sink)
		junit_write(sink, &r, "fuzz", 1.5);
	testrun_release(&r);
	return 0;
}
