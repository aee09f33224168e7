/* test_stage_schema.c - the document schemas forge compile's stages show the
 * model (app/stage.h: stage_doc_schema): self-contained, and the intent's
 * languages are the configuration's. */
#include "app/stage.h"
#include "core/forge.h"
#include "core/json.h"
#include "data/config.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static char *dump(jv v)
{
	return json_dumps(v, false);
}

static void test_intent_languages_from_config(void)
{
	struct config *cfg = NULL;
	jv flags = jv_object(), schema = jv_null();
	struct phase ph;

	static const char cobol[] = "{\"framework\":\"tap\",\"test_command\":\"make test\",\"output\":\"tap\","
				    "\"layout\":\"x\",\"test_name\":\"r1: x\",\"build_files\":[],\"static_tools\":[]}";

	CHECK_INT(config_flag_set(&flags, "compile.languages.cobol", json_parse(cobol, strlen(cobol))), 0);
	struct config_sources src = { NULL, NULL, flags };
	CHECK_INT(config_load(&cfg, &src), 0);
	memset(&ph, 0, sizeof ph);
	ph.cfg = cfg;
	CHECK_INT(stage_doc_schema(&schema, &ph, "intent", NULL), 0);
	char *lang = dump(json_get_path(schema, "properties.language"));
	CHECK_STR(lang, "{\"enum\":[\"c\",\"python\",\"cobol\"]}");
	free(lang);
	/* one self-contained schema: nothing the model cannot read */
	char *all = dump(jv_copy(schema));
	CHECK(!strstr(all, "$ref") && !strstr(all, "$defs") && !strstr(all, "$comment") && !strstr(all, "\"title\""));
	free(all);
	jv_free(schema);
	CHECK_INT(stage_doc_schema(&schema, NULL, "intent", NULL), 0);
	lang = dump(json_get_path(schema, "properties.language"));
	CHECK_STR(lang, "{\"enum\":[]}");
	free(lang);
	jv_free(schema);
	CHECK_INT(stage_doc_schema(&schema, NULL, "no_such_document", NULL), -1);
	CHECK(strstr(forge_last_error(), "no_such_document") != NULL);
	config_free(cfg);
}

int main(void)
{
	RUN(test_intent_languages_from_config);
	return unit_done();
}
