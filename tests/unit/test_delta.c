/* test_delta.c - a DeltaRuleSet applied to a RuleSet, and the stages it affects (lib/compile/delta.h). */
#include "compile/delta.h"
#include "core/forge.h"
#include "core/json.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static const char rules_json[] =
	"{\"rules\":["
	"{\"id\":\"R1\",\"if\":\"a\",\"then\":\"b\",\"contract\":\"C1\",\"entity\":\"todo\"},"
	"{\"id\":\"R2\",\"if\":\"c\",\"then\":\"d\",\"contract\":\"C1\",\"entity\":\"todo\"},"
	"{\"id\":\"R3\",\"if\":\"e\",\"then\":\"f\",\"contract\":\"C2\",\"entity\":\"todo\"}],"
	"\"approved_at\":\"2026-01-01T00:00:00Z\",\"approved_by\":\"human\"}";
static const char contracts_json[] = "{\"contracts\":[{\"id\":\"C1\"},{\"id\":\"C2\"}]}";
static const char schema_json[] =
	"{\"tables\":[{\"name\":\"todo\",\"columns\":[{\"name\":\"id\"},{\"name\":\"title\"}]}],\"sql\":\"\"}";

/* The jv as compact sorted JSON, for comparing (a static buffer). */
static const char *text(jv v)
{
	static char out[4096];
	char *s = json_dumps(jv_copy(v), true);

	snprintf(out, sizeof out, "%s", s);
	free(s);
	return out;
}

static void test_apply_keeps_ids_and_numbers_new_rules(void)
{
	jv rules = jv_parse(rules_json), rs, d;
	jv delta = jv_parse("{\"request\":\"x\",\"change\":[{\"id\":\"R2\",\"if\":\"c2\",\"then\":\"d2\"}],"
			    "\"new\":[{\"id\":\"R1\",\"if\":\"g\",\"then\":\"h\",\"entity\":\"todo.due\"},{\"if\":\"i\",\"then\":\"j\"}],"
			    "\"remove\":[\"R1\"]}");

	CHECK(delta_apply(&rs, &d, rules, delta) == 0);
	jv list = json_get(rs, "rules");
	CHECK_STR(text(list), "[{\"contract\":\"C1\",\"entity\":\"todo\",\"id\":\"R2\",\"if\":\"c2\",\"then\":\"d2\"},"
			      "{\"contract\":\"C2\",\"entity\":\"todo\",\"id\":\"R3\",\"if\":\"e\",\"then\":\"f\"},"
			      "{\"entity\":\"todo.due\",\"id\":\"R4\",\"if\":\"g\",\"then\":\"h\"},"
			      "{\"id\":\"R5\",\"if\":\"i\",\"then\":\"j\"}]");
	CHECK(!json_has(rs, "approved_at") && !json_has(rs, "approved_by"));
	jv preserve = json_get(d, "preserve"), fresh = json_get(d, "new");
	CHECK_STR(text(preserve), "[\"R3\"]");
	jv second = jv_array_get(jv_copy(fresh), 1);
	CHECK_STR(json_get_str(second, "id"), "R5");
	jv_free(second);
	jv_free(preserve);
	jv_free(fresh);
	jv_free(list);
	jv_free(rs);
	jv_free(d);
	jv_free(rules);
	jv_free(delta);
}

static void test_apply_refuses_unknown_ids(void)
{
	jv rules = jv_parse(rules_json), rs, d;
	jv delta = jv_parse("{\"request\":\"x\",\"change\":[{\"id\":\"R9\",\"if\":\"a\",\"then\":\"b\"}],\"new\":[],\"remove\":[]}");

	CHECK(delta_apply(&rs, &d, rules, delta) == -1);
	CHECK_MSG(strstr(forge_last_error(), "change names rule R9") &&
		  strstr(forge_last_error(), "(it has R1, R2, R3)"), "%s", forge_last_error());
	CHECK(jv_get_kind(rs) == JV_KIND_NULL && jv_get_kind(d) == JV_KIND_NULL);
	jv_free(delta);
	delta = jv_parse("{\"request\":\"x\",\"change\":[],\"new\":[],\"remove\":[\"R4\"]}");
	CHECK(delta_apply(&rs, &d, rules, delta) == -1);
	CHECK_MSG(strstr(forge_last_error(), "remove names rule R4"), "%s", forge_last_error());
	jv_free(delta);
	delta = jv_parse("{\"request\":\"x\",\"change\":[{\"id\":\"R1\",\"if\":\"a\",\"then\":\"b\"}],\"new\":[],\"remove\":[\"R1\"]}");
	CHECK(delta_apply(&rs, &d, rules, delta) == -1);
	CHECK_MSG(strstr(forge_last_error(), "R1 is named twice"), "%s", forge_last_error());
	jv_free(delta);
	jv_free(rules);
}

static void test_affected_stages(void)
{
	jv contracts = jv_parse(contracts_json), schema = jv_parse(schema_json), rerun, why;

	/* a changed rule on known contracts and entities: rules, then the build stages */
	jv delta = jv_parse("{\"change\":[{\"id\":\"R2\",\"if\":\"a\",\"then\":\"b\",\"contract\":\"C2\",\"entity\":\"todo.title\"}],\"new\":[],\"remove\":[]}");
	CHECK(delta_affected(&rerun, &why, delta, contracts, schema) == 0);
	CHECK_STR(text(rerun), "[\"rules\",\"tests\",\"code\",\"integrate\",\"review\"]");
	jv_free(rerun);
	jv_free(why);
	jv_free(delta);
	/* a new rule on a field the schema lacks and a contract that does not exist */
	delta = jv_parse("{\"change\":[],\"new\":[{\"id\":\"R4\",\"if\":\"a\",\"then\":\"b\",\"contract\":\"C9\",\"entity\":\"todo.due\"}],\"remove\":[]}");
	CHECK(delta_affected(&rerun, &why, delta, contracts, schema) == 0);
	CHECK_STR(text(rerun), "[\"flows\",\"contracts\",\"rules\",\"schema\",\"tests\",\"code\",\"integrate\",\"review\"]");
	jv w = jv_array_get(jv_copy(why), 3);
	CHECK_STR(json_get_str(w, "because"), "R4 names field todo.due, which the database schema lacks");
	jv_free(w);
	jv_free(rerun);
	jv_free(why);
	jv_free(delta);
	/* an entity without a table */
	delta = jv_parse("{\"change\":[],\"new\":[{\"if\":\"a\",\"then\":\"b\",\"entity\":\"tag\"}],\"remove\":[]}");
	CHECK(delta_affected(&rerun, &why, delta, contracts, schema) == 0);
	CHECK_STR(text(rerun), "[\"rules\",\"schema\",\"tests\",\"code\",\"integrate\",\"review\"]");
	jv_free(rerun);
	jv_free(why);
	jv_free(delta);
	/* nothing changed: the rules alone */
	delta = jv_parse("{\"change\":[],\"new\":[],\"remove\":[]}");
	CHECK(delta_affected(&rerun, &why, delta, contracts, schema) == 0);
	CHECK_STR(text(rerun), "[\"rules\"]");
	jv_free(rerun);
	jv_free(why);
	jv_free(delta);
	jv_free(contracts);
	jv_free(schema);
}

static void test_rule_number(void)
{
	CHECK(delta_rule_number("R1") == 1);
	CHECK(delta_rule_number("R12") == 12);
	CHECK(delta_rule_number("R0") == 0);
	CHECK(delta_rule_number("X1") == 0);
	CHECK(delta_rule_number("R1a") == 0);
	CHECK(delta_rule_number(NULL) == 0);
	CHECK(delta_rule_number("R99999999999999") == 0);
}

int main(void)
{
	RUN(test_apply_keeps_ids_and_numbers_new_rules);
	RUN(test_apply_refuses_unknown_ids);
	RUN(test_affected_stages);
	RUN(test_rule_number);
	return unit_done();
}
