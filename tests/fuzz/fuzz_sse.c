/*
 * fuzz_sse.c - libFuzzer target: the Server-Sent Events parser (lib/net/sse.c).
 * The first byte picks the size of the pieces the stream is fed in, as the
 * network splits it anywhere; the rest is the stream.
 */
#include "net/sse.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_event(void *payload, const char *event, const char *data, size_t len)
{
	size_t *n = payload;

	/* The contract: both NUL-terminated, len is data's length. */
	*n += strlen(event) + len + (data[len] == '\0' ? 0 : 1);
	return *n > (1u << 30);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sse_parser p;
	size_t seen = 0, piece;

	if (size == 0)
		return 0;
	piece = (size_t)data[0] % 17 + 1;
	data++;
	size--;
	sse_init(&p, 4096, on_event, &seen);
	int rc = 0;
	for (size_t off = 0; off < size && rc == 0; off += piece)
		rc = sse_feed(&p, (const char *)data + off, size - off < piece ? size - off : piece);
	if (rc == 0)
		sse_finish(&p);
	sse_release(&p);
	return 0;
}
