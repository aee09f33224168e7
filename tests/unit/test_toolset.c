/* test_toolset.c - the names MCP tools get before the model (app/toolset.h). */
#include "app/toolset.h"
#include "core/forge.h"
#include "core/json.h"
#include "unit.h"

#include <string.h>

static void test_tool_names(void)
{
	char name[65];

	CHECK(toolset_tool_name(name, "fs", "read_file") == 0);
	CHECK_STR(name, "fs__read_file");
	CHECK(toolset_tool_name(name, "w", "a.b/c d") == 0);
	CHECK_STR(name, "w__a_b_c_d");
	/* a character is one "_", however many bytes its UTF-8 takes (before:
	 * one a byte, "caf__") */
	CHECK(toolset_tool_name(name, "w", "caf\xc3\xa9") == 0);
	CHECK_STR(name, "w__caf_");
	CHECK(toolset_tool_name(name, "w", "\xe6\x97\xa5\xe6\x9c\xac-x") == 0);
	CHECK_STR(name, "w____-x");
	/* no name: no tool (before: "" was offered as "w__") */
	CHECK(toolset_tool_name(name, "w", "") == -1);
	CHECK(strstr(forge_last_error(), "no name") != NULL);
	CHECK(toolset_tool_name(name, "w", NULL) == -1);
	char long_name[80];
	memset(long_name, 'x', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	CHECK(toolset_tool_name(name, "w", long_name) == -1);
	CHECK(strstr(forge_last_error(), "longer than the 64") != NULL);
}

/* A tool's input schema as offered to the model: an object schema; none
 * or one without a type made one; one of another type refused (before:
 * passed through, and the provider refused the whole request). */
static void test_input_schemas(void)
{
	jv out, tool;

	tool = json_set(jv_object(), "inputSchema", jv_parse("{\"type\":\"object\",\"required\":[\"a\"]}"));
	CHECK(toolset_input_schema(&out, tool) == 0);
	CHECK(jv_equal(jv_copy(out), jv_parse("{\"type\":\"object\",\"required\":[\"a\"]}")));
	jv_free(out);
	jv_free(tool);
	tool = json_set(jv_object(), "inputSchema", jv_parse("{\"properties\":{\"a\":{\"type\":\"string\"}}}"));
	CHECK(toolset_input_schema(&out, tool) == 0);
	CHECK_STR(json_get_str(out, "type"), "object");
	CHECK(json_has(out, "properties"));
	jv_free(out);
	jv_free(tool);
	tool = json_set(jv_object(), "name", jv_string("x"));
	CHECK(toolset_input_schema(&out, tool) == 0);
	CHECK(jv_equal(jv_copy(out), jv_parse("{\"type\":\"object\"}")));
	jv_free(out);
	jv_free(tool);
	tool = json_set(jv_object(), "inputSchema", jv_parse("{\"type\":\"array\"}"));
	CHECK(toolset_input_schema(&out, tool) == -1);
	CHECK(strstr(forge_last_error(), "of type \"array\", not object") != NULL);
	CHECK(jv_get_kind(out) == JV_KIND_NULL);
	jv_free(tool);
	tool = json_set(jv_object(), "inputSchema", jv_parse("{\"type\":[\"object\",\"null\"]}"));
	CHECK(toolset_input_schema(&out, tool) == -1);
	jv_free(tool);
}

int main(void)
{
	RUN(test_tool_names);
	RUN(test_input_schemas);
	return unit_done();
}
