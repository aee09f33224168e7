/* sha256.c - SHA-256 as FIPS 180-4 §6.2 describes it. */
#include "core/sha256.h"

#include <string.h>

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t s[8], const unsigned char p[64])
{
	uint32_t w[64], a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];

	for (int t = 0; t < 16; t++)
		w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
		       (uint32_t)p[4 * t + 2] << 8 | p[4 * t + 3];
	for (int t = 16; t < 64; t++) {
		uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^ (w[t - 15] >> 3);
		uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^ (w[t - 2] >> 10);
		w[t] = w[t - 16] + s0 + w[t - 7] + s1;
	}
	for (int t = 0; t < 64; t++) {
		uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	s[0] += a;
	s[1] += b;
	s[2] += c;
	s[3] += d;
	s[4] += e;
	s[5] += f;
	s[6] += g;
	s[7] += h;
}

void sha256_init(struct sha256 *h)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(h->state, iv, sizeof iv);
	h->bytes = 0;
	h->used = 0;
}

void sha256_update(struct sha256 *h, const void *data, size_t len)
{
	const unsigned char *p = data;

	h->bytes += len;
	if (h->used) {
		size_t take = 64 - h->used < len ? 64 - h->used : len;

		memcpy(h->block + h->used, p, take);
		h->used += take;
		p += take;
		len -= take;
		if (h->used < 64)
			return;
		compress(h->state, h->block);
		h->used = 0;
	}
	for (; len >= 64; p += 64, len -= 64)
		compress(h->state, p);
	memcpy(h->block, p, len);
	h->used = len;
}

void sha256_final(unsigned char out[32], struct sha256 *h)
{
	uint64_t bits = h->bytes * 8;

	h->block[h->used++] = 0x80;
	if (h->used > 56) {
		memset(h->block + h->used, 0, 64 - h->used);
		compress(h->state, h->block);
		h->used = 0;
	}
	memset(h->block + h->used, 0, 56 - h->used);
	for (int i = 0; i < 8; i++)
		h->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
	compress(h->state, h->block);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(h->state[i] >> 24);
		out[4 * i + 1] = (unsigned char)(h->state[i] >> 16);
		out[4 * i + 2] = (unsigned char)(h->state[i] >> 8);
		out[4 * i + 3] = (unsigned char)h->state[i];
	}
}

void sha256_hex(char out[65], struct sha256 *h)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char d[32];

	sha256_final(d, h);
	for (int i = 0; i < 32; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[64] = '\0';
}
