/*
 * forge-report - a run as one self-contained HTML page: summary, plan,
 * timeline of phases and model calls, cost per phase, diff, findings and
 * tests.  Inline CSS, no script, nothing fetched: the file opens offline
 * and can be mailed or attached to a ticket.
 *
 *   forge report TRACE > run.html
 *
 * Everything taken from the run (task, plan, diff, messages) is
 * HTML-escaped: a diff may contain "<script>", and it shows as text.
 */
#include "app/cli.h"
#include "app/runview.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/money.h"
#include "git/git.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cli_spec spec = {
	.name = "forge-report",
	.synopsis = "TRACE > run.html",
	.description = "Write run TRACE as one self-contained HTML page on stdout: its summary, plan,\n"
		       "timeline (phases, model calls, gates, bounces), cost per phase, diff, review\n"
		       "findings and tests.  The page has its CSS inline, no script and no external\n"
		       "resource; everything from the run is escaped.  TRACE may be any unique prefix of\n"
		       "a trace id.",
	.extra_help = "Exit status: 0 written, 2 no run or several match TRACE, 5 the database failed.",
};

/* Text as HTML: & < > " ' escaped; NUL-free. */
static void esc_n(const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i]; i++) {
		switch (s[i]) {
		case '&': fputs("&amp;", stdout); break;
		case '<': fputs("&lt;", stdout); break;
		case '>': fputs("&gt;", stdout); break;
		case '"': fputs("&quot;", stdout); break;
		case '\'': fputs("&#39;", stdout); break;
		default: putchar(s[i]);
		}
	}
}

static void esc(const char *s)
{
	if (s)
		esc_n(s, strlen(s));
}

/* <tr><th>key</th><td>escaped value</td></tr> */
static void row(const char *key, const char *val)
{
	printf("<tr><th>%s</th><td>", key);
	esc(val ? val : "-");
	printf("</td></tr>\n");
}

static const char css[] =
	"body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#222}"
	"h1{font-size:1.4em}h2{font-size:1.15em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}"
	"table{border-collapse:collapse}th,td{text-align:left;padding:.15em .8em .15em 0;vertical-align:top}"
	"th{color:#555;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}"
	"pre{background:#f6f8fa;padding:.8em;overflow-x:auto;font:12px/1.4 ui-monospace,monospace}"
	".add{color:#116329;background:#e6ffec}.del{color:#82071e;background:#ffebe9}.hunk{color:#0550ae}"
	".meta{font-weight:600}.bar{background:#54aeff;height:.8em;display:inline-block}"
	".ok{color:#116329}.bad{color:#82071e}.muted{color:#777}";

static void summary(jv v)
{
	jv run = json_get(v, "run"), task = json_get(v, "task"), merged = json_get(v, "merged");
	char when[64];

	printf("<section id=\"summary\"><h2>Summary</h2><table>\n");
	row("run", json_get_str(v, "trace_id"));
	row("task", json_get_str(run, "task"));
	row("status", json_get_str(v, "status"));
	if (jv_get_kind(merged) == JV_KIND_OBJECT)
		row("merged into", json_get_str(merged, "branch"));
	if (json_get_str(run, "error") && *json_get_str(run, "error"))
		row("reason", json_get_str(run, "error"));
	runview_local_time(when, sizeof when, json_get_str(run, "started_at"), true);
	row("started", when);
	row("branch", json_get_str(task, "branch"));
	row("base", json_get_str(task, "base_commit"));
	printf("</table></section>\n");
	jv_free(run);
	jv_free(task);
	jv_free(merged);
}

static void plan(jv p)
{
	jv tasks = json_get(p, "tasks"), risk = json_get(p, "risk"), est = json_get(p, "estimates");

	printf("<section id=\"plan\"><h2>Plan</h2>");
	if (jv_get_kind(p) != JV_KIND_OBJECT) {
		printf("<p class=\"muted\">no plan</p></section>\n");
		goto out;
	}
	printf("<p>");
	esc(json_get_str(p, "summary"));
	printf("</p><p>risk ");
	esc(json_get_str(risk, "level"));
	printf(" (%.2f), estimate ", json_get_num(risk, "score", 0));
	esc(json_get_str(est, "complexity"));
	printf(", ");
	esc(json_get_str(est, "effort"));
	printf("</p><ol>\n");
	if (jv_get_kind(tasks) == JV_KIND_ARRAY) {
		jv_array_foreach(tasks, i, t) {
			printf("<li><b>");
			esc(json_get_str(t, "title"));
			printf("</b> ");
			esc(json_get_str(t, "description"));
			printf("</li>\n");
			jv_free(t);
		}
	}
	printf("</ol></section>\n");
out:
	jv_free(tasks);
	jv_free(risk);
	jv_free(est);
}

static void timeline(jv tl)
{
	printf("<section id=\"timeline\"><h2>Timeline</h2><table>\n");
	jv_array_foreach(tl, i, e) {
		char when[32];
		runview_local_time(when, sizeof when, json_get_str(e, "ts"), false);
		printf("<tr class=\"ev-");
		esc(json_get_str(e, "type"));
		printf("\"><td>%s</td><td>", when);
		esc(json_get_str(e, "phase"));
		printf("</td><td>");
		esc(json_get_str(e, "text"));
		printf("</td></tr>\n");
		jv_free(e);
	}
	printf("</table></section>\n");
}

static void cost(jv v)
{
	jv pc = json_get(v, "phase_cost"), total = json_get(v, "cost");
	double max = 0;
	char m[MONEY_LEN];

	jv_array_foreach(pc, i, p) {
		if (json_get_num(p, "usd", 0) > max)
			max = json_get_num(p, "usd", 0);
		jv_free(p);
	}
	printf("<section id=\"cost\"><h2>Cost per phase</h2><table>\n"
	       "<tr><th>phase</th><th>USD</th><th>tokens</th><th>model calls</th><th></th></tr>\n");
	jv_array_foreach(pc, i, p) {
		double usd = json_get_num(p, "usd", 0);
		printf("<tr><td>");
		esc(json_get_str(p, "phase"));
		printf("</td><td class=\"n\">%s</td><td class=\"n\">%.0f</td><td class=\"n\">%.0f</td>"
		       "<td><span class=\"bar\" style=\"width:%.0fpx\"></span></td></tr>\n", money_fmt(m, sizeof m, usd),
		       json_get_num(p, "tokens", 0), json_get_num(p, "calls", 0), max > 0 ? 200 * usd / max : 0);
		jv_free(p);
	}
	printf("<tr><th>total</th><td class=\"n\">%s</td><td class=\"n\">%.0f</td><td></td><td></td></tr>\n"
	       "</table></section>\n", money_fmt(m, sizeof m, json_get_num(total, "usd", 0)),
	       json_get_num(total, "tokens", 0));
	jv_free(pc);
	jv_free(total);
}

static void diff(jv d)
{
	const char *patch = json_get_str(d, "patch");

	printf("<section id=\"diff\"><h2>Diff</h2>");
	if (!patch || !*patch) {
		printf("<p class=\"muted\">no changes</p></section>\n");
		return;
	}
	printf("<pre>");
	for (const char *p = patch; *p;) {
		size_t n = strcspn(p, "\n");
		const char *cls = !strncmp(p, "diff ", 5) || !strncmp(p, "--- ", 4) || !strncmp(p, "+++ ", 4) ? "meta" :
				  *p == '@' ? "hunk" : *p == '+' ? "add" : *p == '-' ? "del" : NULL;
		if (cls)
			printf("<span class=\"%s\">", cls);
		esc_n(p, n);
		printf("%s\n", cls ? "</span>" : "");
		p += n + (p[n] == '\n');
	}
	printf("</pre></section>\n");
}

static void findings(jv review)
{
	jv fs = json_get(review, "findings");

	printf("<section id=\"findings\"><h2>Review findings</h2>");
	if (jv_get_kind(review) == JV_KIND_OBJECT) {
		printf("<p>decision: ");
		esc(json_get_str(review, "decision"));
		printf("</p>");
	}
	if (jv_get_kind(fs) != JV_KIND_ARRAY || jv_array_length(jv_copy(fs)) == 0) {
		printf("<p class=\"muted\">no findings</p></section>\n");
		jv_free(fs);
		return;
	}
	printf("<table><tr><th>severity</th><th>where</th><th>message</th></tr>\n");
	jv_array_foreach(fs, i, f) {
		printf("<tr><td>");
		esc(json_get_str(f, "severity"));
		printf("</td><td>");
		esc(json_get_str(f, "file"));
		printf(":%.0f</td><td>", json_get_num(f, "line", 0));
		esc(json_get_str(f, "message"));
		printf("</td></tr>\n");
		jv_free(f);
	}
	printf("</table></section>\n");
	jv_free(fs);
}

static void tests(jv t)
{
	jv sum = json_get(t, "summary"), fails = json_get(t, "failures");

	printf("<section id=\"tests\"><h2>Tests</h2>");
	if (jv_get_kind(sum) != JV_KIND_OBJECT) {
		printf("<p class=\"muted\">no tests were run</p>");
	} else {
		printf("<p><span class=\"%s\">%.0f passed, %.0f failed</span>, %.0f skipped (<code>",
		       json_get_num(sum, "failed", 0) > 0 ? "bad" : "ok", json_get_num(sum, "passed", 0),
		       json_get_num(sum, "failed", 0), json_get_num(sum, "skipped", 0));
		esc(json_get_str(t, "command"));
		printf("</code>)</p>\n");
	}
	if (jv_get_kind(fails) == JV_KIND_ARRAY && jv_array_length(jv_copy(fails)) > 0) {
		printf("<ul>\n");
		jv_array_foreach(fails, i, f) {
			printf("<li><b>");
			esc(json_get_str(f, "test"));
			printf("</b>: ");
			esc(json_get_str(f, "message"));
			printf("</li>\n");
			jv_free(f);
		}
		printf("</ul>\n");
	}
	printf("</section>\n");
	jv_free(sum);
	jv_free(fails);
}

static void page(jv v)
{
	jv run = json_get(v, "run"), p = json_get(v, "plan"), tl = json_get(v, "timeline"), d = json_get(v, "diff"),
	   rv = json_get(v, "review"), ts = json_get(v, "tests");

	printf("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
	       "<title>forge run ");
	esc(json_get_str(v, "trace_id"));
	printf("</title>\n<style>%s</style></head><body>\n<h1>", css);
	esc(json_get_str(run, "task"));
	printf("</h1>\n");
	summary(v);
	plan(p);
	timeline(tl);
	cost(v);
	diff(d);
	findings(rv);
	tests(ts);
	printf("<footer class=\"muted\"><p>forge %s</p></footer>\n</body></html>\n", FORGE_VERSION);
	jv_free(run);
	jv_free(p);
	jv_free(tl);
	jv_free(d);
	jv_free(rv);
	jv_free(ts);
}

int main(int argc, char **argv)
{
	struct cli_common common;
	int first = cli_parse(&common, &spec, argc, argv, NULL, NULL);
	struct runview_open v;
	int status;

	if (argc - first != 1)
		cli_usage_error(&spec, "one trace id is needed");
	status = runview_open(&v, &common, "forge-report", argv[first], true);
	if (status == 0)
		page(v.view);
	runview_close(&v);
	return cli_finish("forge-report", status);
}
