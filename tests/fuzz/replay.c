/*
 * replay.c - a main() for the libFuzzer targets without libFuzzer (as LLVM's
 * StandaloneFuzzTargetMain.c).  `make check` links each tests/fuzz/fuzz_*.c
 * with it against the ASan+UBSan build of the library, so the corpora are
 * replayed under the sanitizers by the compiler that built the library, with
 * no second (clang, -fsanitize=fuzzer) build of it.
 *
 *   fuzz_NAME [-runs=N] [-seed=S] [-max_len=L] [-artifact_prefix=P] PATH...
 *
 * Each file named, and each regular file in a directory named (in name
 * order), goes once to LLVMFuzzerTestOneInput(); then N inputs (default 0)
 * made from them by a few random edits each: bit flips, bytes set, inserted,
 * erased or copied, a piece of another input spliced in, a cut.  S (default
 * 1) picks the edits: the same corpus and S give the same inputs, on any
 * machine.  Inputs are at most L bytes (default: the largest file, at least
 * 4096).  The options have libFuzzer's spelling, so the real fuzzer built by
 * `make fuzz` takes the same command line (where -runs counts its own runs).
 *
 * Each input is in a buffer of exactly its size, so ASan sees a read past
 * its end.  When a sanitizer stops the process (ASan; UBSan, which here
 * aborts), the process crashes or aborts, or LSan finds memory an input
 * leaked (checked whenever an input's mallocs and frees do not balance), the
 * input is named on stderr and, if it is an edited one, written to
 * P "crash-SEED-I" (or "leak-SEED-I") to reproduce with `fuzz_NAME FILE`.
 *
 * Exit status: 0 every input ran; 1 bad usage, an unreadable path or no
 * memory, or an input leaked; ASan's status (ASAN_OPTIONS exitcode) when it
 * stops the process; killed by SIGABRT when UBSan or an assert stops it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The sanitizers' interface, when one is linked in. */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));
int __sanitizer_install_malloc_and_free_hooks(void (*on_malloc)(const volatile void *, size_t),
					      void (*on_free)(const volatile void *)) __attribute__((weak));
int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

struct input {
	char *name;
	uint8_t *data;
	size_t size;
};

static struct input *corpus;
static size_t corpus_len, corpus_cap;

/* What runs now, for the death callback: a corpus file, or edited input I. */
static const char *current_name;
static const uint8_t *current_data;
static size_t current_size;
static uint64_t current_index, seed = 1;
static char artifact_prefix[4096];

static volatile size_t mallocs, frees;

static void on_malloc(const volatile void *ptr, size_t size)
{
	(void)ptr;
	(void)size;
	mallocs++;
}

static void on_free(const volatile void *ptr)
{
	(void)ptr;
	frees++;
}

static void say(const char *s)
{
	ssize_t n = write(STDERR_FILENO, s, strlen(s));

	(void)n;
}

/* Write the current edited input to P KIND-SEED-I; async-signal-safe. */
static void save_current(const char *kind)
{
	char path[sizeof(artifact_prefix) + 64];
	int n = snprintf(path, sizeof(path), "%s%s-%" PRIu64 "-%" PRIu64, artifact_prefix, kind,
			 seed, current_index);
	int fd;

	if (n < 0 || (size_t)n >= sizeof(path))
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		say("replay: cannot write the input to ");
		say(path);
		say("\n");
		return;
	}
	for (size_t done = 0; done < current_size;) {
		ssize_t w = write(fd, current_data + done, current_size - done);

		if (w <= 0)
			break;
		done += (size_t)w;
	}
	close(fd);
	say("replay: the input is in ");
	say(path);
	say("\n");
}

static void report(const char *kind)
{
	char line[160];

	if (current_name) {
		say("replay: ");
		say(kind);
		say(" on ");
		say(current_name);
		say("\n");
		return;
	}
	snprintf(line, sizeof(line), "replay: %s on edited input %" PRIu64 " (-seed=%" PRIu64 ")\n",
		 kind, current_index, seed);
	say(line);
	save_current(kind);
}

static void on_death(void)
{
	static volatile sig_atomic_t reported;

	if (current_data && !reported) {
		reported = 1;
		report("crash");
	}
}

/* An abort() (UBSan's, an assert's), or a crash with no sanitizer to see it. */
static void on_signal(int sig)
{
	on_death();
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * UBSan stops with abort() rather than exit(): with gcc its runtime is not
 * ASan's, so ASan's death callback does not see it, the SIGABRT handler does.
 * UBSAN_OPTIONS still overrides this.
 */
const char *__ubsan_default_options(void);

const char *__ubsan_default_options(void)
{
	return "abort_on_error=1:print_stacktrace=1";
}

static void *xrealloc(void *ptr, size_t size)
{
	void *p = realloc(ptr, size ? size : 1);

	if (!p) {
		fputs("replay: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xrealloc(NULL, n), s, n);
}

/* Read the file PATH into the corpus; 0, or -1 with a message. */
static int add_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct input in = { 0 };
	size_t cap = 0;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (in.size == cap) {
			cap = cap ? cap * 2 : 4096;
			in.data = xrealloc(in.data, cap);
		}
		size_t n = fread(in.data + in.size, 1, cap - in.size, f);

		in.size += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "replay: %s: read error\n", path);
		fclose(f);
		free(in.data);
		return -1;
	}
	fclose(f);
	in.name = xstrdup(path);
	if (corpus_len == corpus_cap) {
		corpus_cap = corpus_cap ? corpus_cap * 2 : 64;
		corpus = xrealloc(corpus, corpus_cap * sizeof(*corpus));
	}
	corpus[corpus_len++] = in;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add PATH, a file or a directory's regular files in name order. */
static int add_path(const char *path)
{
	struct stat st;
	char **names = NULL;
	size_t len = 0, cap = 0;
	struct dirent *de;
	DIR *dir;
	int rc = 0;

	if (stat(path, &st) == -1) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return add_file(path);
	dir = opendir(path);
	if (!dir) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((de = readdir(dir))) {
		size_t n = strlen(path) + strlen(de->d_name) + 2;
		char *full = xrealloc(NULL, n);

		snprintf(full, n, "%s/%s", path, de->d_name);
		if (de->d_name[0] == '.' || stat(full, &st) == -1 || !S_ISREG(st.st_mode)) {
			free(full);
			continue;
		}
		if (len == cap) {
			cap = cap ? cap * 2 : 64;
			names = xrealloc(names, cap * sizeof(*names));
		}
		names[len++] = full;
	}
	closedir(dir);
	if (len)
		qsort(names, len, sizeof(*names), by_name);
	for (size_t i = 0; i < len; i++) {
		if (rc == 0 && add_file(names[i]) == -1)
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

/* xorshift64*: the same sequence everywhere for one seed. */
static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

/* A number in [0, n); n > 0. */
static size_t below(size_t n)
{
	return (size_t)(rng() % n);
}

/*
 * Make edited input I in BUF (capacity MAX_LEN bytes) from a corpus input;
 * returns its size.
 */
static size_t mutate(uint8_t *buf, size_t max_len)
{
	static const uint8_t special[] = { 0, 0xff, 0x7f, 0x80, '\n', '\r', '\t', ' ', '"', '\\',
					   '{', '}', '[', ']', ':', ',', '-', '0', '9', '*', '@' };
	size_t size = 0;

	if (corpus_len) {
		const struct input *base = &corpus[below(corpus_len)];

		size = base->size < max_len ? base->size : max_len;
		memcpy(buf, base->data, size);
	}
	for (size_t edits = 1 + below(4); edits > 0; edits--) {
		size_t at = below(size + 1), n;

		switch (below(size ? 8 : 1)) {
		case 0: /* insert 1-8 bytes */
			n = 1 + below(8);
			if (n > max_len - size)
				n = max_len - size;
			memmove(buf + at + n, buf + at, size - at);
			for (size_t i = 0; i < n; i++)
				buf[at + i] = below(2) ? (uint8_t)rng() : special[below(sizeof(special))];
			size += n;
			break;
		case 1: /* flip a bit */
			buf[below(size)] ^= (uint8_t)(1u << below(8));
			break;
		case 2: /* set a byte */
			buf[below(size)] = (uint8_t)rng();
			break;
		case 3: /* set a byte the parsers care about */
			buf[below(size)] = special[below(sizeof(special))];
			break;
		case 4: /* erase a range */
			at = below(size);
			n = 1 + below(size - at < 16 ? size - at : 16);
			memmove(buf + at, buf + at + n, size - at - n);
			size -= n;
			break;
		case 5: { /* copy a range of itself over another place */
			size_t from = below(size), to = below(size);

			n = 1 + below(size - from);
			if (n > size - to)
				n = size - to;
			memmove(buf + to, buf + from, n);
			break;
		}
		case 6: { /* splice in a piece of another input */
			const struct input *other = &corpus[below(corpus_len)];
			size_t from;

			if (!other->size)
				break;
			from = below(other->size);
			n = 1 + below(other->size - from);
			if (n > max_len - size)
				n = max_len - size;
			memmove(buf + at + n, buf + at, size - at);
			memcpy(buf + at, other->data + from, n);
			size += n;
			break;
		}
		default: /* cut the end */
			size = below(size);
			break;
		}
	}
	return size;
}

/* Run one input from a buffer of exactly its size; checks for leaks. */
static void run_one(const uint8_t *data, size_t size)
{
	uint8_t *copy = xrealloc(NULL, size);
	size_t before_mallocs, before_frees;

	if (size)
		memcpy(copy, data, size);
	current_data = copy;
	current_size = size;
	before_mallocs = mallocs;
	before_frees = frees;
	LLVMFuzzerTestOneInput(copy, size);
	if (__lsan_do_recoverable_leak_check && mallocs - before_mallocs != frees - before_frees &&
	    __lsan_do_recoverable_leak_check()) {
		report("leak");
		_exit(1);
	}
	current_data = NULL;
	free(copy);
}

static int number(const char *arg, const char *value, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(value, &end, 10);
	if (errno || end == value || *end || value[0] == '-') {
		fprintf(stderr, "replay: %s: not a number\n", arg);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t runs = 0, max_len = 0;
	size_t largest = 0;
	uint8_t *buf;
	int paths = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strncmp(a, "-runs=", 6) == 0) {
			if (number(a, a + 6, &runs) == -1)
				return 1;
		} else if (strncmp(a, "-seed=", 6) == 0) {
			if (number(a, a + 6, &seed) == -1)
				return 1;
		} else if (strncmp(a, "-max_len=", 9) == 0) {
			if (number(a, a + 9, &max_len) == -1)
				return 1;
		} else if (strncmp(a, "-artifact_prefix=", 17) == 0) {
			if (strlen(a + 17) >= sizeof(artifact_prefix)) {
				fprintf(stderr, "replay: %s: too long\n", a);
				return 1;
			}
			memcpy(artifact_prefix, a + 17, strlen(a + 17) + 1);
		} else if (a[0] == '-') {
			fprintf(stderr, "usage: %s [-runs=N] [-seed=S] [-max_len=L] [-artifact_prefix=P] PATH...\n",
				argv[0]);
			return 1;
		} else {
			if (add_path(a) == -1)
				return 1;
			paths++;
		}
	}
	if (!paths) {
		fprintf(stderr, "%s: no input: name corpus files or directories\n", argv[0]);
		return 1;
	}
	signal(SIGABRT, on_signal);
	if (__sanitizer_set_death_callback) {
		__sanitizer_set_death_callback(on_death);
	} else {
		signal(SIGSEGV, on_signal);
		signal(SIGBUS, on_signal);
		signal(SIGFPE, on_signal);
		signal(SIGILL, on_signal);
	}
	if (__sanitizer_install_malloc_and_free_hooks)
		__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);

	for (size_t i = 0; i < corpus_len; i++) {
		current_name = corpus[i].name;
		run_one(corpus[i].data, corpus[i].size);
		if (corpus[i].size > largest)
			largest = corpus[i].size;
	}
	current_name = NULL;
	if (!max_len)
		max_len = largest > 4096 ? largest : 4096;
	buf = xrealloc(NULL, max_len);
	rng_state = seed * UINT64_C(0x9e3779b97f4a7c15) + 1;
	for (current_index = 0; current_index < runs; current_index++)
		run_one(buf, mutate(buf, max_len));
	free(buf);
	for (size_t i = 0; i < corpus_len; i++) {
		free(corpus[i].name);
		free(corpus[i].data);
	}
	free(corpus);
	fprintf(stderr, "%s: %zu inputs + %" PRIu64 " edited ones (-seed=%" PRIu64 "), no crash\n", argv[0],
		corpus_len, runs, seed);
	return 0;
}
