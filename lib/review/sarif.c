/* sarif.c - SARIF 2.1.0 output; see sarif.h. */
#include "review/sarif.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *level_of(const char *severity)
{
	if (!severity || strcmp(severity, "info") == 0)
		return "note";
	if (strcmp(severity, "warning") == 0)
		return "warning";
	return "error";
}

/* A relative path as a URI reference: unreserved characters and '/' kept,
 * everything else percent-encoded. */
static jv uri_of(const char *path)
{
	struct buf b = BUF_INIT;

	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    strchr("-._~/", *p))
			buf_addch(&b, (char)*p);
		else
			buf_addf(&b, "%%%02X", *p);
	}
	jv s = jv_string(b.buf);
	buf_release(&b);
	return s;
}

static const char *precision_of(double c)
{
	return c >= 0.9 ? "very-high" : c >= 0.75 ? "high" : c >= 0.5 ? "medium" : "low";
}

static jv rule_descriptor(jv f)
{
	const char *rule = json_get_str(f, "rule");
	const char *cat = json_get_str(f, "category") ? json_get_str(f, "category") : "correctness";
	const char *layer = json_get_str(f, "layer") ? json_get_str(f, "layer") : "static";
	const char *sev = json_get_str(f, "severity");
	jv props = jv_object();
	jv r = jv_object();

	r = json_set(r, "id", jv_string(rule));
	r = json_set(r, "shortDescription", json_set(jv_object(), "text", jv_string(rule)));
	r = json_set(r, "defaultConfiguration", json_set(jv_object(), "level", jv_string(level_of(sev))));
	props = json_set(props, "tags", strcmp(cat, layer) == 0 ? JV_ARRAY(jv_string(cat))
				: JV_ARRAY(jv_string(cat), jv_string(layer)));
	props = json_set(props, "precision", jv_string(precision_of(json_get_num(f, "confidence", 1))));
	if (strcmp(cat, "security") == 0) {
		const char *ss = !sev ? "2.0" : strcmp(sev, "critical") == 0 ? "9.5" :
				 strcmp(sev, "error") == 0 ? "7.5" : strcmp(sev, "warning") == 0 ? "5.0" : "2.0";
		props = json_set(props, "security-severity", jv_string(ss));
	}
	return json_set(r, "properties", props);
}

jv sarif_log(jv findings, const char *tool_version)
{
	jv rules = jv_array(), results = jv_array(), index = jv_object();
	int nrules = 0;

	if (jv_get_kind(findings) == JV_KIND_ARRAY) {
		jv_array_foreach(findings, i, f) {
			(void)i;
			const char *rule = json_get_str(f, "rule") ? json_get_str(f, "rule") : "forge/finding";
			const char *file = json_get_str(f, "file");
			const char *fp = json_get_str(f, "fingerprint");
			int line = (int)json_get_num(f, "line", 0);
			jv res = jv_object(), props = jv_object();

			if (!json_has(index, rule)) {
				jv g = json_get_str(f, "rule") ? jv_copy(f) : json_set(jv_copy(f), "rule", jv_string(rule));
				rules = jv_array_append(rules, rule_descriptor(g));
				jv_free(g);
				index = json_set(index, rule, jv_number(nrules++));
			}
			res = json_set(res, "ruleId", jv_string(rule));
			res = json_set(res, "ruleIndex", jv_number(json_get_num(index, rule, 0)));
			res = json_set(res, "level", jv_string(level_of(json_get_str(f, "severity"))));
			res = json_set(res, "message", json_set(jv_object(), "text",
							      jv_string(json_get_str(f, "message") ? json_get_str(f, "message") : rule)));
			if (file) {
				jv phys = json_set(jv_object(), "artifactLocation", json_set(jv_object(), "uri", uri_of(file)));
				if (line > 0)
					phys = json_set(phys, "region", json_set(jv_object(), "startLine", jv_number(line)));
				res = json_set(res, "locations", JV_ARRAY(json_set(jv_object(), "physicalLocation", phys)));
			}
			if (fp) {
				jv pf = json_set(jv_object(), "primaryLocationLineHash", jv_string_fmt("%s:1", fp));
				res = json_set(res, "partialFingerprints", json_set(pf, "forge/v1", jv_string(fp)));
			}
			if (json_get_str(f, "id"))
				props = json_set(props, "id", jv_string(json_get_str(f, "id")));
			props = json_set(props, "layer", json_get(f, "layer"));
			props = json_set(props, "category", json_get(f, "category"));
			props = json_set(props, "severity", json_get(f, "severity"));
			props = json_set(props, "confidence", jv_number(json_get_num(f, "confidence", 1)));
			results = jv_array_append(results, json_set(res, "properties", props));
			jv_free(f);
		}
	}
	jv_free(index);
	jv driver = jv_object();
	driver = json_set(driver, "name", jv_string("forge-review"));
	driver = json_set(driver, "version", jv_string(tool_version));
	driver = json_set(driver, "semanticVersion", jv_string(tool_version));
	driver = json_set(driver, "rules", rules);
	jv run = json_set(jv_object(), "tool", json_set(jv_object(), "driver", driver));
	run = json_set(run, "results", results);
	jv log = jv_object();
	log = json_set(log, "$schema", jv_string("https://json.schemastore.org/sarif-2.1.0.json"));
	log = json_set(log, "version", jv_string("2.1.0"));
	return json_set(log, "runs", JV_ARRAY(run));
}

int sarif_write(const char *path, jv findings, const char *tool_version)
{
	jv log = sarif_log(findings, tool_version);
	FILE *f = fopen(path, "w");
	int rc = 0;

	if (!f) {
		jv_free(log);
		return forge_error("cannot write '%s': %s", path, strerror(errno));
	}
	jv dumped = jv_dump_string(log, JV_PRINT_PRETTY | JV_PRINT_SPACE1);
	if (fputs(jv_string_value(dumped), f) == EOF || fputc('\n', f) == EOF)
		rc = forge_error("cannot write '%s': %s", path, strerror(errno));
	jv_free(dumped);
	if (fclose(f) != 0 && rc == 0)
		rc = forge_error("cannot write '%s': %s", path, strerror(errno));
	return rc;
}
