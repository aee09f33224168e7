/*
 * test_snapshot.c - state patches (engine/snapshot.h): the change between
 * two states, applied to the first, gives the second — keys added, changed,
 * removed, values that are null or equal, non-object inputs.
 */
#include "core/json.h"
#include "engine/snapshot.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static jv parse(const char *text)
{
	return json_parse(text, strlen(text));
}

/* patch(a, b) applied to a equals b, and has the expected form. */
static void round_trip(const char *a_text, const char *b_text, const char *want_patch)
{
	jv a = parse(a_text), b = parse(b_text);
	jv patch = state_patch(a, b);
	char *got = json_dumps(jv_copy(patch), true);

	CHECK_STR(got, want_patch);
	jv rebuilt = state_patch_apply(jv_copy(a), patch);
	jv want = jv_get_kind(b) == JV_KIND_OBJECT ? jv_copy(b) : jv_object();

	CHECK_MSG(json_equal(rebuilt, want), "%s + %s", a_text, got);
	free(got);
	jv_free(want);
	jv_free(rebuilt);
	jv_free(patch);
	jv_free(a);
	jv_free(b);
}

static void test_patches(void)
{
	round_trip("{}", "{}", "{\"set\":{},\"unset\":[]}");
	round_trip("{\"a\":1,\"b\":{\"x\":[1,2]}}", "{\"a\":1,\"b\":{\"x\":[1,2]}}", "{\"set\":{},\"unset\":[]}");
	round_trip("{\"a\":1}", "{\"a\":2,\"c\":null}", "{\"set\":{\"a\":2,\"c\":null},\"unset\":[]}");
	round_trip("{\"a\":1,\"gone\":true}", "{\"a\":1}", "{\"set\":{},\"unset\":[\"gone\"]}");
	round_trip("{\"a\":null}", "{}", "{\"set\":{},\"unset\":[\"a\"]}");
	round_trip("{\"b\":{\"x\":1,\"y\":2}}", "{\"b\":{\"y\":2}}", "{\"set\":{\"b\":{\"y\":2}},\"unset\":[]}");
	round_trip("null", "{\"a\":1}", "{\"set\":{\"a\":1},\"unset\":[]}");
	round_trip("{\"a\":1}", "[1]", "{\"set\":{},\"unset\":[\"a\"]}");
}

static void test_apply_ignores_junk(void)
{
	jv junk = parse("{\"set\":5,\"unset\":[3,\"a\"]}");
	jv s = state_patch_apply(parse("{\"a\":1}"), junk);
	char *got = json_dumps(s, true);

	jv_free(junk);

	CHECK_STR(got, "{}");
	free(got);
	s = state_patch_apply(jv_null(), jv_null());
	CHECK(jv_get_kind(s) == JV_KIND_OBJECT && jv_object_length(jv_copy(s)) == 0);
	jv_free(s);
}

int main(void)
{
	RUN(test_patches);
	RUN(test_apply_ignores_junk);
	return unit_done();
}
