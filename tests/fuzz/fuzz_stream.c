/*
 * fuzz_stream.c - libFuzzer target: the JSON-lines stream reader
 * (lib/data/stream.c) with schema validation on, as every filter reads stdin.
 * The input is the whole stdin of a filter.
 */
#include "core/forge.h"
#include "data/stream.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	struct stream_options opt = { .validate = true, .max_line = 1u << 16 };
	struct stream_input in;
	struct stream_out out;
	int fd = memfd_create("fuzz-stream", 0);

	if (fd < 0)
		return 0;
	if (!sink)
		sink = fopen("/dev/null", "w");
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	lseek(fd, 0, SEEK_SET);
	FILE *from = fdopen(fd, "r");
	if (!from) {
		close(fd);
		return 0;
	}
	stream_out_init(&out, sink, "fuzz", NULL);
	stream_input_init(&in);
	if (stream_read(&in, from, &out, &opt) == -1)
		(void)forge_last_error();
	stream_input_release(&in);
	fclose(from);
	return 0;
}
