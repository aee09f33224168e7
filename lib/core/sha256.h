/*
 * sha256.h - SHA-256 (FIPS 180-4), for keys that must not collide even
 * when an adversary (a hostile model writing the files) picks the input:
 * a cache keyed by content must never hand one input's result to another.
 *
 *   struct sha256 h;
 *   sha256_init(&h);
 *   sha256_update(&h, data, len);   (any number of times)
 *   sha256_hex(hex, &h);            (finishes h: init it again to reuse)
 */
#ifndef FORGE_SHA256_H
#define FORGE_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t state[8];
	uint64_t bytes;                 /* total length so far */
	unsigned char block[64];        /* a partial block */
	size_t used;                    /* bytes of block in use */
};

void sha256_init(struct sha256 *h);
void sha256_update(struct sha256 *h, const void *data, size_t len);
/* The digest, 32 bytes; finishes h. */
void sha256_final(unsigned char out[32], struct sha256 *h);
/* The digest as 64 lowercase hex digits and a NUL; finishes h. */
void sha256_hex(char out[65], struct sha256 *h);

#endif
