/* delta.c - a DeltaRuleSet applied to a RuleSet, and its blast radius; see delta.h. */
#include "compile/delta.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int delta_rule_number(const char *id)
{
	long n = 0;

	if (!id || id[0] != 'R' || id[1] < '1' || id[1] > '9')
		return 0;
	for (const char *p = id + 1; *p; p++) {
		if (*p < '0' || *p > '9' || n > INT_MAX / 10 - 10)
			return 0;
		n = n * 10 + (*p - '0');
	}
	return (int)n;
}

/* The item of arr (borrowed) whose "id" is id, or jv_null(). */
static jv by_id(jv arr, const char *id)
{
	if (jv_get_kind(arr) != JV_KIND_ARRAY || !id)
		return jv_null();
	jv_array_foreach(arr, i, item) {
		const char *iid = json_get_str(item, "id");
		if (iid && strcmp(iid, id) == 0)
			return item;
		jv_free(item);
	}
	return jv_null();
}

static bool has_id(jv arr, const char *id)
{
	jv v = by_id(arr, id);
	bool yes = jv_get_kind(v) != JV_KIND_NULL;

	jv_free(v);
	return yes;
}

/* The ids of the rules (borrowed), "R1, R2, …", for messages. */
static void list_ids(struct buf *b, jv rules)
{
	jv_array_foreach(rules, i, r) {
		const char *id = json_get_str(r, "id");
		buf_addf(b, "%s%s", i ? ", " : "", id ? id : "?");
		jv_free(r);
	}
	if (!b->len)
		buf_adds(b, "none");
}

/*
 * Every id of delta's `what` (change: objects with ids; remove: strings)
 * names a rule of rules, at most once over change and remove together
 * (seen collects them).  Borrows all.
 */
static int check_ids(jv rules, jv delta, const char *what, jv *seen)
{
	jv items = json_get(delta, what);
	int rc = 0;

	if (jv_get_kind(items) != JV_KIND_ARRAY) {
		jv_free(items);
		return 0;
	}
	jv_array_foreach(items, i, item) {
		const char *id = jv_get_kind(item) == JV_KIND_STRING ? jv_string_value(item) : json_get_str(item, "id");
		if (rc == 0 && !has_id(rules, id)) {
			struct buf b = BUF_INIT;
			list_ids(&b, rules);
			rc = forge_error("delta: %s names rule %s, which the rule set does not have (it has %s)", what,
					 id ? id : "(no id)", b.buf);
			buf_release(&b);
		} else if (rc == 0) {
			bool twice = false;
			jv_array_foreach(*seen, k, s) {
				twice = twice || strcmp(jv_string_value(s), id) == 0;
				jv_free(s);
			}
			if (twice)
				rc = forge_error("delta: rule %s is named twice in change and remove", id);
			else
				*seen = jv_array_append(*seen, jv_string(id));
		}
		jv_free(item);
	}
	jv_free(items);
	return rc;
}

/* rule (consumed) with change's if, then, contract and entity (borrowed). */
static jv changed_rule(jv rule, jv change)
{
	static const char *const keys[] = { "if", "then", "contract", "entity" };

	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		if (json_has(change, keys[i]))
			rule = json_set(rule, keys[i], json_get(change, keys[i]));
	return rule;
}

/* A new rule with id "R<n>" from the delta's item (borrowed). */
static jv new_rule(jv item, int n)
{
	jv r = json_set(jv_object(), "id", jv_string_fmt("R%d", n));

	return changed_rule(r, item);
}

int delta_apply(jv *out_rules, jv *out_delta, jv rules, jv delta)
{
	jv list = json_get(rules, "rules"), seen = jv_array();
	jv kept = jv_array(), preserve = jv_array(), added = jv_array();
	jv change = json_get(delta, "change"), removed = json_get(delta, "remove"), fresh = json_get(delta, "new");
	int top = 0, rc = -1;

	*out_rules = jv_null();
	*out_delta = jv_null();
	if (jv_get_kind(list) != JV_KIND_ARRAY) {
		forge_error("delta: the rule set has no rules to change");
		goto out;
	}
	if (check_ids(list, delta, "change", &seen) < 0 || check_ids(list, delta, "remove", &seen) < 0)
		goto out;
	jv_array_foreach(list, i, r) {
		const char *id = json_get_str(r, "id");
		int n = delta_rule_number(id);
		jv c = by_id(change, id);

		top = n > top ? n : top;
		if (jv_get_kind(removed) == JV_KIND_ARRAY && jv_array_length(jv_copy(removed)) > 0) {
			bool gone = false;
			jv_array_foreach(removed, k, x) {
				gone = gone || (jv_get_kind(x) == JV_KIND_STRING && strcmp(jv_string_value(x), id) == 0);
				jv_free(x);
			}
			if (gone) {
				jv_free(c);
				jv_free(r);
				continue;
			}
		}
		if (jv_get_kind(c) == JV_KIND_NULL)
			preserve = jv_array_append(preserve, jv_string(id));
		kept = jv_array_append(kept, jv_get_kind(c) == JV_KIND_OBJECT ? changed_rule(r, c) : r);
		jv_free(c);
	}
	if (jv_get_kind(fresh) == JV_KIND_ARRAY) {
		jv_array_foreach(fresh, i, item) {
			jv r = new_rule(item, ++top);
			kept = jv_array_append(kept, jv_copy(r));
			added = jv_array_append(added, r);
			jv_free(item);
		}
	}
	*out_rules = json_set(jv_object(), "rules", kept);
	kept = jv_null();
	jv d = json_set(jv_copy(delta), "preserve", preserve);
	preserve = jv_null();
	d = json_set(d, "new", added);
	added = jv_null();
	if (!json_has(d, "change"))
		d = json_set(d, "change", jv_array());
	if (!json_has(d, "remove"))
		d = json_set(d, "remove", jv_array());
	*out_delta = d;
	rc = 0;
out:
	jv_free(list);
	jv_free(seen);
	jv_free(kept);
	jv_free(preserve);
	jv_free(added);
	jv_free(change);
	jv_free(removed);
	jv_free(fresh);
	return rc;
}

/* ---- the blast radius ----------------------------------------------------- */

static const char *const stage_order[] = { "flows", "contracts", "rules", "schema", "tests", "code",
					   "integrate", "review" };
enum { NSTAGES = sizeof stage_order / sizeof stage_order[0] };

struct radius {
	char *because[NSTAGES];      /* NULL: the stage is not affected */
};

static void affect(struct radius *r, const char *stage, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void affect(struct radius *r, const char *stage, const char *fmt, ...)
{
	for (size_t i = 0; i < NSTAGES; i++) {
		if (strcmp(stage_order[i], stage) == 0 && !r->because[i]) {
			struct buf m = BUF_INIT;
			va_list ap;
			va_start(ap, fmt);
			buf_vaddf(&m, fmt, ap);
			va_end(ap);
			r->because[i] = buf_detach(&m, NULL);
		}
	}
}

/* Whether db_schema (borrowed) has table `name` (with column `column` when not NULL). */
static bool schema_has(jv db_schema, const char *name, const char *column)
{
	jv tables = json_get(db_schema, "tables");
	jv t = jv_null();
	bool yes = false;

	if (jv_get_kind(tables) == JV_KIND_ARRAY) {
		jv_array_foreach(tables, i, x) {
			const char *n = json_get_str(x, "name");
			if (!yes && n && strcmp(n, name) == 0) {
				jv_free(t);
				t = jv_copy(x);
				yes = true;
			}
			jv_free(x);
		}
	}
	if (yes && column) {
		jv cols = json_get(t, "columns");
		yes = false;
		if (jv_get_kind(cols) == JV_KIND_ARRAY) {
			jv_array_foreach(cols, i, c) {
				const char *n = json_get_str(c, "name");
				yes = yes || (n && strcmp(n, column) == 0);
				jv_free(c);
			}
		}
		jv_free(cols);
	}
	jv_free(t);
	jv_free(tables);
	return yes;
}

/* What a new or changed rule (borrowed) needs of the schema and contracts. */
static void rule_needs(struct radius *r, jv rule, jv contracts, jv db_schema)
{
	const char *id = json_get_str(rule, "id") ? json_get_str(rule, "id") : "a new rule";
	const char *contract = json_get_str(rule, "contract"), *entity = json_get_str(rule, "entity");

	if (contract) {
		jv list = json_get(contracts, "contracts");
		bool known = has_id(list, contract);
		jv_free(list);
		if (!known) {
			affect(r, "flows", "%s names contract %s, which does not exist yet", id, contract);
			affect(r, "contracts", "%s names contract %s, which does not exist yet", id, contract);
		}
	}
	if (entity) {
		char *name = xstrdup(entity);
		char *dot = strchr(name, '.');
		if (dot)
			*dot++ = '\0';
		if (!schema_has(db_schema, name, dot)) {
			if (dot)
				affect(r, "schema", "%s names field %s, which the database schema lacks", id, entity);
			else
				affect(r, "schema", "%s names entity %s, which has no table", id, entity);
		}
		free(name);
	}
}

static int count(jv delta, const char *key)
{
	jv a = json_get(delta, key);
	int n = jv_get_kind(a) == JV_KIND_ARRAY ? jv_array_length(jv_copy(a)) : 0;

	jv_free(a);
	return n;
}

int delta_affected(jv *out_rerun, jv *out_why, jv delta, jv contracts, jv db_schema)
{
	struct radius r = { { NULL } };
	static const char *const lists[] = { "change", "new" };
	int changed = count(delta, "change") + count(delta, "new") + count(delta, "remove");

	affect(&r, "rules", "the delta is applied to the rule set");
	for (size_t k = 0; k < 2; k++) {
		jv items = json_get(delta, lists[k]);
		if (jv_get_kind(items) == JV_KIND_ARRAY) {
			jv_array_foreach(items, i, rule) {
				rule_needs(&r, rule, contracts, db_schema);
				jv_free(rule);
			}
		}
		jv_free(items);
	}
	if (changed) {
		static const char *const after[] = { "tests", "code", "integrate", "review" };
		for (size_t i = 0; i < 4; i++)
			affect(&r, after[i], "%d rule%s changed, added or removed", changed, changed == 1 ? "" : "s");
	}
	*out_rerun = jv_array();
	*out_why = jv_array();
	for (size_t i = 0; i < NSTAGES; i++) {
		if (!r.because[i])
			continue;
		*out_rerun = jv_array_append(*out_rerun, jv_string(stage_order[i]));
		*out_why = jv_array_append(*out_why, json_set(json_set(jv_object(), "stage", jv_string(stage_order[i])),
							      "because", jv_string(r.because[i])));
		free(r.because[i]);
	}
	return 0;
}
