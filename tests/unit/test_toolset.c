/* test_toolset.c - the names MCP tools get before the model (app/toolset.h). */
#include "app/toolset.h"
#include "core/forge.h"
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

int main(void)
{
	RUN(test_tool_names);
	return unit_done();
}
