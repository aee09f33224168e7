/* testrun_cov.c - coverage reports (lcov, Cobertura) and JUnit report
 * discovery; see testrun.h. */
#include "testrun/testrun.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "testrun/junit.h"
#include "testrun/testrun_internal.h"
#include "os/sandbox.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPORT_MAX (64u << 20)

int testrun_lcov_percent(double *out, const char *text, size_t len)
{
	struct tr_lines it;
	const char *line;
	size_t n;
	long lf = 0, lh = 0, da = 0, da_hit = 0;
	bool have_lf = false;

	tr_lines_init(&it, text, len);
	while (tr_next_line(&it, &line, &n)) {
		const char *p = line + 3;
		size_t left = n >= 3 ? n - 3 : 0;
		long v;
		if (tr_prefix(line, n, "LF:") && tr_number(&p, &left, &v)) {
			lf += v;
			have_lf = true;
		} else if (tr_prefix(line, n, "LH:") && tr_number(&p, &left, &v)) {
			lh += v;
		} else if (tr_prefix(line, n, "DA:")) {
			/* DA:<line>,<hits>[,<checksum>] */
			const char *comma = memchr(line, ',', n);
			if (comma) {
				const char *h = comma + 1;
				size_t hl = n - (size_t)(h - line);
				if (tr_number(&h, &hl, &v)) {
					da++;
					da_hit += v > 0;
				}
			}
		}
	}
	if (have_lf && lf > 0) {
		*out = 100.0 * (double)lh / (double)lf;
		return 0;
	}
	if (da > 0) {
		*out = 100.0 * (double)da_hit / (double)da;
		return 0;
	}
	return -1;
}

struct cobertura {
	bool found;
	double rate;
	bool have_rate;
	long covered, valid;
};

static int cob_start(void *payload, const char *name, size_t len, const struct junit_xml_attr *a, size_t n)
{
	struct cobertura *c = payload;

	if (len != 8 || memcmp(name, "coverage", 8) != 0 || c->found)
		return 0;
	c->found = true;
	c->covered = c->valid = -1;
	for (size_t i = 0; i < n; i++) {
		const char *v = a[i].value;
		size_t vl = a[i].value_len;
		long num;
		if (a[i].name_len == 9 && memcmp(a[i].name, "line-rate", 9) == 0)
			c->have_rate = forge_parse_double(&c->rate, v) == 0;
		else if (a[i].name_len == 13 && memcmp(a[i].name, "lines-covered", 13) == 0 &&
			 tr_number(&v, &vl, &num) && vl == 0)
			c->covered = num;
		else if (a[i].name_len == 11 && memcmp(a[i].name, "lines-valid", 11) == 0 &&
			 tr_number(&v, &vl, &num) && vl == 0)
			c->valid = num;
	}
	return 1;	/* the root is all we need */
}

int testrun_cobertura_percent(double *out, const char *xml, size_t len)
{
	struct cobertura c = { 0 };
	struct junit_xml_handler h = { .start = cob_start };

	(void)junit_xml_scan(xml, len, &h, &c);
	if (!c.found)
		return -1;
	if (c.covered >= 0 && c.valid > 0) {
		*out = 100.0 * (double)c.covered / (double)c.valid;
		return 0;
	}
	if (c.have_rate && c.rate >= 0 && c.rate <= 1) {
		*out = 100.0 * c.rate;
		return 0;
	}
	return -1;
}

/* Read rel, a regular file beneath root of at most REPORT_MAX bytes
 * written at or after since.  As the file tools read: the tests that wrote
 * it are the model's code, and a symlink they left there to a file outside
 * is not followed out of the worktree by this unconfined process. */
static char *read_fresh(size_t *len, const struct sandbox_root *root, const char *rel, time_t since)
{
	struct stat st;
	char *data;
	int fd;

	if (!root || sandbox_open_read(&fd, &st, root, rel) < 0)
		return NULL;
	if (st.st_mtime < since || (unsigned long long)st.st_size > REPORT_MAX) {
		close(fd);
		return NULL;
	}
	data = xmalloc((size_t)st.st_size + 1);
	ssize_t n = read(fd, data, (size_t)st.st_size);
	close(fd);
	*len = n > 0 ? (size_t)n : 0;
	data[*len] = '\0';
	return data;
}

int testrun_coverage(jv *out, const char *dir, time_t since)
{
	static const struct {
		const char *path;
		bool lcov;
	} places[] = {
		{ "lcov.info", true }, { "coverage/lcov.info", true }, { "coverage.lcov", true },
		{ "build/coverage.info", true }, { "coverage.info", true },
		{ "cobertura.xml", false }, { "coverage.xml", false }, { "coverage/cobertura-coverage.xml", false },
		{ "coverage/cobertura.xml", false }, { "target/cobertura.xml", false },
		{ "build/coverage.xml", false },
	};

	struct sandbox_root *root = NULL;

	*out = jv_null();
	if (sandbox_root_open(&root, dir) < 0)
		return 0;
	for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
		size_t len = 0;
		double pct;
		char *data = read_fresh(&len, root, places[i].path, since);
		if (!data)
			continue;
		int rc = places[i].lcov ? testrun_lcov_percent(&pct, data, len)
					: testrun_cobertura_percent(&pct, data, len);
		free(data);
		if (rc == 0) {
			jv c = jv_object();
			c = json_set(c, "line", jv_number((double)(long)(pct * 100 + 0.5) / 100));
			c = json_set(c, "format", jv_string(places[i].lcov ? "lcov" : "cobertura"));
			*out = json_set(c, "file", jv_string(places[i].path));
			break;
		}
	}
	sandbox_root_free(root);
	return 0;
}

static const char *const junit_places[] = {
	"junit.xml", "report.xml", "test-results.xml", "test-report.xml", "junit/*.xml",
	"build/junit.xml", "build/test-results/*.xml", "build/test-results/*/*.xml",
	"test-results/*.xml", "test-reports/*.xml", "reports/junit.xml", "reports/*.xml",
	"target/surefire-reports/TEST-*.xml", "target/nextest/*/junit.xml", "target/junit.xml",
};

/* What tells one version of a file from another: change time to the
 * nanosecond, size and inode ("" when it is not a regular file). */
static jv file_stamp(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return jv_string("");
	return jv_string_fmt("%lld.%09ld:%lld:%llu", (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
			     (long long)st.st_size, (unsigned long long)st.st_ino);
}

/* The regular files of pattern (relative to dir, or absolute), sorted by
 * name, each with its stamp, into *files (an object). */
static void add_matches(jv *files, const char *dir, const char *pattern)
{
	struct buf pat = BUF_INIT;
	glob_t g;

	if (pattern[0] == '/')
		buf_adds(&pat, pattern);
	else
		buf_addf(&pat, "%s/%s", dir, pattern);
	if (glob(pat.buf, 0, NULL, &g) == 0) {
		for (size_t k = 0; k < g.gl_pathc; k++) {
			jv stamp = file_stamp(g.gl_pathv[k]);
			if (jv_string_length_bytes(jv_copy(stamp)) > 0)
				*files = jv_object_set(*files, jv_string(g.gl_pathv[k]), stamp);
			else
				jv_free(stamp);
		}
		globfree(&g);
	}
	buf_release(&pat);
}

/* Each place's files: an array of objects, path -> stamp, in the places' order. */
static jv junit_candidates(const char *dir, const char *configured)
{
	jv all = jv_array();

	if (configured && *configured) {
		jv files = jv_object();
		add_matches(&files, dir, configured);
		all = jv_array_append(all, files);
	}
	for (size_t i = 0; i < sizeof junit_places / sizeof junit_places[0]; i++) {
		jv files = jv_object();
		add_matches(&files, dir, junit_places[i]);
		all = jv_array_append(all, files);
	}
	return all;
}

jv testrun_junit_snapshot(const char *dir, const char *configured)
{
	jv places = junit_candidates(dir, configured), seen = jv_object();

	jv_array_foreach(places, i, files) {
		seen = jv_object_merge(seen, files);
	}
	jv_free(places);
	return seen;
}

jv testrun_find_junit(const char *dir, const char *configured, jv before, const char *exclude)
{
	jv places = junit_candidates(dir, configured), out = jv_array();
	char *skip = exclude ? realpath(exclude, NULL) : NULL;

	jv_array_foreach(places, i, files) {
		if (jv_array_length(jv_copy(out)) == 0) {
			jv_object_foreach(files, path, stamp) {
				jv was = jv_object_get(jv_copy(before), jv_copy(path));
				char *real = realpath(jv_string_value(path), NULL);
				bool fresh = !(jv_get_kind(was) == JV_KIND_STRING && jv_equal(jv_copy(was), jv_copy(stamp)));
				if (fresh && !(skip && real && strcmp(real, skip) == 0))
					out = jv_array_append(out, jv_copy(path));
				free(real);
				jv_free(was);
				jv_free(path);
				jv_free(stamp);
			}
		}
		jv_free(files);
	}
	jv_free(places);
	jv_free(before);
	free(skip);
	return out;
}
