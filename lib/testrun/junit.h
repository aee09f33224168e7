/*
 * junit.h - JUnit XML: a small, bounded XML scanner for the subset test
 * reports use, the reader of JUnit reports into a struct testrun, and the
 * writer of forge-test's --junit report.
 *
 * The scanner is expat (a well-kept, fuzzed parser) behind a lenient
 * pre-pass that keeps what test tools write readable: a DOCTYPE is dropped
 * (no entity is ever defined or expanded, nothing external is fetched); the
 * five predefined entities and character references (&#N; &#xH;) are
 * decoded, an unknown or invalid one is kept as written; bytes that are not
 * UTF-8 or not XML characters (control characters, NUL) come through
 * as they were, as do a raw CR and tabs and newlines in attribute values;
 * text outside elements is ignored and documents may follow one another.
 * Bounds: JUNIT_MAX_BYTES of input (more is refused), JUNIT_MAX_DEPTH open
 * elements, JUNIT_MAX_ATTRS attributes per element (more are dropped).
 * Malformed input (an unterminated tag, a mismatched end tag, EOF inside an
 * element) stops the scan with -1 and a message after everything before it
 * was delivered.
 *
 * Reports understood: <testsuites>/<testsuite> (nested or not, also a bare
 * <testsuite> root), <testcase name classname file line time status>,
 * <failure>/<error> (message attribute, text or CDATA body), <skipped>
 * (also ctest's status="notrun"/"disabled"), <system-out>/<system-err>,
 * and the rerun elements <flakyFailure>/<flakyError> (the test passed on a
 * retry: flaky) and <rerunFailure>/<rerunError>.  When a suite's tests /
 * failures / errors / skipped attributes count more tests than it lists,
 * the difference is added to the counts (a report that names only its
 * failures still counts right).
 */
#ifndef FORGE_JUNIT_H
#define FORGE_JUNIT_H

#include <stdio.h>
#include <stddef.h>

struct testrun;

#define JUNIT_MAX_DEPTH 256
#define JUNIT_MAX_ATTRS 64
#define JUNIT_MAX_BYTES (64u << 20)

struct junit_xml_attr {
	const char *name;       /* borrowed from the input, not terminated */
	size_t name_len;
	const char *value;      /* decoded, NUL-terminated; valid during the callback */
	size_t value_len;
};

/* Callbacks (any may be NULL); a non-zero return stops the scan and is
 * returned.  Names are borrowed slices of the input; text is decoded and
 * valid during the call only (several calls may carry one element's text). */
struct junit_xml_handler {
	int (*start)(void *payload, const char *name, size_t len, const struct junit_xml_attr *attrs,
		     size_t nattrs);
	int (*end)(void *payload, const char *name, size_t len);
	int (*text)(void *payload, const char *text, size_t len);
};

/* Scan xml[0..len).  0, -1 with a message (malformed), or a callback's
 * non-zero return. */
int junit_xml_scan(const char *xml, size_t len, const struct junit_xml_handler *h, void *payload);

/*
 * Read a JUnit report.  Returns 1 with *out filled (format "junit") when
 * the document has a testsuites/testsuite/testcase element (a truncated
 * document still gives what it held, with a note), 0 when it is not a
 * JUnit report (with a message).  *out must be initialised.
 */
int junit_parse(struct testrun *out, const char *xml, size_t len);

/*
 * Write r as a JUnit report to f: <testsuites name="forge-test"> holding
 * one <testsuite name=suite_name> with a <testcase> for every case r names
 * (failures as <failure>, errors as <error>, each with the case's
 * classification as its type ("failure" when none); skipped tests as
 * <skipped>; flaky ones as passed with a <flakyFailure>), and the suite's
 * attributes from r's counts.  time_s < 0 leaves time out.  0, or -1 when
 * writing failed (errno set).
 */
int junit_write(FILE *f, const struct testrun *r, const char *suite_name, double time_s);

#endif
