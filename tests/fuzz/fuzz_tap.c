/* fuzz_tap.c - libFuzzer target: the TAP 13/14 reader (lib/testrun/tap.c). */
#include "testrun/tap.h"
#include "testrun/testrun.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct testrun r;

	testrun_init(&r);
	if (tap_parse(&r, (const char *)data, size) == 1)
		testrun_count(&r);
	testrun_release(&r);
	/* The generic reader too: TAP, then the runners' summary lines. */
	testrun_init(&r);
	testrun_parse(&r, (const char *)data, size);
	testrun_release(&r);
	return 0;
}
