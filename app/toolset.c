/* toolset.c - a phase's tools: built-in and MCP, one permission policy; see toolset.h. */
#include "app/toolset.h"
#include "app/term.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/secret.h"
#include "core/tmpdir.h"
#include "data/config.h"
#include "data/schema.h"
#include "data/stream.h"
#include "mcp/mcp.h"
#include "os/sandbox.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STDERR_EVENT_MAX 4000
/* A tool's definition goes with every model call of the phase: a server's
 * description and input schema are bounded far above what real servers
 * write (a few KiB), so one cannot fill the model's window or the bill. */
#define DESCRIPTION_MAX (16u << 10)     /* bytes; longer is cut */
#define SCHEMA_MAX (64u << 10)          /* bytes of its JSON; larger leaves the tool out */
/* The tools a model call may offer: OpenAI's Chat Completions take at most
 * 128 ("A max of 128 functions are supported"; more: a 400
 * array_above_max_length, and the phase failed on every call).  One cap for
 * every provider: Forge's own tools first, the MCP tools past it left out. */
#define TOOLS_MAX 128

struct server {
	char *name;
	jv conf;                        /* its mcp.servers entry */
	bool selected;                  /* started for this phase (or asked for) */
	struct mcp_client *c;           /* NULL when not running */
	char *error;                    /* why it failed, or NULL */
	char *tmp;                      /* its HOME and TMPDIR */
	jv tools;                       /* its listing, or null */
	jv refused;                     /* its tools left out: [{tool, reason}] */
};

struct mtool {
	char *name;                     /* SERVER__TOOL */
	struct server *srv;
	char *tool;                     /* the server's name for it */
	jv spec;                        /* {name, description, input_schema} for the model */
	struct schema *schema;          /* its input schema, or NULL when it did not compile */
};

struct toolset {
	char *phase;
	char *root;                     /* the servers' cwd, or NULL */
	const struct config *cfg;
	struct stream_out *out;
	void (*warn)(void *, const char *);
	void *warn_payload;
	struct server *srv;
	size_t nsrv;
	struct mtool *tools;
	size_t ntools;
	jv own;                         /* the phase's built-in tool names */
	size_t output_cap;
};

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	return buf_detach(&b, NULL);
}

/* ---- policy ---------------------------------------------------------------- */

const char *tool_permission_name(enum tool_permission p)
{
	return p == TOOL_DENY ? "deny" : p == TOOL_ASK_FIRST ? "ask" : "allow";
}

/* tools.permissions.SECTION.LIST as an array (null when absent). */
static jv perm_list(const struct config *cfg, const char *section, const char *list)
{
	char key[160];

	snprintf(key, sizeof key, "tools.permissions.%s.%s", section, list);
	return config_get(cfg, key);
}

static bool matches(jv globs, const char *name)
{
	bool hit = false;

	if (jv_get_kind(globs) != JV_KIND_ARRAY)
		return false;
	jv_array_foreach(globs, i, g) {
		if (jv_get_kind(g) == JV_KIND_STRING && fnmatch(jv_string_value(g), name, 0) == 0)
			hit = true;
		jv_free(g);
		(void)i;
	}
	return hit;
}

enum tool_permission toolset_permission(const struct config *cfg, const char *phase, const char *name,
					bool own, const char **rule)
{
	static char why[160];
	const char *sections[] = { phase && *phase ? phase : "default", "default" };
	enum tool_permission p = own ? TOOL_ALLOW : TOOL_DENY;
	static const char *const lists[] = { "deny", "ask" };

	snprintf(why, sizeof why, "default");
	for (size_t l = 0; l < 2; l++)
		for (size_t s = 0; s < 2; s++) {
			jv g = perm_list(cfg, sections[s], lists[l]);
			bool hit = matches(g, name);
			jv_free(g);
			if (hit) {
				snprintf(why, sizeof why, "tools.permissions.%s.%s", sections[s], lists[l]);
				if (rule)
					*rule = why;
				return l == 0 ? TOOL_DENY : TOOL_ASK_FIRST;
			}
		}
	for (size_t s = 0; s < 2; s++) {
		jv g = perm_list(cfg, sections[s], "allow");
		if (jv_get_kind(g) == JV_KIND_ARRAY) {
			p = matches(g, name) ? TOOL_ALLOW : TOOL_DENY;
			snprintf(why, sizeof why, "tools.permissions.%s.allow", sections[s]);
			jv_free(g);
			break;
		}
		jv_free(g);
	}
	if (rule)
		*rule = why;
	return p;
}

int toolset_tool_name(char out[65], const char *server, const char *tool)
{
	struct buf b = BUF_INIT;

	if (!tool || !*tool)
		return forge_error("the tool has no name");
	buf_addf(&b, "%s__", server);
	/* one '_' a character the model's names do not allow: a UTF-8
	 * sequence is one character ("café" -> "caf_", not "caf__") */
	for (const unsigned char *p = (const unsigned char *)tool; *p; p++) {
		if (isalnum(*p) || *p == '_' || *p == '-')
			buf_addch(&b, (char)*p);
		else if ((*p & 0xC0) != 0x80)
			buf_addch(&b, '_');
	}
	for (size_t i = 0; i < b.len; i++)
		if (!isalnum((unsigned char)b.buf[i]) && b.buf[i] != '_' && b.buf[i] != '-')
			b.buf[i] = '_';   /* (the server's name is checked by the schema; to be sure) */
	if (b.len > 64) {
		forge_error("the name %s is longer than the 64 characters a model allows", b.buf);
		buf_release(&b);
		return -1;
	}
	memcpy(out, b.buf, b.len + 1);
	buf_release(&b);
	return 0;
}

/* ---- events ---------------------------------------------------------------- */

static void emit(struct toolset *ts, const char *type, jv payload)
{
	if (ts->out)
		stream_emit(ts->out, type, payload);
	else
		jv_free(payload);
}

/* A warning; an API key a server echoed (its stderr in an error) is
 * redacted, as the events redact it (DESIGN.md section 5: never logged). */
static void warn(struct toolset *ts, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct toolset *ts, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	llm_redact(msg);
	if (ts->warn)
		ts->warn(ts->warn_payload, msg);
}

/* What a server named (a tool, a cursor) for a message: on one line, its
 * newlines and control characters spaces (term_clean_line), cut at 200
 * bytes.  A name that held "\nforge-plan: failed: ..." printed a line of
 * its own (the warning's cleaning keeps newlines, for stderr).  Malloc'd. */
static char *one_line(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	char *out;

	if (n > 200) {
		n = 200;
		while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	out = xstrndup(s ? s : "", n);
	term_clean_line(out, n);
	return out;
}

/* A listing that stopped before the server's last page (a pager going
 * round, or without end) is said once, not left to look whole. */
static void warn_cut(struct toolset *ts, const struct server *s)
{
	const char *why = mcp_tools_cut(s->c);

	if (why) {
		char *shown = one_line(why);
		warn(ts, "MCP server '%s': %s; its tool list is cut there", s->name, shown);
		free(shown);
	}
}

/* The tail of a server's stderr for an event. */
static jv stderr_tail(struct mcp_client *c)
{
	const char *s = c ? mcp_stderr(c) : "";
	size_t n = strlen(s);

	if (n > STDERR_EVENT_MAX)
		s += n - STDERR_EVENT_MAX;
	while (((unsigned char)*s & 0xc0) == 0x80)
		s++;
	return jv_string(s);
}

/* A server failed (to start, or during a call): event and warning; its
 * client is closed and its tools fail from now on. */
static void server_failed(struct toolset *ts, struct server *s, const char *during, const char *why)
{
	jv ev = json_set(json_set(jv_object(), "server", jv_string(s->name)), "error", jv_string(why));

	if (during)
		ev = json_set(ev, "during", jv_string(during));
	ev = json_set(ev, "stderr", stderr_tail(s->c));
	emit(ts, "mcp.server.failed", ev);
	warn(ts, "%s%s; going on without its tools", during ? "during a call: " : "", why);
	free(s->error);
	s->error = llm_redact(xstrdup(why));
	if (s->c) {
		mcp_close(s->c);
		s->c = NULL;
	}
}

/* ---- starting servers ---------------------------------------------------- */

static bool wants_phase(jv conf, const char *phase)
{
	jv phases = json_get(conf, "phases");
	bool yes = jv_get_kind(phases) != JV_KIND_ARRAY;     /* default: every phase */

	if (!yes) {
		jv_array_foreach(phases, i, p) {
			const char *v = jv_string_value(p);
			if (!strcmp(v, "*") || (phase && !strcmp(v, phase)))
				yes = true;
			jv_free(p);
			(void)i;
		}
	}
	jv_free(phases);
	return yes;
}

/* value with ${VAR} replaced from Forge's environment, into b; -1 with a
 * message for an unset variable or one the layer may not name. */
static int expand(struct buf *b, const char *value, bool may_expand, const char *key)
{
	for (const char *p = value; *p;) {
		const char *start = strstr(p, "${"), *end = start ? strchr(start, '}') : NULL;
		if (!start || !end) {
			buf_adds(b, p);
			break;
		}
		buf_add(b, p, (size_t)(start - p));
		char var[256];
		snprintf(var, sizeof var, "%.*s", (int)(end - start - 2), start + 2);
		if (!may_expand)
			return forge_error("env.%s names ${%s}: only your own configuration (the user file, --config, "
					   "FORGE_* or flags) may pass Forge's environment to a server, not the "
					   "repository's .forge/config.json", key, var);
		const char *v = getenv(var);
		if (!v)
			return forge_error("env.%s names ${%s}, which is not set", key, var);
		buf_adds(b, v);
		p = end + 1;
	}
	return 0;
}

/* The server's environment: the command environment plus its env. */
static int server_env(char ***out, struct toolset *ts, struct server *s)
{
	struct sandbox_policy *policy = NULL;
	jv env = json_get(s->conf, "env");
	char **base = NULL;
	size_t n = 0;
	int rc = 0;

	*out = NULL;
	if (sandbox_policy_from_config(&policy, ts->cfg) < 0 || tmpdir_make(&s->tmp, "forge-mcp") < 0) {
		sandbox_policy_free(policy);
		jv_free(env);
		return -1;
	}
	base = sandbox_build_env(policy, NULL, s->tmp);
	sandbox_policy_free(policy);
	while (base[n])
		n++;
	size_t extra = jv_get_kind(env) == JV_KIND_OBJECT ? (size_t)jv_object_length(jv_copy(env)) : 0;
	char **all = xcalloc(n + extra + 1, sizeof *all);
	memcpy(all, base, n * sizeof *all);
	free(base);     /* the strings moved to all */
	if (extra) {
		jv_object_foreach(env, k, v) {
			char path[256];
			const char *layer = NULL, *src = NULL;
			struct buf b = BUF_INIT;
			snprintf(path, sizeof path, "mcp.servers.%s.env.%s", s->name, jv_string_value(k));
			bool own = config_leaf_layer(ts->cfg, path, &layer, &src) < 0 || !layer ||
				   strcmp(layer, "project") != 0;
			buf_addf(&b, "%s=", jv_string_value(k));
			if (rc == 0 && expand(&b, jv_string_value(v), own, jv_string_value(k)) < 0)
				rc = -1;
			/* replace an inherited variable of the same name */
			size_t klen = strlen(jv_string_value(k)), i;
			for (i = 0; i < n; i++)
				if (!strncmp(all[i], b.buf, klen + 1))
					break;
			if (i < n)
				free(all[i]);
			else
				i = n++;
			all[i] = buf_detach(&b, NULL);
			jv_free(k);
			jv_free(v);
		}
	}
	jv_free(env);
	if (rc < 0) {
		sandbox_env_free(all);
		return -1;
	}
	*out = all;
	return 0;
}

int toolset_input_schema(jv *out, jv tool)
{
	jv schema = json_get(tool, "inputSchema"), type;

	*out = jv_null();
	if (jv_get_kind(schema) != JV_KIND_OBJECT) {
		jv_free(schema);
		*out = json_set(jv_object(), "type", jv_string("object"));
		return 0;
	}
	type = json_get(schema, "type");
	if (jv_get_kind(type) == JV_KIND_NULL) {
		jv_free(type);
		*out = json_set(schema, "type", jv_string("object"));
		return 0;
	}
	if (jv_get_kind(type) != JV_KIND_STRING || strcmp(jv_string_value(type), "object") != 0) {
		jv shown = jv_dump_string(type, 0);

		forge_error("its input schema is of type %s, not object (a model's tools take an "
			    "object of arguments)", jv_string_value(shown));
		jv_free(shown);
		jv_free(schema);
		return -1;
	}
	jv_free(type);
	*out = schema;
	return 0;
}

/* Why schema (borrowed) is too large to offer, or NULL. */
static const char *schema_too_large(jv schema)
{
	static char why[128];
	char *text = json_dumps(jv_copy(schema), false);
	size_t n = strlen(text);

	free(text);
	if (n <= SCHEMA_MAX)
		return NULL;
	snprintf(why, sizeof why, "its input schema is %zu bytes of JSON, over the %u Forge offers a model",
		 n, SCHEMA_MAX);
	return why;
}

/* The description offered for tool: the server's, cut at DESCRIPTION_MAX
 * bytes (on a character's boundary) with a warning, or a name of it. */
static jv description(struct toolset *ts, struct server *s, const char *tool, const char *desc)
{
	size_t n = desc ? strlen(desc) : 0, cut = DESCRIPTION_MAX;

	if (!desc)
		return jv_string_fmt("%s (MCP server %s)", tool, s->name);
	if (n <= DESCRIPTION_MAX)
		return jv_string(desc);
	while (cut && ((unsigned char)desc[cut] & 0xc0) == 0x80)
		cut--;
	char *shown = one_line(tool);
	warn(ts, "MCP server '%s': the description of tool '%s' is %zu bytes; only its first %u are offered",
	     s->name, shown, n, DESCRIPTION_MAX);
	free(shown);
	return jv_string_fmt("%.*s\xe2\x80\xa6", (int)cut, desc);
}

/* A tool of s left out: an mcp.tool.refused event, a warning, and a line
 * of forge mcp list. */
static void refuse(struct toolset *ts, struct server *s, const char *tool, const char *why)
{
	char *shown = one_line(tool);

	emit(ts, "mcp.tool.refused", json_set(json_set(json_set(jv_object(), "server", jv_string(s->name)),
		"tool", json_str_or_null(tool)), "reason", jv_string(why)));
	warn(ts, "MCP server '%s': tool '%s' is left out: %s", s->name, shown, why);
	s->refused = jv_array_append(s->refused, json_set(json_set(jv_object(), "tool", jv_string(tool ? tool : "")),
							  "reason", jv_string(why)));
	free(shown);
}

/*
 * Compile a tool's input schema (consumed) for checking the model's input
 * against it: *out, or NULL when it uses what Forge's validator does not
 * implement ("if", an anchor: the server checks its input, and a provider
 * takes it).  -1 with a message when it is no JSON Schema at all
 * ("properties": "nope"): the provider refuses the whole request for it,
 * every call of the phase (exit 5) -- the tool is left out instead.
 */
static int tool_schema(struct schema **out, jv schema)
{
	bool unsupported = false;

	if (schema_compile_checked(out, schema, &unsupported) == 0)
		return 0;
	*out = NULL;
	if (unsupported)
		return 0;
	return forge_error_prefix("its input schema is not a valid JSON Schema");
}

/* Register the server's tools under their model names. */
static void add_tools(struct toolset *ts, struct server *s)
{
	jv_array_foreach(s->tools, i, t) {
		const char *tool = json_get_str(t, "name");
		char name[65];
		const char *clash = NULL;
		jv schema = jv_null();
		struct schema *compiled = NULL;
		if (toolset_tool_name(name, s->name, tool) < 0) {
			clash = forge_last_error();
		} else {
			for (size_t j = 0; j < ts->ntools && !clash; j++)
				if (!strcmp(ts->tools[j].name, name))
					clash = "another MCP tool has that name";
		}
		if (!clash && toolset_input_schema(&schema, t) < 0)
			clash = forge_last_error();
		if (!clash)
			clash = schema_too_large(schema);
		if (!clash && tool_schema(&compiled, jv_copy(schema)) < 0)
			clash = forge_last_error();
		if (clash) {
			refuse(ts, s, tool, clash);
			jv_free(schema);
			jv_free(t);
			continue;
		}
		struct mtool *m;
		ts->tools = xrealloc(ts->tools, (ts->ntools + 1) * sizeof *ts->tools);
		m = &ts->tools[ts->ntools++];
		memset(m, 0, sizeof *m);
		m->name = xstrdup(name);
		m->srv = s;
		m->tool = xstrdup(tool);
		m->schema = compiled;
		m->spec = json_set(json_set(json_set(jv_object(), "name", jv_string(name)), "description",
					    description(ts, s, tool, json_get_str(t, "description"))),
				   "input_schema", schema);
		jv_free(t);
		(void)i;
	}
	/* the tools whose definition nests deeper than Forge reads (mcp.h) */
	jv unreadable = mcp_tools_unreadable(s->c);
	jv_array_foreach(unreadable, i, u) {
		refuse(ts, s, json_get_str(u, "name"), json_get_str(u, "reason"));
		jv_free(u);
		(void)i;
	}
}

/* Whether the leaf path (or, for an object, any leaf under it) was set by
 * the repository's .forge/config.json. */
static bool from_project(const struct config *cfg, const char *path)
{
	const char *layer = NULL, *src = NULL;
	jv v = config_get(cfg, path);
	bool project = false;

	if (jv_get_kind(v) == JV_KIND_OBJECT) {
		jv_object_foreach(v, k, item) {
			char sub[512];
			snprintf(sub, sizeof sub, "%s.%s", path, jv_string_value(k));
			project = project || from_project(cfg, sub);
			jv_free(k);
			jv_free(item);
		}
	} else if (jv_is_valid(v) && jv_get_kind(v) != JV_KIND_NULL) {
		project = config_leaf_layer(cfg, path, &layer, &src) == 0 && layer && strcmp(layer, "project") == 0;
	}
	jv_free(v);
	return project;
}

/*
 * A server runs as the person, outside the sandbox, so what it runs must
 * be theirs: a server whose command, arguments or environment come from
 * the repository's .forge/config.json (a repository someone else wrote)
 * starts only when the person's own configuration says mcp.trust_project,
 * or trust_project, which lets the repository set what it otherwise may
 * not (data/config.h: a repository's own true for either is dropped when
 * the configuration loads).  project: whether it does (from_project()).
 */
static int server_allowed(struct toolset *ts, bool project)
{
	if (!project)
		return 0;
	if (config_get_bool(ts->cfg, "mcp.trust_project") || config_get_bool(ts->cfg, "trust_project"))
		return 0;
	return forge_error("the repository's .forge/config.json defines or changes this server, and a server "
			   "runs unconfined as you: set mcp.trust_project (or trust_project) to true in your own "
			   "configuration (~/.config/forge/config.json) to allow the repository's servers, or copy "
			   "the entry there");
}

static void start(struct toolset *ts, struct server *s)
{
	jv args = json_get(s->conf, "args");
	const char *command = json_get_str(s->conf, "command");
	size_t nargs = jv_get_kind(args) == JV_KIND_ARRAY ? (size_t)jv_array_length(jv_copy(args)) : 0;
	const char **argv = xcalloc(nargs + 2, sizeof *argv);
	char **env = NULL, path[256];
	struct mcp_opts o = MCP_OPTS_INIT;

	argv[0] = command;
	snprintf(path, sizeof path, "mcp.servers.%s", s->name);
	bool project = from_project(ts->cfg, path);
	if (server_allowed(ts, project) < 0) {
		server_failed(ts, s, NULL, forge_last_error());
		goto out;
	}
	for (size_t i = 0; i < nargs; i++) {
		jv a = jv_array_get(jv_copy(args), (int)i);
		argv[i + 1] = jv_string_value(a);   /* args keeps it alive */
		jv_free(a);
	}
	if (server_env(&env, ts, s) < 0) {
		server_failed(ts, s, NULL, forge_last_error());
		goto out;
	}
	o.name = s->name;
	o.argv = argv;
	o.envp = env;
	/* Not the run's worktree for the person's own server: python3 -m,
	 * npx and uvx would run a module or package the model wrote there
	 * instead of the one installed.  Its own empty directory (its HOME
	 * and TMPDIR), which no model writes.  A repository's server (under
	 * mcp.trust_project) may name its files: root, as before. */
	o.cwd = project ? ts->root : s->tmp;
	o.timeout_ms = (long)(json_get_num(s->conf, "timeout_s", 30) * 1000);
	/* starting (node, npx, python) may take longer than a call */
	o.init_timeout_ms = o.timeout_ms > 30000 ? o.timeout_ms : 30000;
	o.client_version = FORGE_VERSION;
	if (mcp_open(&s->c, &o) < 0 || mcp_tools(&s->tools, s->c) < 0) {
		char why[4096];
		snprintf(why, sizeof why, "%s", forge_last_error());
		server_failed(ts, s, NULL, why);
		goto out;
	}
	warn_cut(ts, s);
	add_tools(ts, s);
	jv ev = json_set(json_set(jv_object(), "server", jv_string(s->name)), "protocol",
			 jv_string(mcp_protocol(s->c)));
	ev = json_set(ev, "server_info", jv_copy(mcp_server_info(s->c)));
	ev = json_set(ev, "tools", jv_number(jv_array_length(jv_copy(s->tools))));
	ev = json_set(ev, "pid", jv_number(mcp_pid(s->c)));
	emit(ts, "mcp.server.started", ev);
out:
	sandbox_env_free(env);
	free(argv);
	jv_free(args);
}

int toolset_open(struct toolset **out, const struct toolset_opts *o)
{
	struct toolset *ts = xcalloc(1, sizeof *ts);
	jv servers = config_get(o->cfg, "mcp.servers");

	*out = NULL;
	ts->phase = xstrdup(o->phase ? o->phase : "");
	ts->cfg = o->cfg;
	ts->root = o->root ? xstrdup(o->root) : NULL;
	ts->out = o->out;
	ts->warn = o->warn;
	ts->warn_payload = o->warn_payload;
	ts->own = jv_array();
	/* The sandbox's own cap, read directly: a whole policy (its patterns
	 * compiled) only for this number cost more than the session's tools. */
	ts->output_cap = o->cfg ? (size_t)config_get_num(o->cfg, "sandbox.output_cap_bytes") : 65536;
	if (jv_get_kind(servers) == JV_KIND_OBJECT) {
		ts->srv = xcalloc((size_t)jv_object_length(jv_copy(servers)) + 1, sizeof *ts->srv);
		jv_object_foreach(servers, k, v) {
			if (jv_get_kind(v) == JV_KIND_OBJECT) {
				struct server *s = &ts->srv[ts->nsrv++];
				s->name = xstrdup(jv_string_value(k));
				s->conf = jv_copy(v);
				s->tools = jv_null();
				s->refused = jv_array();
				s->selected = o->server ? !strcmp(o->server, s->name)
					: !o->builtin_only && json_get_bool(v, "enabled", true) &&
					  (o->all || wants_phase(v, o->phase));
			}
			jv_free(k);
			jv_free(v);
		}
	}
	jv_free(servers);
	if (o->server) {
		size_t i;
		for (i = 0; i < ts->nsrv && !ts->srv[i].selected; i++)
			;
		if (i == ts->nsrv) {
			forge_error("no MCP server called '%s' in mcp.servers", o->server);
			toolset_close(ts);
			return -1;
		}
	}
	for (size_t i = 0; i < ts->nsrv; i++)
		if (ts->srv[i].selected)
			start(ts, &ts->srv[i]);
	*out = ts;
	return 0;
}

/* ---- the model's tools ------------------------------------------------------ */

static bool is_own(struct toolset *ts, const char *name)
{
	bool yes = false;

	jv_array_foreach(ts->own, i, n) {
		if (!strcmp(jv_string_value(n), name))
			yes = true;
		jv_free(n);
		(void)i;
	}
	return yes;
}

static struct mtool *find_tool(struct toolset *ts, const char *name)
{
	for (size_t i = 0; i < ts->ntools; i++)
		if (!strcmp(ts->tools[i].name, name))
			return &ts->tools[i];
	return NULL;
}

/* A running server's tools again when it said they changed
 * (notifications/tools/list_changed): the next agent run sees the new set. */
static void refresh(struct toolset *ts, struct server *s)
{
	jv now;

	if (!s->c || mcp_tools(&now, s->c) < 0)
		return;     /* a dead server fails its calls; nothing to offer */
	if (json_equal(now, s->tools)) {
		jv_free(now);
		return;     /* (a cut in it was said when it was listed) */
	}
	warn_cut(ts, s);
	size_t k = 0;
	for (size_t i = 0; i < ts->ntools; i++) {
		struct mtool *m = &ts->tools[i];
		if (m->srv == s) {
			free(m->name);
			free(m->tool);
			jv_free(m->spec);
			schema_free(m->schema);
		} else {
			ts->tools[k++] = *m;
		}
	}
	ts->ntools = k;
	jv_free(s->tools);
	s->tools = now;
	jv_free(s->refused);
	s->refused = jv_array();
	add_tools(ts, s);
	emit(ts, "mcp.tools.changed", json_set(json_set(jv_object(), "server", jv_string(s->name)), "tools",
					       jv_number(jv_array_length(jv_copy(s->tools)))));
}

jv toolset_specs(struct toolset *ts, jv builtin)
{
	jv out = jv_array();

	for (size_t i = 0; i < ts->nsrv; i++)
		refresh(ts, &ts->srv[i]);

	jv_free(ts->own);
	ts->own = jv_array();
	jv_array_foreach(builtin, i, spec) {
		const char *name = json_get_str(spec, "name");
		ts->own = jv_array_append(ts->own, jv_string(name));
		if (toolset_permission(ts->cfg, ts->phase, name, true, NULL) != TOOL_DENY)
			out = jv_array_append(out, jv_copy(spec));
		jv_free(spec);
		(void)i;
	}
	jv_free(builtin);
	/* (the agent adds finish and ask_human to these) */
	size_t own = (size_t)jv_array_length(jv_copy(out)) + AGENT_OWN_TOOLS;
	size_t room = own < TOOLS_MAX ? TOOLS_MAX - own : 0;
	struct server *over = NULL;     /* the server whose tools are being left out */
	size_t nover = 0;
	for (size_t i = 0; i <= ts->ntools; i++) {
		struct mtool *m = i < ts->ntools ? &ts->tools[i] : NULL;
		if (over && (!m || m->srv != over)) {
			warn(ts, "MCP server '%s': %zu of its tools are left out: a model call offers at most %d "
			     "tools (OpenAI's limit), Forge's own %zu first and the tools listed before these",
			     over->name, nover, TOOLS_MAX, own);
			over = NULL;
			nover = 0;
		}
		if (!m)
			break;
		if (is_own(ts, m->name)) {
			warn(ts, "MCP tool %s is left out: a built-in tool has that name", m->name);
			continue;
		}
		if (!m->srv->c || toolset_permission(ts->cfg, ts->phase, m->name, true, NULL) == TOOL_DENY)
			continue;
		if (room == 0) {
			char why[128];
			snprintf(why, sizeof why, "a model call offers at most %d tools (OpenAI's limit)", TOOLS_MAX);
			emit(ts, "mcp.tool.refused", json_set(json_set(json_set(jv_object(), "server",
				jv_string(m->srv->name)), "tool", jv_string(m->tool)), "reason", jv_string(why)));
			over = m->srv;
			nover++;
			continue;
		}
		room--;
		out = jv_array_append(out, jv_copy(m->spec));
	}
	return out;
}

/* text cut to cap bytes: the first and the last half, joined by a line
 * saying how much was left out (run_command's output cap). */
static char *cap_text(const char *text, size_t cap, bool *cut)
{
	size_t len = strlen(text);
	struct buf b = BUF_INIT;

	*cut = cap && len > cap;
	if (!*cut)
		return xstrdup(text);
	size_t head = cap / 2, tail = cap - head;
	while (head && ((unsigned char)text[head] & 0xc0) == 0x80)
		head--;
	size_t from = len - tail;
	while (from < len && ((unsigned char)text[from] & 0xc0) == 0x80)
		from++;
	buf_add(&b, text, head);
	buf_addf(&b, "\n[\xe2\x80\xa6 %zu bytes omitted \xe2\x80\xa6]\n", from - head);
	buf_add(&b, text + from, len - from);
	return buf_detach(&b, NULL);
}

static void outcome(struct agent_tool_outcome *out, bool ok, const char *kind, char *text, jv data)
{
	out->ok = ok;
	out->text = text;
	out->event = json_set(json_set(json_set(jv_object(), "kind", jv_string(kind)), "output_bytes",
					jv_number((double)strlen(text))), "data", data);
}

static void call_mcp(struct agent_tool_outcome *out, struct toolset *ts, struct mtool *m, jv input)
{
	struct server *s = m->srv;
	struct mcp_call_result r;
	jv data = json_set(json_set(jv_object(), "server", jv_string(s->name)), "tool", jv_string(m->tool));

	if (!s->c) {
		outcome(out, false, "failed", llm_redact(xasprintf("%s: the MCP server '%s' is not running: %s", m->name,
			s->name, s->error ? s->error : "it did not start")), data);
		return;
	}
	if (jv_get_kind(input) != JV_KIND_OBJECT || (m->schema && schema_validate(m->schema, input) < 0)) {
		outcome(out, false, "input", xasprintf("%s: invalid input%s%s; fix the input to match the tool's schema",
			m->name, jv_get_kind(input) != JV_KIND_OBJECT ? ": the input must be a JSON object" : ": ",
			jv_get_kind(input) != JV_KIND_OBJECT ? "" : forge_last_error()), data);
		return;
	}
	int rc = mcp_call(&r, s->c, m->tool, input);
	if (rc < 0) {
		char why[4096];
		snprintf(why, sizeof why, "%s", forge_last_error());
		data = json_set(data, "error", jv_string(rc == MCP_ETIMEOUT ? "timeout" : rc == MCP_ERPC ? "rpc" : "dead"));
		if (rc == MCP_EDEAD)
			server_failed(ts, s, m->tool, why);
		outcome(out, false, rc == MCP_ERPC ? "failed" : "internal", llm_redact(xasprintf("%s: %s", m->name, why)),
			data);
		mcp_call_result_release(&r);
		return;
	}
	bool cut;
	char *text = cap_text(r.text ? r.text : "", ts->output_cap, &cut);
	data = json_set(data, "output_bytes", jv_number((double)(r.text ? strlen(r.text) : 0)));
	data = json_set(data, "truncated", jv_bool(cut));
	data = json_set(data, "structured", jv_bool(jv_get_kind(r.structured) != JV_KIND_NULL));
	data = json_set(data, "latency_ms", jv_number((double)r.duration_ms));
	outcome(out, !r.is_error, r.is_error ? "failed" : "ok", text, data);
	mcp_call_result_release(&r);
}

int toolset_exec_fn(struct agent_tool_outcome *out, const char *name, jv input, void *payload)
{
	struct toolset_exec *x = payload;
	struct toolset *ts = x->ts;
	struct mtool *m = find_tool(ts, name);
	const char *rule = NULL;
	long long deadline = out->deadline_ms;   /* (the agent's, for the executor) */

	memset(out, 0, sizeof *out);
	out->event = jv_null();
	out->deadline_ms = deadline;
	bool own = is_own(ts, name);
	/* a tool the phase does not have at all: its executor says so in its words */
	if (!own && !m)
		return x->inner(out, name, input, x->inner_payload);
	switch (toolset_permission(ts->cfg, ts->phase, name, true, &rule)) {
	case TOOL_DENY:
		outcome(out, false, "denied", xasprintf("%s: refused: the tool is not allowed in %s (%s)", name,
			ts->phase, rule), json_set(jv_object(), "rule", jv_string(rule)));
		return 0;
	case TOOL_ASK_FIRST:
		outcome(out, false, "ask", xasprintf("%s: needs a human's approval (%s)", name, rule),
			json_set(jv_object(), "rule", jv_string(rule)));
		out->gate = xasprintf("%s matches %s", name, rule);
		return 0;
	case TOOL_ALLOW:
		break;
	}
	if (m && !own) {
		call_mcp(out, ts, m, input);
		return 0;
	}
	return x->inner(out, name, input, x->inner_payload);
}

/* ---- forge mcp ------------------------------------------------------------ */

jv toolset_servers_json(struct toolset *ts)
{
	jv all = jv_array();

	for (size_t i = 0; i < ts->nsrv; i++) {
		struct server *s = &ts->srv[i];
		jv e = json_set(jv_object(), "name", jv_string(s->name));
		e = json_set(e, "command", json_get(s->conf, "command"));
		e = json_set(e, "args", json_has(s->conf, "args") ? json_get(s->conf, "args") : jv_array());
		e = json_set(e, "phases", json_has(s->conf, "phases") ? json_get(s->conf, "phases")
				: jv_array_append(jv_array(), jv_string("*")));
		e = json_set(e, "enabled", jv_bool(json_get_bool(s->conf, "enabled", true)));
		const char *state = s->c ? "running" : s->error ? "failed"
			: !json_get_bool(s->conf, "enabled", true) ? "disabled" : "not started";
		e = json_set(e, "state", jv_string(state));
		if (s->error)
			e = json_set(e, "error", jv_string(s->error));
		if (s->c) {
			e = json_set(e, "protocol", jv_string(mcp_protocol(s->c)));
			e = json_set(e, "server_info", jv_copy(mcp_server_info(s->c)));
		}
		jv tools = jv_array();
		for (size_t j = 0; j < ts->ntools; j++)
			if (ts->tools[j].srv == s) {
				const char *d = json_get_str(ts->tools[j].spec, "description");
				tools = jv_array_append(tools, json_set(json_set(json_set(jv_object(),
					"name", jv_string(ts->tools[j].name)), "tool", jv_string(ts->tools[j].tool)),
					"description", jv_string(d ? d : "")));
			}
		e = json_set(e, "tools", tools);
		e = json_set(e, "refused", jv_copy(s->refused));
		all = jv_array_append(all, e);
	}
	/* (a key the server echoed, in its error or its info: as the events show it) */
	return llm_redact_jv(all);
}

struct mcp_client *toolset_client(struct toolset *ts, const char *server)
{
	for (size_t i = 0; i < ts->nsrv; i++)
		if (!strcmp(ts->srv[i].name, server)) {
			if (!ts->srv[i].c)
				forge_error("%s", ts->srv[i].error ? ts->srv[i].error : "not running");
			return ts->srv[i].c;
		}
	forge_error("no MCP server called '%s' in mcp.servers", server);
	return NULL;
}

void toolset_close(struct toolset *ts)
{
	if (!ts)
		return;
	/* all at once (mcp_close_all): servers that stay past their stdin's
	 * end and SIGTERM cost two graces in all, not two each */
	struct mcp_client **cs = xcalloc(ts->nsrv + 1, sizeof *cs);
	int *status = xcalloc(ts->nsrv + 1, sizeof *status);
	jv *tails = xcalloc(ts->nsrv + 1, sizeof *tails);
	for (size_t i = 0; i < ts->nsrv; i++) {
		cs[i] = ts->srv[i].c;
		tails[i] = cs[i] ? stderr_tail(cs[i]) : jv_null();
		ts->srv[i].c = NULL;
	}
	mcp_close_all(cs, ts->nsrv, status);
	for (size_t i = 0; i < ts->nsrv; i++) {
		struct server *s = &ts->srv[i];
		if (jv_get_kind(tails[i]) == JV_KIND_STRING)
			emit(ts, "mcp.server.stopped", json_set(json_set(json_set(jv_object(), "server",
				jv_string(s->name)), "status", jv_number(status[i])), "stderr", tails[i]));
		else
			jv_free(tails[i]);
		tmpdir_remove(s->tmp);
		free(s->name);
		free(s->error);
		jv_free(s->conf);
		jv_free(s->tools);
		jv_free(s->refused);
	}
	free(cs);
	free(status);
	free(tails);
	for (size_t i = 0; i < ts->ntools; i++) {
		free(ts->tools[i].name);
		free(ts->tools[i].tool);
		jv_free(ts->tools[i].spec);
		schema_free(ts->tools[i].schema);
	}
	free(ts->tools);
	free(ts->srv);
	jv_free(ts->own);
	free(ts->phase);
	free(ts->root);
	free(ts);
}
