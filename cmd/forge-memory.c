/*
 * forge-memory - what forge has learned (lib/memory/memory.h).
 *
 *   forge-memory list [--type T] [--tag T]... [--min-confidence X] [--archived|--all] [-n N]
 *   forge-memory search QUERY... [--type T] [--tag T]... [--min-confidence X] [-n N] [--peek]
 *   forge-memory show ID
 *   forge-memory add [--type T] [--context C] [--tags a,b] [--confidence X] [--source S] CONTENT...
 *   forge-memory signal ID applied|confirmed|dismissed
 *   forge-memory stats
 *   forge-memory consolidate [--no-llm]
 *   forge-memory forget ID [--hard] [--reason R]
 *   forge-memory export [--all] [FILE]
 *   forge-memory import FILE|-
 *   forge-memory patterns [-n N]
 *
 * Exit status: 0 done; 1 no such memory (show, forget, signal); 2 usage or
 * bad input (an import that fails imports nothing and names the line);
 * 5 the database (or the embedding API) failed.
 */
#include "core/buf.h"
#include "app/cli.h"
#include "app/term.h"
#include "core/forge.h"
#include "core/json.h"
#include "llm/llm.h"
#include "memory/memory.h"
#include "store/store.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { OPT_JSON = 256, OPT_TAG, OPT_MINCONF, OPT_ARCHIVED, OPT_ALL, OPT_PEEK,
       OPT_CONTEXT, OPT_TAGS, OPT_CONF, OPT_SOURCE, OPT_NOLLM, OPT_HARD, OPT_REASON, OPT_TRIGGER };

static const struct cli_option options[] = {
	{ "json", 0, NULL, "JSON (lines) instead of text", OPT_JSON },
	{ "type", 't', "T", "episodic, semantic or procedural", 't' },
	{ "tag", 0, "TAG", "list/search: only memories with this tag (repeatable)", OPT_TAG },
	{ "min-confidence", 0, "X", "list/search: only confidence >= X", OPT_MINCONF },
	{ "limit", 'n', "N", "list/search/patterns: at most N (default 20 / 10)", 'n' },
	{ "archived", 0, NULL, "list: archived memories only", OPT_ARCHIVED },
	{ "all", 0, NULL, "list/export: archived memories too", OPT_ALL },
	{ "peek", 0, NULL, "search: do not count as an access", OPT_PEEK },
	{ "context", 0, "TEXT", "add: when the memory is relevant", OPT_CONTEXT },
	{ "tags", 0, "A,B", "add: comma-separated tags", OPT_TAGS },
	{ "confidence", 0, "X", "add: confidence 0-1 (default from --source: 0.5, human 0.7, production 0.9)", OPT_CONF },
	{ "source", 0, "S", "add: where it comes from (human, production, a trace id)", OPT_SOURCE },
	{ "no-llm", 0, NULL, "consolidate: do not call a model (promotion is skipped)", OPT_NOLLM },
	{ "trigger", 0, "TEXT", "consolidate: why it runs, kept with its record (default: manual)", OPT_TRIGGER },
	{ "hard", 0, NULL, "forget: delete for good instead of archiving", OPT_HARD },
	{ "reason", 0, "TEXT", "forget: why (kept with the archived memory)", OPT_REASON },
	{ NULL, 0, NULL, NULL, 0 }
};

static const struct cli_spec spec = {
	.name = "forge-memory",
	.synopsis = "list [--type T] [--tag TAG]... [--min-confidence X] [--archived|--all] [-n N] [--json]\n"
		    "search QUERY... [--type T] [--tag TAG]... [--min-confidence X] [-n N] [--peek] [--json]\n"
		    "show ID [--json]\n"
		    "add [--type T] [--context TEXT] [--tags A,B] [--confidence X] [--source S] CONTENT...\n"
		    "signal ID applied|confirmed|dismissed\n"
		    "stats [--json]\n"
		    "consolidate [--no-llm] [--trigger TEXT] [--json]\n"
		    "forget ID [--hard] [--reason TEXT]\n"
		    "export [--all] [FILE]\n"
		    "import FILE|-\n"
		    "patterns [-n N] [--json]",
	.description = "The memories forge learns from its runs: episodic (what happened), semantic\n"
		       "(patterns and facts) and procedural (how to do things), with confidence.\n"
		       "  search       recall: word matches (FTS5, stemmed), vector matches and the terms\n"
		       "               of the query's concepts (thesaurus; memory.thesaurus adds groups)\n"
		       "               when its words explain it poorly, fused by rank; confidence and\n"
		       "               recency only order equal matches; no match, no result (--json:\n"
		       "               each list's rank, cosine, lexical score, relevance 0-1)\n"
		       "  consolidate  merge similar, promote 3+ similar episodes to patterns (LLM), decay,\n"
		       "               archive (confidence < 0.2 or 90 days unused), resolve conflicts\n"
		       "  export/import  JSON lines, one memory per line; an import is all or nothing",
	.options = options,
	.flags = CLI_MODEL_OPTIONS,
	.extra_help = "Exit status: 0 done, 1 no such memory, 2 usage or bad input, 5 database failure.\n",
};

#define MAX_TAGS 16

struct args {
	bool json, archived, all, peek, no_llm, hard;
	const char *trigger;
	enum memory_type type;
	const char *tags_filter[MAX_TAGS];
	size_t ntags;
	double min_conf, conf;
	long limit;
	const char *context, *tags, *source, *reason;
};

static int on_option(int id, const char *arg, void *payload)
{
	struct args *a = payload;

	switch (id) {
	case OPT_JSON: a->json = true; return 0;
	case 't': return memory_type_parse(&a->type, arg);
	case OPT_TAG:
		if (a->ntags == MAX_TAGS)
			return forge_error("at most %d --tag options", MAX_TAGS);
		a->tags_filter[a->ntags++] = arg;
		return 0;
	case OPT_MINCONF:
		if (forge_parse_double(&a->min_conf, arg) < 0 || a->min_conf < 0 || a->min_conf > 1)
			return forge_error("--min-confidence: '%s' is not a number from 0 to 1", arg);
		return 0;
	case OPT_CONF:
		if (forge_parse_double(&a->conf, arg) < 0 || a->conf < 0 || a->conf > 1)
			return forge_error("--confidence: '%s' is not a number from 0 to 1", arg);
		return 0;
	case 'n': return forge_parse_long(&a->limit, arg, 1, 100000000);
	case OPT_ARCHIVED: a->archived = true; return 0;
	case OPT_ALL: a->all = true; return 0;
	case OPT_PEEK: a->peek = true; return 0;
	case OPT_CONTEXT: a->context = arg; return 0;
	case OPT_TAGS: a->tags = arg; return 0;
	case OPT_SOURCE: a->source = arg; return 0;
	case OPT_NOLLM: a->no_llm = true; return 0;
	case OPT_TRIGGER: a->trigger = arg; return 0;
	case OPT_HARD: a->hard = true; return 0;
	case OPT_REASON: a->reason = arg; return 0;
	}
	return forge_error("unhandled option");
}

static int fail(int status)
{
	fprintf(stderr, "forge-memory: %s\n", forge_last_error());
	return status;
}

static void filter_of(struct memory_filter *f, const struct args *a, long dflt)
{
	memory_filter_init(f);
	f->type = a->type;
	f->tags = a->tags_filter;
	f->ntags = a->ntags;
	f->min_confidence = a->min_conf;
	f->include_archived = a->all;
	f->only_archived = a->archived;
	f->limit = (int)(a->limit ? a->limit : dflt);
}

/* One line of mem (borrowed): its content's first line, at most 80
 * characters of it (never half of one).  A memory's text comes from
 * monitors, models and imports: its control characters are shown as
 * spaces (term_safe), they must not drive the terminal. */
static void print_memory_line(jv mem, double relevance)
{
	jv safe = term_safe(jv_copy(mem));
	const char *content = json_get_str(safe, "content");
	size_t n = strcspn(content, "\n"), cut = term_cut(content, n, 80);

	if (relevance >= 0)
		printf("%.3f  ", relevance);
	printf("%s  %-10s %.2f  %.*s%s%s\n", json_get_str(safe, "id"), json_get_str(safe, "type"),
	       json_get_num(safe, "confidence", 0), (int)cut, content,
	       cut < n || content[n] ? "..." : "", json_has(safe, "archived_at") ? "  [archived]" : "");
	jv_free(safe);
}

/* ---- commands --------------------------------------------------------- */

static int cmd_list(struct memory_cli *c, const struct args *a)
{
	struct memory_filter f;
	jv out;

	filter_of(&f, a, 20);
	if (memory_list(&out, c->m, &f) < 0)
		return fail(FORGE_EXIT_DEPENDENCY);
	jv_array_foreach(out, i, mem) {
		if (a->json)
			json_write_line(stdout, mem, false);
		else {
			print_memory_line(mem, -1);
			jv_free(mem);
		}
		(void)i;
	}
	jv_free(out);
	return 0;
}

static int join_args(struct buf *b, int argc, char **argv, int first)
{
	for (int i = first; i < argc; i++)
		buf_addf(b, "%s%s", i > first ? " " : "", argv[i]);
	return (int)b->len;
}

static int cmd_search(struct memory_cli *c, const struct args *a, int argc, char **argv, int first)
{
	struct memory_query q;
	struct buf text = BUF_INIT;
	jv out;
	int status = 0;

	if (!join_args(&text, argc, argv, first))
		cli_usage_error(&spec, "search needs a query");
	memory_query_init(&q, text.buf);
	filter_of(&q.filter, a, 10);
	q.filter.include_archived = q.filter.only_archived = false;
	q.no_touch = a->peek;
	if (memory_recall(&out, c->m, &q) < 0) {
		buf_release(&text);
		return fail(FORGE_EXIT_DEPENDENCY);
	}
	jv_array_foreach(out, i, r) {
		if (a->json) {
			json_write_line(stdout, r, false);
		} else {
			jv mem = json_get(r, "memory");

			print_memory_line(mem, json_get_num(r, "relevance", 0));
			jv_free(mem);
			jv_free(r);
		}
		(void)i;
	}
	jv_free(out);
	buf_release(&text);
	return status;
}

static int cmd_show(struct memory_cli *c, const struct args *a, const char *id)
{
	jv mem, rels;

	if (memory_get(&mem, c->m, id) < 0)
		return fail(FORGE_EXIT_DEPENDENCY);
	if (jv_get_kind(mem) == JV_KIND_NULL) {
		fprintf(stderr, "forge-memory: no memory '%s'\n", id);
		return FORGE_EXIT_REJECTED;
	}
	if (memory_relations(&rels, c->m, id) < 0) {
		jv_free(mem);
		return fail(FORGE_EXIT_DEPENDENCY);
	}
	mem = json_set(mem, "relationships", rels);
	if (a->json)
		return json_write_line(stdout, mem, false), 0;
	mem = term_safe(mem);   /* (print_memory_line's reason) */
	jv_object_foreach(mem, k, v) {
		if (jv_get_kind(v) == JV_KIND_STRING) {
			printf("%-16s %s\n", jv_string_value(k), jv_string_value(v));
		} else {
			char *s = json_dumps(jv_copy(v), false);

			printf("%-16s %s\n", jv_string_value(k), s);
			free(s);
		}
		jv_free(k);
		jv_free(v);
	}
	jv_free(mem);
	return 0;
}

static int cmd_add(struct memory_cli *c, const struct args *a, int argc, char **argv, int first)
{
	struct buf text = BUF_INIT;
	char id[ULID_LEN + 1];
	jv mem = jv_object(), tags = jv_array();

	if (!join_args(&text, argc, argv, first))
		cli_usage_error(&spec, "add needs the memory's content");
	mem = json_set(mem, "type", jv_string(memory_type_name(a->type == MEMORY_ANY ? MEMORY_SEMANTIC : a->type)));
	mem = json_set(mem, "content", jv_string(text.buf));
	if (a->context)
		mem = json_set(mem, "context", jv_string(a->context));
	if (a->source)
		mem = json_set(mem, "source", jv_string(a->source));
	if (a->conf >= 0)
		mem = json_set(mem, "confidence", jv_number(a->conf));
	for (const char *p = a->tags; p && *p;) {
		size_t n = strcspn(p, ",");

		while (n && p[n - 1] == ' ')
			n--;
		if (n) {
			char *t = xstrndup(p, n);

			tags = jv_array_append(tags, jv_string(t));
			free(t);
		}
		p += strcspn(p, ",");
		p += *p == ',';
		p += strspn(p, " ");
	}
	mem = json_set(mem, "tags", tags);
	buf_release(&text);
	if (memory_store(id, c->m, mem) < 0)
		return fail(strstr(forge_last_error(), "database") ? FORGE_EXIT_DEPENDENCY : FORGE_EXIT_USAGE);
	if (a->json) {
		jv o = jv_object();

		json_write_line(stdout, json_set(o, "id", jv_string(id)), false);
	} else {
		printf("%s\n", id);
	}
	return 0;
}

static int cmd_signal(struct memory_cli *c, const char *id, const char *what)
{
	enum memory_signal s;
	double after;
	int rc;

	if (!strcmp(what, "applied"))
		s = MEMORY_SIGNAL_APPLIED;
	else if (!strcmp(what, "confirmed"))
		s = MEMORY_SIGNAL_CONFIRMED;
	else if (!strcmp(what, "dismissed"))
		s = MEMORY_SIGNAL_DISMISSED;
	else
		cli_usage_error(&spec, "unknown signal '%s': use applied, confirmed or dismissed", what);
	rc = memory_signal(&after, c->m, id, s);
	if (rc < 0)
		return fail(FORGE_EXIT_DEPENDENCY);
	if (rc == MEMORY_NOT_FOUND) {
		fprintf(stderr, "forge-memory: no memory '%s'\n", id);
		return FORGE_EXIT_REJECTED;
	}
	printf("%s confidence %.2f\n", id, after);
	return 0;
}

static int cmd_stats(struct memory_cli *c, const struct args *a)
{
	jv st;

	jv last;

	if (memory_stats(&st, c->m) < 0 || memory_consolidation_last(&last, c->m) < 0)
		return fail(FORGE_EXIT_DEPENDENCY);
	st = json_set(st, "last_consolidation", last);
	if (a->json)
		return json_write_line(stdout, st, false), 0;
	printf("memories      %.0f active, %.0f archived\n", json_get_num(st, "active", 0),
	       json_get_num(st, "archived", 0));
	jv bt = json_get(st, "by_type");
	jv_object_foreach(bt, k, v) {
		printf("  %-11s %.0f\n", jv_string_value(k), jv_number_value(v));
		jv_free(k);
		jv_free(v);
	}
	jv_free(bt);
	printf("confidence    %.2f on average\n", json_get_num(st, "average_confidence", 0));
	printf("patterns      %.0f\nrelationships %.0f\ndatabase      %.0f bytes\nembedder      %s\n",
	       json_get_num(st, "patterns", 0), json_get_num(st, "relationships", 0),
	       json_get_num(st, "database_bytes", 0), json_get_str(st, "embedder"));
	jv tags = json_get(st, "top_tags");
	jv_array_foreach(tags, i, t) {
		printf("%s%s (%.0f)", i ? ", " : "top tags      ", json_get_str(t, "tag"), json_get_num(t, "count", 0));
		jv_free(t);
	}
	if (jv_array_length(jv_copy(tags)))
		printf("\n");
	jv_free(tags);
	last = json_get(st, "last_consolidation");
	if (jv_get_kind(last) == JV_KIND_OBJECT)
		printf("consolidated  %s (%s): merged %.0f, promoted %.0f, decayed %.0f, archived %.0f, "
		       "conflicts %.0f; %.0f memories then\n", json_get_str(last, "at"),
		       json_get_str(last, "trigger") ? json_get_str(last, "trigger") : "manual",
		       json_get_num(last, "merged", 0), json_get_num(last, "promoted", 0),
		       json_get_num(last, "decayed", 0), json_get_num(last, "archived", 0),
		       json_get_num(last, "conflicts", 0), json_get_num(last, "memories", 0));
	else
		printf("consolidated  never (forge memory consolidate; runs by itself after a run when due)\n");
	jv_free(last);
	jv_free(st);
	return 0;
}

static int cmd_consolidate(struct memory_cli *c, const struct args *a, const struct cli_common *common)
{
	jv report;
	char *llm_note = NULL;

	if (!a->no_llm && memory_cli_llm(c, common) < 0)
		llm_note = xstrdup(forge_last_error());
	int rc = memory_consolidate(&report, c->m, c->llm);

	if (jv_get_kind(report) == JV_KIND_OBJECT &&
	    memory_consolidation_record(c->m, jv_copy(report), a->trigger, "forge-memory") < 0)
		fprintf(stderr, "forge-memory: warning: the consolidation is not recorded: %s\n", forge_last_error());

	if (jv_get_kind(report) == JV_KIND_NULL) {
		free(llm_note);
		return fail(FORGE_EXIT_DEPENDENCY);
	}
	report = json_set(report, "llm", a->no_llm ? jv_string("disabled (--no-llm)") :
			  llm_note ? jv_string(llm_note) : jv_string(llm_client_model(c->llm) ?
									llm_client_model(c->llm) : "?"));
	free(llm_note);
	if (a->json) {
		json_write_line(stdout, report, false);
	} else {
		printf("merged %.0f, promoted %.0f (patterns updated %.0f, skipped %.0f), decayed %.0f, "
		       "archived %.0f, conflicts %.0f in %.0f ms\n", json_get_num(report, "merged", 0),
		       json_get_num(report, "promoted", 0), json_get_num(report, "patterns_updated", 0),
		       json_get_num(report, "skipped_promotions", 0), json_get_num(report, "decayed", 0),
		       json_get_num(report, "archived", 0), json_get_num(report, "conflicts", 0),
		       json_get_num(report, "duration_ms", 0));
		if (json_get_num(report, "skipped_promotions", 0) > 0)
			printf("model: %s\n", json_get_str(report, "llm"));
		jv errs = json_get(report, "errors");
		jv_array_foreach(errs, i, e) {
			fprintf(stderr, "forge-memory: %s\n", jv_string_value(e));
			jv_free(e);
			(void)i;
		}
		jv_free(errs);
		jv_free(report);
	}
	return rc < 0 ? FORGE_EXIT_DEPENDENCY : 0;
}

static int cmd_forget(struct memory_cli *c, const struct args *a, const char *id)
{
	int rc = a->hard ? memory_delete(c->m, id) : memory_archive(c->m, id, a->reason ? a->reason : "forgotten");

	if (rc < 0)
		return fail(FORGE_EXIT_DEPENDENCY);
	if (rc == MEMORY_NOT_FOUND) {
		fprintf(stderr, "forge-memory: no memory '%s'\n", id);
		return FORGE_EXIT_REJECTED;
	}
	return 0;
}

static int cmd_export(struct memory_cli *c, const struct args *a, const char *file)
{
	FILE *f = stdout;
	long n;

	if (file && strcmp(file, "-") && !(f = fopen(file, "w"))) {
		forge_error("cannot write '%s'", file);
		return fail(FORGE_EXIT_USAGE);
	}
	n = memory_export(c->m, f, a->all);
	if (n < 0 && f == stdout && errno == EPIPE)
		return FORGE_EXIT_PIPE;   /* `| head`: as SIGPIPE would, nothing said */
	if (f != stdout && fclose(f) != 0 && n >= 0)
		n = forge_error("cannot write '%s'", file);
	if (n < 0)
		return fail(FORGE_EXIT_DEPENDENCY);
	if (f != stdout)
		fprintf(stderr, "forge-memory: exported %ld memories to %s\n", n, file);
	return 0;
}

static int cmd_import(struct memory_cli *c, const char *file)
{
	FILE *f = stdin;
	long imported, skipped;
	int rc;

	struct stat st;

	if (strcmp(file, "-") && !(f = fopen(file, "r"))) {
		forge_error("cannot read '%s': %s", file, strerror(errno));
		return fail(FORGE_EXIT_USAGE);
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		forge_error("'%s' is a directory: give a file of JSON lines (forge memory export's), or - for stdin",
			    file);
		fclose(f);
		return fail(FORGE_EXIT_USAGE);
	}
	rc = memory_import(&imported, &skipped, c->m, f, strcmp(file, "-") ? file : "stdin");
	if (f != stdin)
		fclose(f);
	if (rc < 0)
		return fail(strstr(forge_last_error(), ": line ") ? FORGE_EXIT_USAGE : FORGE_EXIT_DEPENDENCY);
	printf("imported %ld, skipped %ld (already present)\n", imported, skipped);
	return 0;
}

static int cmd_patterns(struct memory_cli *c, const struct args *a)
{
	jv out;

	if (memory_patterns(&out, c->m, (int)(a->limit ? a->limit : 20)) < 0)
		return fail(FORGE_EXIT_DEPENDENCY);
	jv_array_foreach(out, i, p) {
		if (a->json) {
			json_write_line(stdout, p, false);
		} else {
			p = term_safe(p);   /* (print_memory_line's reason) */
			printf("%s  %-8s %.2f x%.0f  %s: %s\n", json_get_str(p, "id"), json_get_str(p, "type"),
			       json_get_num(p, "confidence", 0), json_get_num(p, "frequency", 0),
			       json_get_str(p, "trigger"), json_get_str(p, "pattern"));
			jv_free(p);
		}
		(void)i;
	}
	jv_free(out);
	return 0;
}

int main(int argc, char **argv)
{
	struct cli_common common;
	struct args a = { .type = MEMORY_ANY, .conf = -1 };
	struct memory_cli c;
	int first = cli_parse(&common, &spec, argc, argv, on_option, &a), status;

	signal(SIGPIPE, SIG_IGN);
	if (first >= argc)
		cli_usage_error(&spec, "a command is needed: list, search, show, add, signal, stats, "
				"consolidate, forget, export, import or patterns");
	const char *cmd = argv[first++];
	int nargs = argc - first;
	static const char *const cmds[] = { "list", "search", "show", "add", "signal", "stats",
					    "consolidate", "forget", "export", "import", "patterns", NULL };
	bool known = false;

	for (int i = 0; cmds[i]; i++)
		known = known || !strcmp(cmd, cmds[i]);
	if (!known)
		cli_usage_error(&spec, "unknown command '%s'", cmd);
	if ((!strcmp(cmd, "show") || !strcmp(cmd, "forget") || !strcmp(cmd, "import")) && nargs != 1)
		cli_usage_error(&spec, "%s needs exactly one %s", cmd, strcmp(cmd, "import") ? "ID" : "FILE (or -)");
	if (!strcmp(cmd, "signal") && nargs != 2)
		cli_usage_error(&spec, "signal needs an ID and applied, confirmed or dismissed");
	if ((!strcmp(cmd, "list") || !strcmp(cmd, "stats") || !strcmp(cmd, "consolidate") ||
	     !strcmp(cmd, "patterns")) && nargs)
		cli_usage_error(&spec, "%s takes no operands", cmd);
	if (!strcmp(cmd, "export") && nargs > 1)
		cli_usage_error(&spec, "export takes at most one FILE");
	/* The commands that only read open the database read-only, so that it
	 * serves them where it cannot be written; search writes when it can
	 * (it counts the access, caches embeddings) and reads when it cannot. */
	static const char *const reads[] = { "list", "show", "stats", "export", "patterns", NULL };
	bool only_reads = false;
	for (int i = 0; reads[i]; i++)
		only_reads = only_reads || !strcmp(cmd, reads[i]);
	int rc = (only_reads ? memory_cli_open_readonly
		  : !strcmp(cmd, "search") ? memory_cli_open_existing : memory_cli_open)(&status, &c, &common);
	if (rc < 0 && !strcmp(cmd, "search") && status == FORGE_EXIT_DEPENDENCY) {
		memory_cli_close(&c);
		rc = memory_cli_open_readonly(&status, &c, &common);
	}
	if (rc < 0) {
		memory_cli_close(&c);
		return cli_finish("forge-memory", fail(status));
	}
	if (!strcmp(cmd, "list"))
		status = cmd_list(&c, &a);
	else if (!strcmp(cmd, "search"))
		status = cmd_search(&c, &a, argc, argv, first);
	else if (!strcmp(cmd, "show"))
		status = cmd_show(&c, &a, argv[first]);
	else if (!strcmp(cmd, "add"))
		status = cmd_add(&c, &a, argc, argv, first);
	else if (!strcmp(cmd, "signal"))
		status = cmd_signal(&c, argv[first], argv[first + 1]);
	else if (!strcmp(cmd, "stats"))
		status = cmd_stats(&c, &a);
	else if (!strcmp(cmd, "consolidate"))
		status = cmd_consolidate(&c, &a, &common);
	else if (!strcmp(cmd, "forget"))
		status = cmd_forget(&c, &a, argv[first]);
	else if (!strcmp(cmd, "export"))
		status = cmd_export(&c, &a, nargs ? argv[first] : NULL);
	else if (!strcmp(cmd, "import"))
		status = cmd_import(&c, argv[first]);
	else
		status = cmd_patterns(&c, &a);
	memory_cli_close(&c);
	return cli_finish("forge-memory", status);
}
