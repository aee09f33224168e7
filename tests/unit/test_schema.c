/* test_schema.c - unit tests of lib/schema (the validator and schemas/). */
#include "data/schema.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/resource.h"
#include "unit.h"

#include <pthread.h>
#include <stdlib.h>

static jv parse(const char *text)
{
	return json_parse(text, strlen(text));
}

/* Compile text; NULL (message in forge_last_error) when refused. */
static struct schema *compile(const char *text)
{
	struct schema *s = NULL;
	jv doc = parse(text);

	if (!jv_is_valid(doc)) {
		char *m = json_invalid_msg(doc);
		printf("#   bad test JSON: %s\n", m);
		free(m);
		return NULL;
	}
	if (schema_compile(&s, doc) < 0)
		return NULL;
	return s;
}

/* errors' first string is msg; borrows errors. */
static bool first_is(jv errors, const char *msg)
{
	jv e = jv_array_get(jv_copy(errors), 0);
	bool same = jv_get_kind(e) == JV_KIND_STRING && strcmp(jv_string_value(e), msg) == 0;

	jv_free(e);
	return same;
}

/* The errors of schema_validate_all on instance text, joined by " | ", in a
 * static buffer ("" when valid). */
static const char *all_errors(const struct schema *s, const char *instance)
{
	static char msg[4096];
	jv x = parse(instance), errors;
	struct buf b = BUF_INIT;

	schema_validate_all(&errors, s, x);
	jv_array_foreach(errors, i, e) {
		buf_adds(&b, i ? " | " : "");
		buf_adds(&b, jv_string_value(e));
		jv_free(e);
	}
	snprintf(msg, sizeof msg, "%s", b.len ? b.buf : "");
	buf_release(&b);
	jv_free(errors);
	jv_free(x);
	return msg;
}

/* Validate instance text; returns the message ("" when valid) in a static
 * buffer so checks read naturally. */
static const char *check(const struct schema *s, const char *instance)
{
	static char msg[1024];
	jv x = parse(instance), errors;
	int rc = schema_validate(s, x);
	bool quiet = schema_is_valid(s, x);

	snprintf(msg, sizeof msg, "%s", rc == 0 ? "" : forge_last_error());
	if (quiet != (rc == 0))
		snprintf(msg, sizeof msg, "schema_is_valid disagrees on %s", instance);
	/* every error, the first one first */
	if (schema_validate_all(&errors, s, x) != rc)
		snprintf(msg, sizeof msg, "schema_validate_all disagrees on %s", instance);
	else if (rc < 0 && !first_is(errors, msg))
		snprintf(msg, sizeof msg, "schema_validate_all's first error differs on %s", instance);
	jv_free(errors);
	jv_free(x);
	return msg;
}

static bool refused_with(const char *schema, const char *want)
{
	struct schema *s = compile(schema);

	if (s) {
		schema_free(s);
		printf("#   accepted: %s\n", schema);
		return false;
	}
	if (strstr(forge_last_error(), want))
		return true;
	printf("#   refused with '%s', want '%s'\n", forge_last_error(), want);
	return false;
}

static void test_refuses_unsupported_keyword(void)
{
	CHECK(refused_with("{\"properties\":{\"x\":{\"dependentRequired\":{}}}}",
			   "#/properties/x: unsupported keyword 'dependentRequired'"));
	CHECK(refused_with("{\"unevaluatedProperties\":false}",
			   "#: unsupported keyword 'unevaluatedProperties'"));
	CHECK(refused_with("{\"$defs\":{\"a/b\":{\"items\":{\"contains\":true}}}}",
			   "#/$defs/a~1b/items: unsupported keyword 'contains'"));
	CHECK(refused_with("{\"anyOf\":[true,{\"if\":true}]}", "#/anyOf/1: unsupported keyword 'if'"));
	CHECK(refused_with("{\"items\":[true]}", "#: unsupported 'items' array"));
	CHECK(refused_with("{\"$ref\":\"other.json#/x\"}", "#: unsupported $ref 'other.json#/x'"));
	CHECK(refused_with("{\"$ref\":\"#foo\"}", "anchors are not supported"));
	CHECK(refused_with("{\"properties\":{\"a\":{\"$id\":\"x\"}}}",
			   "#/properties/a: unsupported keyword '$id' below the root"));
}

static void test_refuses_malformed(void)
{
	CHECK(refused_with("{\"minLength\":-1}", "#: 'minLength' must be a non-negative integer"));
	CHECK(refused_with("{\"maxItems\":1.5}", "'maxItems' must be a non-negative integer"));
	CHECK(refused_with("{\"multipleOf\":0}", "'multipleOf' must be greater than 0"));
	CHECK(refused_with("{\"type\":\"str\"}", "unknown type 'str'"));
	CHECK(refused_with("{\"type\":[\"string\",\"string\"]}", "not a distinct type name"));
	CHECK(refused_with("{\"required\":[1]}", "'required' item 0 is not a string"));
	CHECK(refused_with("{\"pattern\":\"(\"}", "#: invalid regular expression '('"));
	CHECK(refused_with("{\"patternProperties\":{\"[\":true}}",
			   "#/patternProperties/[: invalid regular expression"));
	CHECK(refused_with("{\"properties\":{\"a\":1}}",
			   "#/properties/a: a schema must be an object or a boolean"));
	CHECK(refused_with("{\"$ref\":\"#/$defs/nope\"}",
			   "#: $ref '#/$defs/nope' does not point to a schema"));
	CHECK(refused_with("{\"$ref\":\"#/enum/0\",\"enum\":[{}]}", "does not point to a schema"));
	CHECK(refused_with("{\"allOf\":[]}", "'allOf' must be a non-empty array"));
	CHECK(refused_with("[]", "#: a schema must be an object or a boolean"));
}

static void test_refuses_ref_cycles(void)
{
	CHECK(refused_with("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}},"
			   "\"$ref\":\"#/$defs/a\"}", "never descends into the instance"));
	CHECK(refused_with("{\"anyOf\":[{\"type\":\"null\"},{\"$ref\":\"#\"}]}",
			   "never descends into the instance"));
	/* Recursion through properties is fine: it descends. */
	struct schema *s = compile("{\"properties\":{\"next\":{\"$ref\":\"#\"}},"
				   "\"additionalProperties\":false}");
	CHECK_MSG(s, "%s", forge_last_error());
	CHECK_STR(check(s, "{\"next\":{\"next\":{\"next\":{}}}}"), "");
	CHECK_STR(check(s, "{\"next\":{\"next\":{\"nxt\":{}}}}"),
		  ".next.next: unexpected property 'nxt'");
	schema_free(s);
}

/* The kind of a refusal: what this validator does not implement (a full
 * one may take the schema: an MCP tool is offered all the same), or a
 * schema that breaks JSON Schema (the tool is left out). */
static int refusal_kind(const char *text)
{
	struct schema *s = NULL;
	bool unsupported = true;

	if (schema_compile_checked(&s, parse(text), &unsupported) == 0) {
		schema_free(s);
		return 0;
	}
	return unsupported ? 'u' : 'i';
}

static void test_refusal_kinds(void)
{
	static const char *const unsupported[] = {
		"{\"type\":\"object\",\"if\":{\"required\":[\"a\"]},\"then\":{\"required\":[\"b\"]}}",
		"{\"properties\":{\"x\":{\"dependentRequired\":{}}}}",
		"{\"items\":[true]}",
		"{\"$ref\":\"other.json#/x\"}",
		"{\"$ref\":\"#foo\"}",
		"{\"properties\":{\"a\":{\"$id\":\"x\"}}}",
		"{\"pattern\":\"[^]\"}",
		"{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}",
		/* the first error decides: an unknown keyword before a bad type */
		"{\"properties\":{\"a\":{\"if\":true},\"b\":{\"type\":\"strng\"}}}",
	};
	static const char *const invalid[] = {
		"{\"type\":\"object\",\"properties\":\"nope\",\"required\":\"x\"}",
		"{\"type\":\"object\",\"required\":\"text\"}",
		"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"strng\"}}}",
		"{\"type\":\"object\",\"$ref\":\"#/nowhere\"}",
		"{\"minLength\":-1}",
		"{\"properties\":{\"a\":1}}",
		"{\"allOf\":[]}",
		"{\"title\":5}",
		"[]",
		/* the first error decides: a bad type before an unknown keyword */
		"{\"properties\":{\"a\":{\"type\":\"strng\"},\"b\":{\"if\":true}}}",
	};

	for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++)
		CHECK_MSG(refusal_kind(unsupported[i]) == 'u', "%s: %c", unsupported[i], refusal_kind(unsupported[i]));
	for (size_t i = 0; i < sizeof invalid / sizeof *invalid; i++)
		CHECK_MSG(refusal_kind(invalid[i]) == 'i', "%s: %c", invalid[i], refusal_kind(invalid[i]));
	CHECK(refusal_kind("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}") == 0);
}

static void test_annotations_accepted(void)
{
	struct schema *s = compile(
		"{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"$id\":\"urn:x\","
		"\"$comment\":\"c\",\"title\":\"t\",\"description\":\"d\",\"default\":1,"
		"\"examples\":[1],\"format\":\"email\",\"deprecated\":true,\"readOnly\":false,"
		"\"writeOnly\":false,\"type\":\"string\"}");

	CHECK_MSG(s, "%s", forge_last_error());
	CHECK_STR(check(s, "\"not an email\""), "");     /* format is not asserted */
	CHECK_STR(check(s, "1"), ".: expected string, got number");
	schema_free(s);
}

static void test_boolean_schemas(void)
{
	struct schema *t = compile("true");
	struct schema *f = compile("false");

	CHECK(t && f);
	CHECK_STR(check(t, "{\"a\":[1]}"), "");
	CHECK_STR(check(f, "null"), ".: no value is allowed here");
	schema_free(t);
	schema_free(f);
}

static const char plan_schema[] =
	"{\"type\":\"object\",\"properties\":{\"plan\":{\"type\":\"object\",\"properties\":"
	"{\"tasks\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":[\"id\"],"
	"\"properties\":{\"id\":{\"type\":\"string\"}}}}}}}}";

static void test_nested_error_paths(void)
{
	struct schema *s = compile(plan_schema);

	CHECK_MSG(s, "%s", forge_last_error());
	CHECK_STR(check(s, "{\"plan\":{\"tasks\":[{\"id\":\"a\"},{\"id\":\"b\"},{\"id\":3}]}}"),
		  ".plan.tasks[2].id: expected string, got number");
	CHECK_STR(check(s, "{\"plan\":{\"tasks\":[{\"id\":\"a\"},{}]}}"),
		  ".plan.tasks[1]: required property 'id' is missing");
	CHECK_STR(check(s, "{\"plan\":{\"tasks\":{}}}"), ".plan.tasks: expected array, got object");
	CHECK_STR(check(s, "[]"), ".: expected object, got array");
	schema_free(s);

	s = compile("{\"properties\":{\"a b\":{\"items\":{\"properties\":{\"x\\\"y\":"
		    "{\"type\":[\"integer\",\"null\"]}}}}}}");
	CHECK_MSG(s, "%s", forge_last_error());
	CHECK_STR(check(s, "{\"a b\":[{\"x\\\"y\":1.5}]}"),
		  ".\"a b\"[0].\"x\\\"y\": expected null or integer, got number");
	schema_free(s);

	s = compile("{\"items\":{\"type\":\"string\"}}");
	CHECK_STR(check(s, "[\"a\",true]"), ".[1]: expected string, got boolean");
	schema_free(s);
}

static void test_messages(void)
{
	struct schema *s = compile(
		"{\"properties\":{\"status\":{\"enum\":[\"ok\",\"rejected\",1,null]},"
		"\"k\":{\"const\":{\"a\":1}},\"n\":{\"minimum\":1,\"exclusiveMaximum\":10},"
		"\"s\":{\"minLength\":2,\"pattern\":\"^x\"},\"l\":{\"maxItems\":1,\"uniqueItems\":true},"
		"\"o\":{\"maxProperties\":1},\"one\":{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]},"
		"\"any\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]},\"not\":{\"not\":{\"type\":\"null\"}},"
		"\"m\":{\"multipleOf\":0.5}},\"additionalProperties\":false}");

	CHECK_MSG(s, "%s", forge_last_error());
	CHECK_STR(check(s, "{\"status\":\"maybe\"}"),
		  ".status: value is not one of the allowed values (ok, rejected, 1, null)");
	CHECK_STR(check(s, "{\"k\":{\"a\":2}}"), ".k: value must be {\"a\":1}");
	CHECK_STR(check(s, "{\"n\":0}"), ".n: 0 is less than the minimum 1");
	CHECK_STR(check(s, "{\"n\":10}"), ".n: 10 is not less than 10");
	CHECK_STR(check(s, "{\"s\":\"x\"}"), ".s: expected at least 2 characters, got 1");
	CHECK_STR(check(s, "{\"s\":\"yy\"}"), ".s: string does not match pattern '^x'");
	CHECK_STR(check(s, "{\"l\":[1,2]}"), ".l: expected at most 1 items, got 2");
	CHECK_STR(check(s, "{\"o\":{\"a\":1,\"b\":2}}"), ".o: expected at most 1 properties, got 2");
	CHECK_STR(check(s, "{\"one\":3}"), ".one: value matches more than one schema in oneOf");
	CHECK_STR(check(s, "{\"one\":-1.5}"),
		  ".one: value does not match any of the 2 schemas in oneOf");
	CHECK_STR(check(s, "{\"any\":1}"), ".any: value does not match any of the 2 schemas in anyOf");
	CHECK_STR(check(s, "{\"not\":null}"), ".not: value must not match the schema in 'not'");
	CHECK_STR(check(s, "{\"m\":0.7}"), ".m: 0.7 is not a multiple of 0.5");
	CHECK_STR(check(s, "{\"typo\":1}"), ".: unexpected property 'typo'");
	CHECK_STR(check(s, "{\"status\":1,\"k\":{\"a\":1.0},\"n\":9.5,\"s\":\"xy\",\"l\":[[]],"
			   "\"one\":-1,\"any\":null,\"not\":0,\"m\":1.5}"), "");
	schema_free(s);
}

/* Every error at once: siblings, items, required and members, the same one
 * once; after a value's failed keyword, not its other keywords; at most
 * SCHEMA_MAX_ERRORS, the message saying there were more. */
static void test_validate_all(void)
{
	struct schema *s = compile(
		"{\"type\":\"object\",\"required\":[\"a\",\"b\"],\"additionalProperties\":false,"
		"\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":5},"
		"\"l\":{\"items\":{\"type\":\"string\"},\"maxItems\":2},"
		"\"o\":{\"properties\":{\"x\":{\"const\":1},\"y\":{\"enum\":[\"p\"]}}},"
		"\"a\":{}, \"b\":{}, \"d\":{\"allOf\":[{\"type\":\"string\"},{\"type\":\"string\"}]}}}");
	jv errors, many = jv_array();

	CHECK_MSG(s, "%s", forge_last_error());
	CHECK_STR(all_errors(s, "{\"a\":1,\"b\":2}"), "");
	CHECK_STR(all_errors(s, "{\"n\":\"x\",\"l\":[1,\"ok\",true],\"o\":{\"x\":2,\"y\":\"q\"},\"typo\":0}"),
		  ".: required property 'a' is missing | .: required property 'b' is missing | "
		  ".n: expected integer, got string | .l: expected at most 2 items, got 3 | "
		  ".l[0]: expected string, got number | .l[2]: expected string, got boolean | "
		  ".o.x: value must be 1 | .o.y: value is not one of the allowed values (p) | "
		  ".: unexpected property 'typo'");
	/* one failed keyword of a value: its others are not added (the minimum) */
	CHECK_STR(all_errors(s, "{\"a\":1,\"b\":2,\"n\":1.5}"), ".n: expected integer, got number");
	/* two allOf branches saying the same: said once */
	CHECK_STR(all_errors(s, "{\"a\":1,\"b\":2,\"d\":1}"), ".d: expected string, got number");
	schema_free(s);

	s = compile("{\"items\":{\"type\":\"string\"}}");
	for (int i = 0; i < SCHEMA_MAX_ERRORS + 5; i++)
		many = jv_array_append(many, jv_number(i));
	CHECK_INT(schema_validate_all(&errors, s, many), -1);
	CHECK_INT(jv_array_length(jv_copy(errors)), SCHEMA_MAX_ERRORS);
	CHECK_MSG(strstr(forge_last_error(), ".[19]: expected string, got number; and more (only the first 20 are listed)"),
		  "%s", forge_last_error());
	CHECK(strncmp(forge_last_error(), ".[0]: expected string, got number; .[1]: ", 41) == 0);
	jv_free(errors);
	jv_free(many);
	schema_free(s);

	/* at a definition; a missing one is its one error */
	jv bad = parse("{\"id\":\"a\",\"phase\":\"plan\",\"need\":[],\"retry\":{\"max\":0}}");
	CHECK_INT(schema_validate_def_all(&errors, "pipeline.schema.json", "node", bad), -1);
	CHECK_STR(forge_last_error(), ".: unexpected property 'need'; .retry.max: 0 is less than the minimum 1");
	CHECK_INT(jv_array_length(errors), 2);
	CHECK_INT(schema_validate_def_all(&errors, "pipeline.schema.json", "nope", bad), -1);
	CHECK(first_is(errors, "schema 'pipeline.schema.json' has no definition 'nope'"));
	jv_free(errors);
	CHECK_INT(schema_validate_def_all(NULL, "pipeline.schema.json", "node", bad), -1);
	jv_free(bad);
}

static void test_refs(void)
{
	struct schema *s = compile(
		"{\"$defs\":{\"tilde~field\":{\"type\":\"integer\"},\"slash/field\":{\"type\":\"integer\"},"
		"\"percent%field\":{\"type\":\"integer\"},\"q\\\"t\":{\"type\":\"number\"},"
		"\"\":{\"$defs\":{\"\":{\"type\":\"null\"}}}},"
		"\"definitions\":{\"old\":{\"type\":\"boolean\"}},"
		"\"properties\":{\"tilde\":{\"$ref\":\"#/$defs/tilde~0field\"},"
		"\"slash\":{\"$ref\":\"#/$defs/slash~1field\"},"
		"\"percent\":{\"$ref\":\"#/$defs/percent%25field\"},"
		"\"quote\":{\"$ref\":\"#/$defs/q%22t\"},\"empty\":{\"$ref\":\"#/$defs//$defs/\"},"
		"\"old\":{\"$ref\":\"#/definitions/old\"},"
		"\"sib\":{\"$ref\":\"#/properties/tilde\",\"maximum\":5}}}");

	CHECK_MSG(s, "%s", forge_last_error());
	CHECK_STR(check(s, "{\"tilde\":1,\"slash\":2,\"percent\":3,\"quote\":1.5,\"empty\":null,"
			   "\"old\":true,\"sib\":5}"), "");
	CHECK_STR(check(s, "{\"tilde\":\"x\"}"), ".tilde: expected integer, got string");
	CHECK_STR(check(s, "{\"slash\":\"x\"}"), ".slash: expected integer, got string");
	CHECK_STR(check(s, "{\"percent\":\"x\"}"), ".percent: expected integer, got string");
	CHECK_STR(check(s, "{\"quote\":\"x\"}"), ".quote: expected number, got string");
	CHECK_STR(check(s, "{\"empty\":0}"), ".empty: expected null, got number");
	CHECK_STR(check(s, "{\"old\":0}"), ".old: expected boolean, got number");
	/* In 2020-12 a $ref applies alongside its siblings. */
	CHECK_STR(check(s, "{\"sib\":6}"), ".sib: 6 is greater than the maximum 5");
	CHECK_STR(check(s, "{\"sib\":1.5}"), ".sib: expected integer, got number");
	schema_free(s);

	/* A ref through the root's own $id stays local. */
	s = compile("{\"$id\":\"urn:uuid:deadbeef\",\"minimum\":30,\"properties\":{"
		    "\"foo\":{\"$ref\":\"urn:uuid:deadbeef\"},"
		    "\"bar\":{\"$ref\":\"urn:uuid:deadbeef#/$defs/s\"}},\"$defs\":{\"s\":{\"type\":\"string\"}}}");
	CHECK_MSG(s, "%s", forge_last_error());
	CHECK_STR(check(s, "{\"foo\":37,\"bar\":\"x\"}"), "");
	CHECK_STR(check(s, "{\"foo\":12}"), ".foo: 12 is less than the minimum 30");
	CHECK_STR(check(s, "{\"bar\":1}"), ".bar: expected string, got number");
	schema_free(s);

	/* An enum value that looks like a $ref is data, not a reference. */
	s = compile("{\"$defs\":{\"a\":{\"type\":\"string\"}},\"enum\":[{\"$ref\":\"#/$defs/a\"}]}");
	CHECK_MSG(s, "%s", forge_last_error());
	CHECK(check(s, "\"str\"")[0] != '\0');
	CHECK_STR(check(s, "{\"$ref\":\"#/$defs/a\"}"), "");
	schema_free(s);
}

static void test_arrays(void)
{
	struct schema *s = compile("{\"prefixItems\":[{\"type\":\"string\"}],\"items\":{\"type\":\"integer\"}}");

	CHECK_MSG(s, "%s", forge_last_error());
	CHECK_STR(check(s, "[\"x\",2,3]"), "");
	CHECK_STR(check(s, "[\"x\",\"y\"]"), ".[1]: expected integer, got string");
	CHECK_STR(check(s, "{\"0\":1}"), "");
	CHECK_STR(check(s, "[\"x\",1,2,3,4,5,6,7,8,9,10,11,12,\"z\"]"), ".[13]: expected integer, got string");
	schema_free(s);

	s = compile("{\"prefixItems\":[{},{}],\"items\":false}");
	CHECK_STR(check(s, "[1,2]"), "");
	CHECK_STR(check(s, "[1,2,3]"), ".[2]: no value is allowed here");
	schema_free(s);

	/* prefixItems inside allOf does not shift the outer items. */
	s = compile("{\"allOf\":[{\"prefixItems\":[{\"minimum\":3}]}],\"items\":{\"minimum\":5}}");
	CHECK(check(s, "[3,5]")[0] != '\0');
	CHECK_STR(check(s, "[5,5]"), "");
	schema_free(s);

	s = compile("{\"uniqueItems\":true}");
	CHECK_STR(check(s, "[1,\"1\",[1],{\"a\":1,\"b\":2}]"), "");
	CHECK_STR(check(s, "[1,1.0]"), ".: items [0] and [1] are equal, items must be unique");
	CHECK(check(s, "[{\"a\":1,\"b\":[2]},{\"b\":[2.0],\"a\":1}]")[0] != '\0');
	CHECK(check(s, "[0,false]")[0] == '\0');
	/* many strings (sorted, not compared pair by pair): the same pair named
	 * as the pairwise scan names it, the smallest first index first */
	CHECK_STR(check(s, "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]"), "");
	CHECK_STR(check(s, "[\"z\",\"b\",\"c\",\"q\",\"e\",\"f\",\"b\",\"h\",\"q\",\"b\",\"z\"]"),
		  ".: items [0] and [10] are equal, items must be unique");
	CHECK_STR(check(s, "[\"a\",\"b\",\"c\",\"q\",\"e\",\"f\",\"b\",\"h\",\"q\",\"b\",\"i\"]"),
		  ".: items [1] and [6] are equal, items must be unique");
	CHECK_STR(check(s, "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",1,\"a\"]"),
		  ".: items [0] and [9] are equal, items must be unique");
	schema_free(s);
}

static void test_strings_and_patterns(void)
{
	struct schema *s = compile("{\"minLength\":2,\"maxLength\":2}");

	/* Two code points, four bytes. */
	CHECK_STR(check(s, "\"\\u00e9\\u00e9\""), "");
	CHECK_STR(check(s, "\"\\ud83d\\udca9\\ud83d\\udca9\""), "");
	CHECK(check(s, "\"\\u00e9\"")[0] != '\0');
	schema_free(s);

	s = compile("{\"pattern\":\"a+\"}");                 /* unanchored */
	CHECK_STR(check(s, "\"xxaayy\""), "");
	CHECK(check(s, "\"xyz\"")[0] != '\0');
	CHECK_STR(check(s, "12"), "");                         /* ignores non-strings */
	schema_free(s);

	s = compile("{\"pattern\":\"^\\\\p{L}{2}$\"}");      /* UTF + UCP */
	CHECK_STR(check(s, "\"\\u00e9t\""), "");
	CHECK(check(s, "\"\\u00e91\"")[0] != '\0');
	schema_free(s);

	s = compile("{\"patternProperties\":{\"^x-\":{\"type\":\"string\"},\"o\":{\"minLength\":2}},"
		    "\"additionalProperties\":{\"type\":\"integer\"}}");
	CHECK_MSG(s, "%s", forge_last_error());
	CHECK_STR(check(s, "{\"x-a\":\"s\",\"foo\":\"ss\",\"bar\":1}"), "");
	CHECK_STR(check(s, "{\"x-o\":\"s\"}"), ".\"x-o\": expected at least 2 characters, got 1");
	CHECK_STR(check(s, "{\"bar\":\"s\"}"), ".bar: expected integer, got string");
	schema_free(s);
}

static void test_numbers(void)
{
	struct schema *s = compile("{\"type\":\"integer\"}");

	CHECK_STR(check(s, "1.0"), "");
	CHECK_STR(check(s, "1e3"), "");
	CHECK_STR(check(s, "1.5"), ".: expected integer, got number");
	schema_free(s);

	s = compile("{\"multipleOf\":0.01}");
	CHECK_STR(check(s, "0.07"), "");                    /* 7.000000000000001 */
	CHECK_STR(check(s, "19.99"), "");
	CHECK(check(s, "0.075")[0] != '\0');
	schema_free(s);

	s = compile("{\"multipleOf\":0.123456789}");
	CHECK(check(s, "1e308")[0] != '\0');               /* quotient overflows */
	schema_free(s);

	s = compile("{\"type\":\"integer\",\"multipleOf\":1e-8}");
	CHECK_STR(check(s, "12391239123"), "");
	schema_free(s);

	s = compile("{\"enum\":[1,[2],{\"a\":3}]}");
	CHECK_STR(check(s, "1.0"), "");
	CHECK_STR(check(s, "[2.0]"), "");
	CHECK_STR(check(s, "{\"a\":3.0}"), "");
	CHECK(check(s, "true")[0] != '\0');
	schema_free(s);
}

static void test_schema_get_caches(void)
{
	const struct schema *a = schema_get("event.schema.json");
	const struct schema *b = schema_get("event.schema.json");
	const struct schema *st = schema_get("state.schema.json");

	CHECK_MSG(a, "%s", forge_last_error());
	CHECK_MSG(st, "%s", forge_last_error());
	CHECK(a == b);
	CHECK(a != st);
	CHECK(schema_get("no-such.schema.json") == NULL);
	CHECK_STR(forge_last_error(), "no embedded schema 'no-such.schema.json'");
}

static const char good_event[] =
	"{\"kind\":\"event\",\"id\":\"01JDB3ZK8Q4M2N5P6R7S8T9VWX\",\"trace_id\":\"01JDB2AAAAAAAAAAAAAAAAAAAA\","
	"\"ts\":\"2026-11-21T21:30:00.123Z\",\"source\":\"forge-review\",\"phase\":\"review\","
	"\"type\":\"finding.detected\",\"payload\":{\"n\":1},\"cost\":{\"tokens\":1234,\"usd\":0.0042},"
	"\"duration_ms\":812}";

/* good_event with one member replaced (or removed when val is NULL). */
static const char *event_with(const char *key, const char *val)
{
	const struct schema *s = schema_get("event.schema.json");
	jv ev = parse(good_event);
	static char msg[1024];

	if (val)
		ev = jv_object_set(ev, jv_string(key), parse(val));
	else
		ev = jv_object_delete(ev, jv_string(key));
	snprintf(msg, sizeof msg, "%s", schema_validate(s, ev) == 0 ? "" : forge_last_error());
	jv_free(ev);
	return msg;
}

static void test_event_schema(void)
{
	const struct schema *s = schema_get("event.schema.json");

	CHECK_MSG(s, "%s", forge_last_error());
	CHECK_STR(check(s, good_event), "");
	CHECK_STR(event_with("phase", "null"), "");
	CHECK_STR(event_with("phase", NULL), "");
	CHECK_STR(event_with("cost", NULL), "");
	CHECK_STR(event_with("trace_id", "\"my-trace.1\""), "");
	CHECK_STR(event_with("extra", "{\"future\":true}"), "");   /* open for new fields */
	CHECK_STR(event_with("kind", "\"state\""), ".kind: value must be event");
	CHECK_STR(event_with("id", "\"01JDB3ZK8Q4M2N5P6R7S8T9VWI\""),
		  ".id: string does not match pattern '^[0-9A-HJKMNP-TV-Z]{26}$'");
	CHECK(strstr(event_with("ts", "\"2026-11-21T21:30:00Z\""), ".ts: string does not match"));
	CHECK(strstr(event_with("ts", "\"2026-11-21 21:30:00.123Z\""), ".ts: string does not match"));
	CHECK(strstr(event_with("type", "\"Finding.detected\""), ".type: string does not match"));
	CHECK(strstr(event_with("type", "\"finding\""), ".type: string does not match"));
	CHECK(strstr(event_with("trace_id", "\"has space\""), ".trace_id: string does not match"));
	CHECK_STR(event_with("trace_id", "\"\""), ".trace_id: expected at least 1 characters, got 0");
	CHECK_STR(event_with("payload", NULL), ".: required property 'payload' is missing");
	CHECK_STR(event_with("payload", "[]"), ".payload: expected object, got array");
	CHECK_STR(event_with("cost", "{\"tokens\":-1}"), ".cost.tokens: -1 is less than the minimum 0");
	CHECK_STR(event_with("cost", "{\"tokens\":1,\"usd\":null}"), "");
	CHECK_STR(event_with("duration_ms", "1.5"), ".duration_ms: expected integer, got number");
}

static const char good_state[] =
	"{\"kind\":\"state\",\"v\":1,\"trace_id\":\"01JDB2AAAAAAAAAAAAAAAAAAAA\",\"phase\":\"review\","
	"\"status\":\"rejected\",\"task\":{\"description\":\"add --version\",\"repo\":\"/abs/path\","
	"\"base_ref\":\"main\",\"branch\":\"forge/01JDB2\",\"worktree\":\"/w\"},"
	"\"plan\":{\"summary\":\"s\",\"architecture\":{\"components\":[\"cli\"],\"interfaces\":[],"
	"\"decisions\":[{\"what\":\"x\"}]},\"tasks\":[{\"id\":\"t1\",\"title\":\"T\",\"description\":\"d\","
	"\"files\":[\"src/main.c\"],\"depends_on\":[],\"acceptance\":[\"prints version\"]}],"
	"\"risk\":{\"level\":\"low\",\"score\":0.2,\"reasons\":[]},\"estimates\":{\"complexity\":\"low\","
	"\"effort\":2}},"
	"\"changes\":{\"files\":[{\"path\":\"src/main.c\",\"action\":\"modify\",\"additions\":3,"
	"\"deletions\":0}],\"diff\":\"--- a\\n+++ b\\n\",\"commit\":\"0123abcd\",\"base_commit\":null,"
	"\"tests_added\":[\"t/v.sh\"],\"validated\":true,\"validation\":\"make: ok\"},"
	"\"review\":{\"findings\":[{\"id\":\"f1\",\"layer\":\"static\",\"severity\":\"warning\","
	"\"category\":\"style\",\"rule\":\"x\",\"message\":\"m\",\"file\":\"a.c\",\"line\":3,"
	"\"confidence\":0.9,\"fixable\":true,\"fix\":null}],\"risk\":{\"score\":0.3,\"level\":\"medium\"},"
	"\"decision\":\"request_changes\"},"
	"\"tests\":{\"command\":\"make check\",\"summary\":{\"total\":3,\"passed\":2,\"failed\":1,"
	"\"skipped\":0,\"flaky\":0},\"duration_ms\":10,\"failures\":[{\"test\":\"t1\",\"file\":null,"
	"\"line\":null,\"message\":\"m\",\"output\":\"o\",\"classification\":\"real\",\"root_cause\":\"r\","
	"\"suggested_fix\":\"f\",\"confidence\":0.8}],\"coverage\":null},"
	"\"deployment\":{\"status\":\"skipped\",\"strategy\":\"branch\",\"steps\":[],\"metrics\":{},"
	"\"url\":null},"
	"\"bounces\":[{\"from\":\"review\",\"to\":\"implement\",\"n\":1,\"reason\":\"r\"}],"
	"\"cost\":{\"tokens\":10,\"usd\":0.5},\"budget\":{\"usd\":50,\"remaining_usd\":49.5}}";

/* Set the value at a jq-ish path of good_state (keys and array indexes). */
static const char *state_with(jv path, const char *val)
{
	const struct schema *s = schema_get("state.schema.json");
	jv st = parse(good_state);
	static char msg[1024];

	st = val ? jv_setpath(st, path, parse(val)) : jv_delpaths(st, JV_ARRAY(path));
	snprintf(msg, sizeof msg, "%s", schema_validate(s, st) == 0 ? "" : forge_last_error());
	jv_free(st);
	return msg;
}

static void test_state_schema(void)
{
	const struct schema *s = schema_get("state.schema.json");

	CHECK_MSG(s, "%s", forge_last_error());
	CHECK_STR(check(s, good_state), "");
	CHECK_STR(check(s, "{\"kind\":\"state\",\"v\":1,\"trace_id\":\"t\",\"phase\":\"init\","
			   "\"status\":\"ok\",\"task\":{\"description\":\"x\"}}"), "");
	CHECK_STR(state_with(JV_ARRAY(jv_string("status")), "\"done\""),
		  ".status: value is not one of the allowed values "
		  "(ok, rejected, escalated, tripped, failed, skipped)");
	CHECK(strstr(state_with(JV_ARRAY(jv_string("phase")), "\"deploying\""),
		     ".phase: value is not one of the allowed values (init, plan,"));
	CHECK_STR(state_with(JV_ARRAY(jv_string("task"), jv_string("description")), NULL),
		  ".task: required property 'description' is missing");
	CHECK_STR(state_with(JV_ARRAY(jv_string("task"), jv_string("description")), "\"\""),
		  ".task.description: expected at least 1 characters, got 0");
	CHECK_STR(state_with(JV_ARRAY(jv_string("plan"), jv_string("tasks"), jv_number(0),
				      jv_string("id")), "1"),
		  ".plan.tasks[0].id: expected string, got number");
	CHECK_STR(state_with(JV_ARRAY(jv_string("plan"), jv_string("risk"), jv_string("score")), "1.5"),
		  ".plan.risk.score: 1.5 is greater than the maximum 1");
	CHECK_STR(state_with(JV_ARRAY(jv_string("changes"), jv_string("files"), jv_number(0),
				      jv_string("action")), "\"rename\""),
		  ".changes.files[0].action: value is not one of the allowed values "
		  "(create, modify, delete)");
	CHECK(strstr(state_with(JV_ARRAY(jv_string("changes"), jv_string("commit")), "\"HEAD\""),
		     ".changes.commit: string does not match"));
	CHECK_STR(state_with(JV_ARRAY(jv_string("review"), jv_string("findings"), jv_number(0),
				      jv_string("severity")), "\"fatal\""),
		  ".review.findings[0].severity: value is not one of the allowed values "
		  "(info, warning, error, critical)");
	CHECK_STR(state_with(JV_ARRAY(jv_string("tests"), jv_string("summary"), jv_string("failed")),
			     "-1"), ".tests.summary.failed: -1 is less than the minimum 0");
	CHECK_STR(state_with(JV_ARRAY(jv_string("deployment"), jv_string("status")), "\"up\""),
		  ".deployment.status: value is not one of the allowed values "
		  "(healthy, degraded, rolled_back, skipped)");
	CHECK_STR(state_with(JV_ARRAY(jv_string("bounces"), jv_number(0), jv_string("n")), "0"),
		  ".bounces[0].n: 0 is less than the minimum 1");
	CHECK_STR(state_with(JV_ARRAY(jv_string("v")), "\"1\""), ".v: expected integer, got string");
	CHECK_STR(state_with(JV_ARRAY(jv_string("future_field")), "{}"), "");
}

static void test_validate_def(void)
{
	jv plan = parse("{\"summary\":\"s\",\"tasks\":[],\"risk\":{\"level\":\"high\"}}");
	jv bad = parse("{\"summary\":\"s\",\"tasks\":[{\"id\":\"1\",\"title\":\"t\"}],"
		       "\"risk\":{\"level\":\"high\"}}");

	CHECK_INT(schema_validate_def("state.schema.json", "plan", plan), 0);
	CHECK_INT(schema_validate_def("state.schema.json", "plan", bad), -1);
	jv_free(plan);
	jv_free(bad);
	CHECK_STR(forge_last_error(), ".tasks[0]: required property 'description' is missing");
	CHECK_INT(schema_validate_def("state.schema.json", "nope", jv_null()), -1);
	CHECK_STR(forge_last_error(), "schema 'state.schema.json' has no definition 'nope'");
	CHECK_INT(schema_validate_def("nope.json", "plan", jv_null()), -1);
}

/* A definition as a model is shown it: self-contained (no $ref left, no
 * $defs), and it still accepts what the stored schema accepts. */
static void test_schema_for_model(void)
{
	jv plan = schema_for_model("state.schema.json", "plan");
	char *text = json_dumps(jv_copy(plan), false);

	CHECK(jv_get_kind(plan) == JV_KIND_OBJECT);
	CHECK(strstr(text, "\"tasks\"") != NULL);
	CHECK(strstr(text, "$ref") == NULL && strstr(text, "$defs") == NULL);
	free(text);
	struct schema *s = NULL;
	jv ok = parse("{\"summary\":\"s\",\"tasks\":[],\"risk\":{\"level\":\"high\"}}");
	CHECK_INT(schema_compile(&s, plan), 0);
	CHECK(s && schema_is_valid(s, ok));
	schema_free(s);
	jv_free(ok);
	CHECK(jv_get_kind(schema_for_model("state.schema.json", "nope")) == JV_KIND_NULL);
	CHECK(jv_get_kind(schema_for_model("nope.json", NULL)) == JV_KIND_NULL);
	jv whole = schema_for_model("state.schema.json", NULL);
	CHECK(jv_get_kind(whole) == JV_KIND_OBJECT && !json_has(whole, "$defs"));
	jv_free(whole);
}

/* schema_for_model(name, def) as it was made before it read only the
 * definitions it needs: the whole resource parsed, then schema_inline(). */
static jv for_model_reference(const char *name, const char *def)
{
	const struct resource *r = resource_find(name);
	jv doc = r ? json_parse(r->data, r->len) : jv_null(), out = jv_null();

	if (jv_get_kind(doc) == JV_KIND_OBJECT) {
		jv defs = json_get(doc, "$defs");
		jv node = def ? json_get(defs, def) : jv_copy(doc);

		if (jv_get_kind(node) == JV_KIND_OBJECT)
			out = schema_inline(node, defs);
		else
			jv_free(node);
		jv_free(defs);
	}
	jv_free(doc);
	return out;
}

/* schema_for_model equals the full-parse reference, byte for byte (key
 * order too, as a model is sent it). */
static bool for_model_same(const char *name, const char *def)
{
	char *got = json_dumps(schema_for_model(name, def), false);
	char *want = json_dumps(for_model_reference(name, def), false);
	bool same = strcmp(got, want) == 0;

	if (!same)
		printf("#   schema_for_model(%s, %s) differs:\n#   got  %.300s\n#   want %.300s\n", name,
		       def ? def : "NULL", got, want);
	free(got);
	free(want);
	return same;
}

/* The ones the programs use, then every definition of every embedded
 * schema, and definitions that are missing or not objects. */
static void test_schema_for_model_reference(void)
{
	static const char *const used[][2] = {
		{ "state.schema.json", "implement_result" }, { "state.schema.json", "plan" },
		{ "compile/compile_review.schema.json", "finish" },
		{ "compile/implementation.schema.json", "finish" },
		{ "state.schema.json", "nope" }, { "nope.json", "plan" }, { "nope.json", NULL },
	};
	int n = 0;

	for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
		CHECK(for_model_same(used[i][0], used[i][1]));
	for (const struct resource *r = resource_all(); r->name; r++) {
		size_t len = strlen(r->name);

		if (len < 5 || strcmp(r->name + len - 5, ".json") != 0)
			continue;
		CHECK(for_model_same(r->name, NULL));
		jv doc = json_parse(r->data, r->len);
		jv defs = json_get(doc, "$defs");
		if (jv_get_kind(defs) == JV_KIND_OBJECT)
			jv_object_foreach(defs, key, value) {
				CHECK(for_model_same(r->name, jv_string_value(key)));
				n++;
				jv_free(key);
				jv_free(value);
			}
		jv_free(defs);
		jv_free(doc);
	}
	CHECK(n > 20);
}

/* schema_tool_input of every tool schema is the whole document parsed
 * with its notes deleted, byte for byte, and its description. */
static void test_tool_input_reference(void)
{
	static const char *const drop[] = { "$schema", "$id", "title", "description", "$comment", NULL };
	int n = 0;

	for (const struct resource *r = resource_all(); r->name; r++) {
		if (strncmp(r->name, "tools/", 6) != 0)
			continue;
		jv want = json_parse(r->data, r->len), desc;
		jv want_desc = json_get(want, "description");
		for (size_t i = 0; drop[i]; i++)
			if (json_has(want, drop[i]))
				want = jv_object_delete(want, jv_string(drop[i]));
		char *got_text = json_dumps(schema_tool_input(&desc, r->name), false);
		char *want_text = json_dumps(want, false);
		CHECK_STR(got_text, want_text);
		CHECK_MSG(json_equal(desc, want_desc), "%s", r->name);
		free(got_text);
		free(want_text);
		jv_free(desc);
		jv_free(want_desc);
		n++;
	}
	CHECK(n >= 11);
	jv desc, none = schema_tool_input(&desc, "tools/no_such.json");
	CHECK(!jv_is_valid(none) && jv_get_kind(desc) == JV_KIND_NULL);
	jv_free(none);
}

/* text (a literal: it outlives the schema) compiled lazily; NULL when refused. */
static struct schema *lazy(const char *text)
{
	struct schema *s = NULL;

	if (schema_compile_lazy(&s, text, strlen(text)) < 0)
		return NULL;
	return s;
}

/* The message schema_compile() refuses text with, in a static buffer. */
static const char *eager_refusal(const char *text)
{
	static char msg[1024];
	struct schema *s = compile(text);

	snprintf(msg, sizeof msg, "%s", s ? "(accepted)" : forge_last_error());
	schema_free(s);
	return msg;
}

/* A bad definition no instance reaches costs nothing and fails nothing;
 * reached, it fails with the message schema_compile() gives for it, and
 * keeps failing; schema_compile_rest() finds it without an instance. */
static void test_lazy_unreached_bad_part(void)
{
	static const char text[] =
		"{\"properties\":{\"a\":{\"$ref\":\"#/$defs/ok\"},\"b\":{\"$ref\":\"#/$defs/bad\"}},"
		"\"$defs\":{\"ok\":{\"type\":\"integer\"},\"bad\":{\"type\":\"string\",\"pattern\":\"(\"}}}";
	char want[1024];
	struct schema *s;

	snprintf(want, sizeof want, "%s", eager_refusal(text));
	CHECK(strncmp(want, "#/$defs/bad: invalid regular expression '(' at offset 1: ", 56) == 0);
	s = lazy(text);
	CHECK_MSG(s, "%s", forge_last_error());
	CHECK_STR(check(s, "{\"a\":1}"), "");
	CHECK_STR(check(s, "{\"a\":\"x\"}"), ".a: expected integer, got string");
	CHECK_STR(check(s, "{\"b\":\"x\"}"), want);
	CHECK_STR(check(s, "{\"a\":1}"), want);    /* the schema is known bad now */
	schema_free(s);

	s = lazy(text);
	CHECK_INT(schema_compile_rest(s), -1);
	CHECK_STR(forge_last_error(), want);
	schema_free(s);

	/* unsupported keywords too, in an array of subschemas */
	static const char kw[] = "{\"anyOf\":[{\"type\":\"null\"}],"
				 "\"$defs\":{\"x\":{\"oneOf\":[true,{\"if\":true}]}}}";
	snprintf(want, sizeof want, "%s", eager_refusal(kw));
	CHECK_STR(want, "#/$defs/x/oneOf/1: unsupported keyword 'if'");
	s = lazy(kw);
	CHECK_STR(check(s, "null"), "");
	CHECK_INT(schema_compile_rest(s), -1);
	CHECK_STR(forge_last_error(), want);
	schema_free(s);
}

/* text is refused by schema_compile() with message want; compiled lazily,
 * instance ok validates (the bad part unreached) and instance reaching
 * fails with that same message. */
static void refused_when_reached(const char *text, const char *want, const char *ok,
				 const char *reaching)
{
	struct schema *s;

	CHECK_STR(eager_refusal(text), want);
	s = lazy(text);
	CHECK_MSG(s, "%s", forge_last_error());
	CHECK_STR(check(s, ok), "");
	CHECK_STR(check(s, reaching), want);
	schema_free(s);
}

/* A $ref resolved when first followed: forward, deep, through nodes not
 * compiled yet, to a missing target, into a cycle: as schema_compile(). */
static void test_lazy_refs(void)
{
	static const char deep[] =
		"{\"properties\":{\"x\":{\"$ref\":\"#/$defs/a/properties/b\"}},"
		"\"$defs\":{\"a\":{\"properties\":{\"b\":{\"$ref\":\"#/$defs/c\"}}},"
		"\"c\":{\"type\":\"integer\",\"minimum\":3}}}";
	static const char missing[] = "{\"properties\":{\"x\":{\"$ref\":\"#/$defs/missing\"}}}";
	static const char cycle[] =
		"{\"properties\":{\"x\":{\"$ref\":\"#/$defs/a\"}},"
		"\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"anyOf\":[{\"$ref\":\"#/$defs/a\"}]}}}";
	struct schema *s = lazy(deep), *e = compile(deep);

	CHECK_MSG(s && e, "%s", forge_last_error());
	CHECK_STR(check(s, "{\"x\":1}"), ".x: 1 is less than the minimum 3");
	CHECK_STR(check(e, "{\"x\":1}"), ".x: 1 is less than the minimum 3");
	CHECK_STR(check(s, "{\"x\":\"s\"}"), ".x: expected integer, got string");
	CHECK_STR(check(s, "{\"x\":4}"), "");
	schema_free(s);
	schema_free(e);

	refused_when_reached(missing, "#/properties/x: $ref '#/$defs/missing' does not point to a "
			     "schema in this document", "{}", "{\"x\":1}");
	refused_when_reached(cycle, "#/$defs/a: $ref cycle that never descends into the instance",
			     "{\"y\":1}", "{\"x\":1}");
}

/* What libjq would hide, the text shows: refused rather than guessed. */
static void test_lazy_refuses(void)
{
	CHECK(lazy("{\"type\":") == NULL);
	CHECK_STR(forge_last_error(), "a schema must be one JSON text");
	CHECK(lazy("[]") == NULL);
	CHECK_STR(forge_last_error(), "#: a schema must be an object or a boolean");
	CHECK(lazy("{\"type\":\"string\",\"type\":\"null\"}") == NULL);
	CHECK_STR(forge_last_error(), "#: duplicate keyword 'type'");
	CHECK(lazy("{\"properties\":{\"a\":{},\"a\":true}}") == NULL);
	CHECK_STR(forge_last_error(), "#: duplicate property 'a' in 'properties'");

	struct schema *s = lazy(" true ");
	CHECK_STR(check(s, "[1]"), "");
	schema_free(s);
	s = lazy("{\"properties\":{\"a\\u0062\":{\"type\":\"null\"}}}");  /* an escaped key */
	CHECK_STR(check(s, "{\"ab\":1}"), ".ab: expected null, got number");
	schema_free(s);
}

/* n copies of open, then inner, then n copies of close: a new string. */
static char *nested(const char *open, const char *inner, const char *close, int n)
{
	struct buf b = BUF_INIT;

	for (int i = 0; i < n; i++)
		buf_adds(&b, open);
	buf_adds(&b, inner);
	for (int i = 0; i < n; i++)
		buf_adds(&b, close);
	return buf_detach(&b, NULL);
}

/* {"items": ... {"type":"integer"} ...} with n "items" around the innermost. */
static jv items_chain(int n)
{
	jv doc = parse("{\"type\":\"integer\"}");

	for (int i = 0; i < n; i++)
		doc = json_set(jv_object(), "items", doc);
	return doc;
}

/* A schema may nest 256 levels (MAX_SCHEMA_DEPTH), deeper than json_scan
 * lets an event nest: an MCP server's tool schema as deep as json_parse()
 * takes compiles, a level more is refused with the path; a text nested past
 * what a 256-level schema needs is refused before any node is made. */
static void test_depth_limits(void)
{
	struct schema *s = NULL;
	char *text, *deep;

	CHECK_INT(schema_compile(&s, items_chain(256)), 0);
	text = nested("[", "1", "]", 256);
	CHECK_STR(check(s, text), "");
	free(text);
	text = nested("[", "\"x\"", "]", 256);
	CHECK(strstr(check(s, text), "[0][0]: expected integer, got string"));
	free(text);
	schema_free(s);
	/* the pointer's middle elided: the message fits forge_last_error() */
	CHECK_INT(schema_compile(&s, items_chain(257)), -1);
	text = nested("/items", "", "", 34);
	deep = nested("/items", ": schema nested deeper than 256 levels", "", 16);
	CHECK(strncmp(forge_last_error(), "#", 1) == 0 &&
	      strncmp(forge_last_error() + 1, text, 200) == 0);
	CHECK(strncmp(forge_last_error() + 201, "...tems/", 8) == 0);
	CHECK_STR(forge_last_error() + 208, deep);
	free(deep);
	free(text);

	/* "properties" nests two objects a level: 256 levels fit the text too */
	text = nested("{\"properties\":{\"a\":", "true", "}}", 256);
	s = lazy(text);
	CHECK_MSG(s && schema_compile_rest(s) == 0, "%s", forge_last_error());
	schema_free(s);
	free(text);

	/* as deep as libjq parses (an MCP reply): beyond json_scan's events */
	text = nested("{\"not\":", "false", "}", 127);
	jv doc = parse(text);
	CHECK_MSG(jv_is_valid(doc), "libjq took %s", "127 levels");
	CHECK_INT(schema_compile(&s, doc), 0);
	CHECK_STR(check(s, "1"), "");
	schema_free(s);
	free(text);

	/* the text's own limit: 1028 in json_scan's count (here 2 + the arrays) */
	text = nested("[", "", "]", 1026);
	deep = nested("{\"default\":", text, "}", 1);
	s = lazy(deep);
	CHECK_MSG(s && schema_compile_rest(s) == 0, "%s", forge_last_error());
	schema_free(s);
	free(deep);
	free(text);
	text = nested("[", "", "]", 1027);
	deep = nested("{\"default\":", text, "}", 1);
	CHECK(lazy(deep) == NULL);
	CHECK_STR(forge_last_error(), "#: schema nested deeper than 1028 (an object counts 2, an array 1)");
	free(deep);
	free(text);

	/* a value the compiler parses, deeper than libjq parses */
	text = nested("[", "", "]", 300);
	deep = nested("{\"const\":", text, "}", 1);
	CHECK(lazy(deep) == NULL);
	CHECK(strncmp(forge_last_error(), "#: 'const' cannot be read: ", 27) == 0);
	free(deep);
	free(text);
}

/* {"$defs":{"d0":{"$ref":"#/$defs/d1"},...,"dN":{"type":"string"}},"$ref":"#/$defs/d0"}:
 * a chain of N $refs in a text three levels deep (malloc'd). */
static char *ref_chain(int n)
{
	struct buf b = BUF_INIT;

	buf_adds(&b, "{\"$defs\":{");
	for (int i = 0; i < n; i++)
		buf_addf(&b, "\"d%d\":{\"$ref\":\"#/$defs/d%d\"},", i, i + 1);
	buf_addf(&b, "\"d%d\":{\"type\":\"string\"}},\"$ref\":\"#/$defs/d0\"}", n);
	return buf_detach(&b, NULL);
}

/* Subschemas applied to the same instance chain at most 2048 deep, as deep
 * as validation recurses: a longer chain (its text shallow, so the text's
 * limit does not see it) is refused with its place, lazily and eagerly,
 * where 200,000 $refs overflowed the stack. */
static void test_ref_chain_limit(void)
{
	struct schema *s;
	char *text = ref_chain(2046);

	s = lazy(text);
	CHECK_MSG(s && schema_compile_rest(s) == 0, "%s", forge_last_error());
	CHECK_STR(check(s, "\"x\""), "");
	CHECK(strstr(check(s, "1"), "expected string, got number"));
	schema_free(s);
	free(text);

	const char *want = "#/$defs/d2047: $ref, allOf, anyOf, oneOf and not chained deeper than 2048 levels";
	for (int n = 2047; n <= 200000; n = n == 2047 ? 200000 : n + 1) {
		text = ref_chain(n);
		s = lazy(text);
		CHECK(s != NULL);
		CHECK_STR(check(s, "\"x\""), want);
		CHECK_INT(schema_compile_rest(s), -1);
		CHECK_STR(forge_last_error(), want);
		schema_free(s);
		CHECK_STR(eager_refusal(text), want);
		free(text);
	}
}

/* The embedded schemas are compiled lazily by schema_get(): each must be a
 * schema whole, eagerly and lazily, so no process meets a bad part late. */
static void test_embedded_schemas_whole(void)
{
	int n = 0;

	for (const struct resource *r = resource_all(); r->name; r++) {
		size_t len = strlen(r->name);
		bool schema = (len > 12 && strcmp(r->name + len - 12, ".schema.json") == 0) ||
			      strncmp(r->name, "tools/", 6) == 0;
		struct schema *e = NULL, *s = NULL;

		if (!schema)
			continue;
		n++;
		CHECK_MSG(schema_compile(&e, json_parse(r->data, r->len)) == 0, "%s: %s", r->name,
			  forge_last_error());
		CHECK_MSG(schema_compile_lazy(&s, r->data, r->len) == 0 && schema_compile_rest(s) == 0,
			  "%s: %s", r->name, forge_last_error());
		schema_free(e);
		schema_free(s);
	}
	CHECK(n >= 20);
}

/* The forced tools of the phases are sent with the input schema of their
 * file in schemas/tools/ (the one their answers are checked against), not
 * with one of their own; a tool without a file gets a bare object. */
static void test_tool_spec_from_file(void)
{
	static const char *const names[] = { "report_findings", "report_failure_analysis", "record_pattern", NULL };

	for (size_t i = 0; names[i]; i++) {
		char path[128];

		snprintf(path, sizeof path, "tools/%s.json", names[i]);
		const struct resource *r = resource_find(path);

		CHECK_MSG(r != NULL, "no schemas/%s", path);
		jv file = json_parse(r->data, r->len), spec = schema_tool_spec(names[i]);

		CHECK_STR(json_get_str(spec, "name"), names[i]);
		CHECK_STR(json_get_str(spec, "description"), json_get_str(file, "description"));
		jv want = file;
		static const char *const drop[] = { "$schema", "$id", "title", "description", "$comment", NULL };
		for (size_t k = 0; drop[k]; k++)
			want = jv_object_delete(want, jv_string(drop[k]));
		CHECK(jv_equal(json_get(spec, "input_schema"), want));
		CHECK(schema_get(path) != NULL);
		jv_free(spec);
	}
	jv none = schema_tool_spec("no_such_tool");
	CHECK(jv_equal(json_get(none, "input_schema"), json_parse("{\"type\":\"object\"}", 17)));
	jv_free(none);
}

/* Threads that validate against embedded schemas at once, the first
 * validations of this process (so each compiles parts of them as it goes),
 * all get the single-threaded answers: schema_mutex serialises them. */
static void *validate_many(void *arg)
{
	const char *task_text = "{\"description\":\"x\"}";
	jv good = json_parse(good_state, strlen(good_state));
	jv bad = json_set(jv_copy(good), "status", jv_string("done"));
	jv task = json_parse(task_text, strlen(task_text));
	long wrong = 0;

	for (int i = 0; i < 50; i++) {
		/* the threads start on different schemas, then meet */
		bool state_first = (i + (intptr_t)arg) % 2;
		const struct schema *state = schema_get(state_first ? "state.schema.json" : "event.schema.json");

		if (!state_first)
			state = schema_get("state.schema.json");
		wrong += !state || schema_validate(state, good) != 0 || schema_is_valid(state, bad);
		wrong += schema_validate_def("state.schema.json", "task", task) != 0;
	}
	jv_free(good);
	jv_free(bad);
	jv_free(task);
	return (void *)wrong;
}

static void test_threads_validate(void)
{
	pthread_t th[4];
	void *wrong;

	for (intptr_t i = 0; i < 4; i++)
		CHECK(pthread_create(&th[i], NULL, validate_many, (void *)i) == 0);
	for (int i = 0; i < 4; i++) {
		CHECK(pthread_join(th[i], &wrong) == 0);
		CHECK_INT((long)wrong, 0);
	}
}

int main(void)
{
	RUN(test_threads_validate);
	RUN(test_refuses_unsupported_keyword);
	RUN(test_refuses_malformed);
	RUN(test_refuses_ref_cycles);
	RUN(test_refusal_kinds);
	RUN(test_annotations_accepted);
	RUN(test_boolean_schemas);
	RUN(test_nested_error_paths);
	RUN(test_messages);
	RUN(test_validate_all);
	RUN(test_refs);
	RUN(test_arrays);
	RUN(test_strings_and_patterns);
	RUN(test_numbers);
	RUN(test_schema_get_caches);
	RUN(test_event_schema);
	RUN(test_state_schema);
	RUN(test_validate_def);
	RUN(test_schema_for_model);
	RUN(test_schema_for_model_reference);
	RUN(test_lazy_unreached_bad_part);
	RUN(test_lazy_refs);
	RUN(test_lazy_refuses);
	RUN(test_depth_limits);
	RUN(test_ref_chain_limit);
	RUN(test_embedded_schemas_whole);
	RUN(test_tool_spec_from_file);
	RUN(test_tool_input_reference);
	return unit_done();
}
