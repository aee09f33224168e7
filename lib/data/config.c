/*
 * config.c - layered configuration; see config.h for the layers.
 *
 * The environment layer (config_env_vars() hands this table to --help):
 *
 *   FORGE_PROVIDER          llm.provider
 *   FORGE_MODEL             llm.model
 *   FORGE_FAST_MODEL        llm.fast_model
 *   FORGE_BASE_URL          llm.base_url
 *   FORGE_CASSETTE          llm.cassette
 *   FORGE_AUTOMATION_LEVEL  safety.automation_level   (number)
 *   FORGE_BUDGET_USD        budget.usd                (number)
 *   FORGE_MAX_LINE_BYTES    stream.max_line_bytes     (number)
 *   FORGE_DEPLOY_STRATEGY   deploy.strategy
 *   FORGE_TEST_COMMAND      tools.test_command
 *   FORGE_LINT_COMMAND      tools.lint_command
 *   FORGE_PUSH_REMOTE       git.push_remote
 *   FORGE_LLM_MAX_RETRIES   llm.max_retries           (number)
 *
 * An empty variable counts as unset, as it does for most Unix tools; a
 * number variable that does not parse is an error naming the variable.
 *
 * Every variable is kept as a layer of its own (named "env", its source
 * the variable), so that a schema error and config_explain() can name the
 * variable rather than "the environment".
 */
#include "data/config.h"
#include "core/buf.h"
#include "core/cachedir.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/secret.h"
#include "core/jqexpr.h"
#include "core/jsonscan.h"
#include "core/owner.h"
#include "core/resource.h"
#include "data/schema.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG_SCHEMA "config.schema.json"
#define CONFIG_DEFAULTS "config.defaults.json"

static const struct config_env_var env_vars[] = {
	{ "FORGE_PROVIDER", "llm.provider", false },
	{ "FORGE_MODEL", "llm.model", false },
	{ "FORGE_FAST_MODEL", "llm.fast_model", false },
	{ "FORGE_BASE_URL", "llm.base_url", false },
	{ "FORGE_CASSETTE", "llm.cassette", false },
	{ "FORGE_AUTOMATION_LEVEL", "safety.automation_level", true },
	{ "FORGE_BUDGET_USD", "budget.usd", true },
	{ "FORGE_MAX_LINE_BYTES", "stream.max_line_bytes", true },
	{ "FORGE_DEPLOY_STRATEGY", "deploy.strategy", false },
	{ "FORGE_TEST_COMMAND", "tools.test_command", false },
	{ "FORGE_LINT_COMMAND", "tools.lint_command", false },
	{ "FORGE_PUSH_REMOTE", "git.push_remote", false },
	{ "FORGE_LLM_MAX_RETRIES", "llm.max_retries", true },
	{ NULL, NULL, false }
};

struct layer {
	const char *name;       /* default|user|project|file|env|flags; static */
	char *source;           /* path, variable, "built-in" or "command line" */
	jv value;               /* the object this layer contributed */
};

/* A top-level section as read: its name and effective value (jv_invalid()
 * when no layer has it).  A short array searched by name: a read costs no
 * jv key (a configuration has ~20 sections). */
struct section {
	char *key;
	size_t key_len;
	jv value;
};

/* A top-level member of the built-in defaults' text. */
struct section_span {
	const char *key, *value;        /* into the resource: static */
	size_t key_len, value_len;
};

/*
 * The built-in defaults are ~25 KB of JSON, and parsing them into jv was
 * nearly all of config_load's cost in every process, which reads a few
 * sections of them.  So the defaults are kept as text with the place of
 * each top-level member (json_skim_members at load), and a top-level section is
 * parsed and merged across the layers the first time a key under it is
 * read (sections).  The other layers are parsed and checked at load, as
 * before, so their errors come at the same point.  What needs the whole
 * configuration (config_effective, config_explain, validating the merged
 * result when the cache does not know it) parses the sections not read yet
 * and merges every layer as before (effective).
 */
struct config {
	jv effective;           /* the whole merged configuration; jv_invalid() until needed */
	struct section *sections;       /* the sections read so far */
	size_t nsections;
	jv dsections;           /* section name -> the defaults' value, as parsed */
	struct layer *layers;   /* lowest first; layers[0] is the defaults, whose
				 * value is jv_invalid() until the whole is built */
	size_t nlayers;
	struct section_span *spans;     /* the defaults' top-level members, in order */
	size_t nspans;
	const char *defaults;   /* the defaults' text (static) */
	size_t defaults_len;
	int sections_parsed;    /* defaults' sections parsed (dsections) */
	struct buf inputs;      /* what the layers were made from: the effective
				 * configuration's key in the validation cache */
	jv ignored;             /* what the project layer may not set and did
				 * (config_ignored()) */
	struct memo *memo;      /* lookup()'s answers by path (CONFIG_MEMO_SLOTS), or NULL */
};

/* lookup()'s answers kept: a phase asks the same ~60 paths 240 times
 * (tools.permissions.* at each tool's offer and call), each a walk of jv
 * objects (~3K instructions).  The configuration does not change once
 * loaded.  Slot by hash; a collision replaces. */
#define CONFIG_MEMO_SLOTS 128

struct memo {
	char *path;             /* NULL: empty */
	jv value;               /* the answer (a reference held); invalid: absent */
};

const struct config_env_var *config_env_vars(void)
{
	return env_vars;
}

/* ---- paths ---------------------------------------------------------- */

/*
 * "a.b.c" as ["a","b","c"]; a segment in double quotes may hold dots
 * (llm.pricing."qwen2.5-coder:7b": a model's name is a key).  An invalid
 * jv (message set) on an empty or unterminated segment.
 */
static jv path_keys(const char *path)
{
	jv keys = jv_array();
	const char *p = path;

	for (;;) {
		bool quoted = *p == '"';
		const char *seg = p + quoted;
		size_t n = quoted ? strcspn(seg, "\"") : strcspn(seg, ".");
		const char *after = seg + n + (quoted && seg[n] == '"');

		if (n == 0 || n > 1024 || (quoted && seg[n] != '"') || (*after && *after != '.')) {
			jv_free(keys);
			forge_error("invalid configuration path '%s'%s", path,
				    quoted ? " (a quoted key ends with '\"' before the next '.')" : "");
			return jv_invalid();
		}
		keys = jv_array_append(keys, jv_string_sized(seg, (int)n));
		if (*after == '\0')
			return keys;
		p = after + 1;
	}
}

/* cur[segment] where segment is p[0..n): an object key, or a decimal index
 * into an array.  Consumes cur; an invalid jv when there is no such member. */
static jv path_step(jv cur, const char *p, size_t n)
{
	jv next = jv_invalid();

	if (jv_get_kind(cur) == JV_KIND_OBJECT) {
		jv key = jv_string_sized(p, (int)n);

		if (jv_object_has(jv_copy(cur), jv_copy(key)))
			next = jv_object_get(jv_copy(cur), key);
		else
			jv_free(key);
	} else if (jv_get_kind(cur) == JV_KIND_ARRAY && n > 0 && n < 10 &&
		   strspn(p, "0123456789") >= n) {
		int i = 0;

		for (size_t k = 0; k < n; k++)
			i = i * 10 + (p[k] - '0');
		if (i < jv_array_length(jv_copy(cur)))
			next = jv_array_get(jv_copy(cur), i);
	}
	jv_free(cur);
	return next;
}

/* True when every key of the path array exists in root.  Borrows both. */
static bool path_exists(jv root, jv keys)
{
	jv cur = jv_copy(root);
	bool found = true;

	jv_array_foreach(keys, i, key) {
		if (found && jv_get_kind(cur) == JV_KIND_OBJECT &&
		    jv_object_has(jv_copy(cur), jv_copy(key))) {
			cur = jv_object_get(cur, key);
		} else {
			found = false;
			jv_free(key);
		}
	}
	jv_free(cur);
	return found;
}

/* ["a","b"] as "a.b", malloc'd.  Borrows keys. */
static char *path_join(jv keys)
{
	struct buf b = BUF_INIT;

	jv_array_foreach(keys, i, key) {
		if (i > 0)
			buf_addch(&b, '.');
		if (jv_get_kind(key) == JV_KIND_STRING && strchr(jv_string_value(key), '.'))
			buf_addf(&b, "\"%s\"", jv_string_value(key));
		else if (jv_get_kind(key) == JV_KIND_STRING)
			buf_adds(&b, jv_string_value(key));
		else
			buf_addf(&b, "%d", (int)jv_number_value(key));
		jv_free(key);
	}
	return buf_detach(&b, NULL);
}

/* ---- flags ---------------------------------------------------------- */

int config_flag_set(jv *flags, const char *path, jv value)
{
	jv keys = path_keys(path);

	if (!jv_is_valid(keys)) {
		jv_free(value);
		return -1;
	}
	if (jv_get_kind(*flags) == JV_KIND_NULL) {
		jv_free(*flags);
		*flags = jv_object();
	}
	if (jv_get_kind(*flags) != JV_KIND_OBJECT) {
		jv_free(keys);
		jv_free(value);
		return forge_error("cannot set '%s': the flags are not an object", path);
	}
	/* jv_setpath makes the missing objects on the way and refuses to
	 * index into a scalar, which is exactly the rule we want. */
	jv res = jv_setpath(jv_copy(*flags), keys, value);
	if (!jv_is_valid(res)) {
		char *msg = json_invalid_msg(res);

		forge_error("cannot set '%s': %s", path, msg);
		free(msg);
		return -1;
	}
	jv_free(*flags);
	*flags = res;
	return 0;
}

int config_flag_assign(jv *flags, const char *assignment)
{
	const char *eq = strchr(assignment, '=');

	if (!eq || eq == assignment)
		return forge_error("'%s' is not PATH=VALUE", assignment);
	char *path = xstrndup(assignment, (size_t)(eq - assignment));
	const char *text = eq + 1;
	jv value = json_parse(text, strlen(text));

	/* Not JSON: a bare word like claude-haiku-4-5 is meant as a string. */
	if (!jv_is_valid(value)) {
		jv_free(value);
		value = jv_string(text);
	}
	int rc = config_flag_set(flags, path, value);
	free(path);
	return rc;
}

/* ---- layers --------------------------------------------------------- */

/* ---- what was valid before ---------------------------------------------
 *
 * Compiling the config schema and validating the merged configuration is
 * ~6M instructions, in every process.  A value that validated once is valid
 * again as long as the schema and the validator are the same, so the keys
 * of values that passed are kept in $XDG_CACHE_HOME/forge/config-valid
 * (else ~/.cache/forge/...), the last CACHE_KEEP of them, one hex line
 * each.  A key is 128 bits over the program's GNU build-id (which covers
 * the validator, the embedded schema and the built-in defaults: it is a
 * hash of the whole program) and what the value was made from: a file
 * layer's text; for the effective configuration, the inputs of every layer
 * in order (cfg->inputs: each file's text, each variable, the flags) --
 * the same inputs make the same value, and neither the value's JSON nor
 * the schema's text (~0.8M instructions) need hashing in every process.  A
 * value known only as a value (config_layer_check) is keyed by its compact
 * JSON.  Only passes are kept: a value that fails is validated each time
 * and fails with the same message.  The file is best effort: unreadable,
 * damaged or unwritable, it only costs the validation.
 */
#define CACHE_KEEP 256
#define KEY_HEX 32

static struct {
	bool loaded;
	char (*keys)[KEY_HEX + 1];
	size_t n;
	bool dirty;
	uint64_t seed_a, seed_b;        /* the build-id's hash: the seed */
} vcache;
static int full_validations;

int config_full_validations(void)
{
	return full_validations;
}

static void hash_bytes(uint64_t *a, uint64_t *b, const char *p, size_t n)
{
	uint64_t x = *a, y = *b;

	for (size_t i = 0; i < n; i++) {
		x = (x ^ (unsigned char)p[i]) * 0x100000001b3ULL;          /* FNV-1a */
		y = (y ^ (unsigned char)p[i]) * 0x9e3779b97f4a7c15ULL;
		y ^= y >> 29;
	}
	*a = x;
	*b = y;
}

static char *valid_cache_path(void)
{
	return cache_path("config-valid");
}

/* dl_iterate_phdr callback: hash the main program's GNU build-id note
 * (first object) into the seed; 1 when found. */
static int hash_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
			const char *name = p + sizeof *nh;
			const char *desc = name + ((nh->n_namesz + 3) & ~3u);

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 && desc + nh->n_descsz <= end) {
				hash_bytes(&vcache.seed_a, &vcache.seed_b, desc, nh->n_descsz);
				*(bool *)data = true;
				return 1;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 1;       /* only the first object: the program itself */
}

static void cache_load(void)
{
	char *path, line[KEY_HEX + 8];
	bool build_id = false;
	FILE *f;

	if (vcache.loaded)
		return;
	vcache.loaded = true;
	vcache.seed_a = 0xcbf29ce484222325ULL;
	vcache.seed_b = 0x6a09e667f3bcc909ULL;
	/* The validator's code and the schema are part of what passed: keys
	 * are per build of the program.  Without a build-id nothing is kept. */
	dl_iterate_phdr(hash_build_id, &build_id);
	if (!build_id)
		return;
	vcache.keys = xcalloc(CACHE_KEEP, sizeof *vcache.keys);
	if (!(path = valid_cache_path()))
		return;
	f = fopen(path, "re");
	free(path);
	if (!f)
		return;
	while (vcache.n < CACHE_KEEP && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strlen(line) == KEY_HEX && strspn(line, "0123456789abcdef") == KEY_HEX)
			memcpy(vcache.keys[vcache.n++], line, KEY_HEX + 1);
	}
	fclose(f);
}

/* The key of what a value was made from: kind ('L' a layer's text, 'E' the
 * effective configuration's inputs, 'V' a value's compact JSON) and text. */
static void cache_key(char out[KEY_HEX + 1], char kind, const char *text, size_t len)
{
	uint64_t a = vcache.seed_a, b = vcache.seed_b;

	hash_bytes(&a, &b, &kind, 1);
	hash_bytes(&a, &b, text, len);
	snprintf(out, KEY_HEX + 1, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

static bool cache_has(const char *key)
{
	for (size_t i = 0; i < vcache.n; i++)
		if (memcmp(vcache.keys[i], key, KEY_HEX) == 0)
			return true;
	return false;
}

static void cache_add(const char *key)
{
	if (vcache.n == CACHE_KEEP) {
		memmove(vcache.keys, vcache.keys + 1, (CACHE_KEEP - 1) * sizeof *vcache.keys);
		vcache.n--;
	}
	memcpy(vcache.keys[vcache.n++], key, KEY_HEX + 1);
	vcache.dirty = true;
}

/* Write the keys out (a new file renamed over the old one), when any was
 * added; errors are ignored. */
static void cache_save(void)
{
	char *path = vcache.dirty ? valid_cache_path() : NULL;
	struct buf tmp = BUF_INIT;
	FILE *f;

	vcache.dirty = false;
	if (!path)
		return;
	(void)cache_mkdirs(path);
	buf_addf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	if ((f = fopen(tmp.buf, "we"))) {
		owner_follow(fileno(f), tmp.buf);
		for (size_t i = 0; i < vcache.n; i++)
			fprintf(f, "%s\n", vcache.keys[i]);
		if (fclose(f) != 0 || rename(tmp.buf, path) != 0)
			unlink(tmp.buf);
	}
	buf_release(&tmp);
	free(path);
}

/* Validate one layer (or the merged result) against the config schema.
 * Borrows value.  kind and text[0..len): what it was made from, its key in
 * the cache (cache_key); text NULL: its compact JSON. */
/* One jq expression of a layer: it must compile (libjq's message, where). */
static int check_jq(const char *source, const char *where, jv expr /* borrowed */)
{
	if (jv_get_kind(expr) != JV_KIND_STRING || jqexpr_check(jv_string_value(expr)) == 0)
		return 0;
	return forge_error_prefix("%s: %s", source, where);
}

/*
 * The jq expressions a layer holds (the schema's $defs/jq: gates[].condition,
 * bounces.*_condition) compile, or the layer is refused when it is read --
 * not when the run reaches the gate, after its phases have run and paid.
 * Only on a validation the cache does not know: a compile costs ~1 ms.
 */
static int check_expressions(jv value, const char *source)
{
	jv gates = json_get(value, "gates"), bounces = json_get(value, "bounces");
	char where[64];
	int rc = 0;

	if (jv_get_kind(gates) == JV_KIND_ARRAY) {
		jv_array_foreach(gates, i, g) {
			jv cond = json_get(g, "condition");

			snprintf(where, sizeof where, ".gates[%d].condition", i);
			if (rc == 0)
				rc = check_jq(source, where, cond);
			jv_free(cond);
			jv_free(g);
		}
	}
	static const char *const keys[] = { "review_condition", "test_condition" };
	for (size_t i = 0; i < 2 && rc == 0 && jv_get_kind(bounces) == JV_KIND_OBJECT; i++) {
		jv e = json_get(bounces, keys[i]);

		snprintf(where, sizeof where, ".bounces.%s", keys[i]);
		rc = check_jq(source, where, e);
		jv_free(e);
	}
	jv_free(gates);
	jv_free(bounces);
	return rc;
}

static int validate(jv value, const char *source, char kind, const char *text, size_t len)
{
	char key[KEY_HEX + 1] = "";

	if (jv_get_kind(value) == JV_KIND_OBJECT && (cache_load(), vcache.keys)) {
		if (text) {
			cache_key(key, kind, text, len);
		} else {
			char *json = json_dumps(jv_copy(value), false);

			cache_key(key, 'V', json, strlen(json));
			free(json);
		}
		if (cache_has(key))
			return 0;
	}
	full_validations++;
	const struct schema *s = schema_get(CONFIG_SCHEMA);

	if (!s)
		return forge_error_prefix("loading '%s'", CONFIG_SCHEMA);
	if (jv_get_kind(value) != JV_KIND_OBJECT)
		return forge_error("%s: expected an object, got %s", source,
				   jv_kind_name(jv_get_kind(value)));
	if (schema_validate_all(NULL, s, value) < 0)
		return forge_error_prefix("%s", source);
	/* Its strings become paths, commands and URLs: C strings. */
	char *where = NULL;
	if (json_find_nul(&where, value) < 0) {
		forge_error("%s: '%s' holds a NUL character (\\u0000)", source, where);
		free(where);
		return -1;
	}
	if (check_expressions(value, source) < 0)
		return -1;
	if (*key)
		cache_add(key);
	return 0;
}

int config_layer_check(jv layer, const char *source)
{
	return validate(layer, source, 'V', NULL, 0);
}

/* Keep value (without notes) as the next layer (merged when read); text:
 * what it was made from (cfg->inputs).  Consumes value. */
static void keep_layer(struct config *cfg, const char *name, const char *source, jv value,
		       const char *text, size_t len)
{
	buf_addf(&cfg->inputs, "%s %zu:", name, len);
	buf_add(&cfg->inputs, text, len);
	cfg->layers = xrealloc(cfg->layers, (cfg->nlayers + 1) * sizeof *cfg->layers);
	cfg->layers[cfg->nlayers++] = (struct layer){ name, xstrdup(source), value };
}

/* Validate value, then keep it as the next layer; text[0..len): what it was
 * made from (a file's text, "VARIABLE=value", the flags' JSON).  Consumes
 * value. */
static int add_layer(struct config *cfg, const char *name, const char *source, jv value,
		     const char *text, size_t len)
{
	if (validate(value, source, 'L', text, len) < 0) {
		jv_free(value);
		return -1;
	}
	/* a URL's password is a secret from the start: the run's stored
	 * configuration, an event, a message never show it */
	secret_url_passwords_add_jv(value);
	keep_layer(cfg, name, source, json_strip_notes(value), text, len);
	return 0;
}

/* A missing file is ENOENT, or ENOTDIR when a parent is a plain file. */
static bool file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 || (errno != ENOENT && errno != ENOTDIR);
}

/* Add the layer in path.  A missing file is skipped unless required. */
static int add_file(struct config *cfg, const char *name, const char *path, bool required)
{
	struct buf text = BUF_INIT;
	int rc = -1;

	if (!required && !file_exists(path))
		return 0;
	/* (json_parse_file, keeping the text: the layer's key in the cache) */
	if (buf_read_file(&text, path) < 0) {
		int e = errno;

		/* which directory is in the way, not just the file that may
		 * be behind it: a .forge/ that `sudo forge` left root's */
		if (e == EACCES || e == EPERM)
			owner_error(e, path, false, "cannot read '%s'", path);
		goto out;
	}
	/* An empty file (`--config /dev/null`, a file just made) is a layer
	 * with no settings, not a JSON error. */
	size_t blank = 0;
	while (blank < text.len && (text.buf[blank] == ' ' || text.buf[blank] == '\t' ||
				    text.buf[blank] == '\r' || text.buf[blank] == '\n'))
		blank++;
	jv v = blank == text.len ? jv_object() : json_parse(text.buf, text.len);
	if (!jv_is_valid(v)) {
		char *msg = json_invalid_msg(v);

		forge_error("%s: %s", path, msg);
		free(msg);
		goto out;
	}
	rc = add_layer(cfg, name, path, v, text.buf, text.len);
out:
	buf_release(&text);
	return rc;
}

/* json_skim_members' callback: keep where each top-level member is. */
static void keep_span(const char *key, size_t key_len, const char *value, size_t value_len,
		      void *payload)
{
	struct config *cfg = payload;

	cfg->spans = xrealloc(cfg->spans, (cfg->nspans + 1) * sizeof *cfg->spans);
	cfg->spans[cfg->nspans++] = (struct section_span){ key, value, key_len, value_len };
}

/* The defaults layer, kept as text (see struct config): only where its
 * sections are, read without building a value. */
static int add_defaults(struct config *cfg)
{
	const struct resource *r = resource_find(CONFIG_DEFAULTS);

	if (!r)
		return forge_error("built-in '%s' is missing", CONFIG_DEFAULTS);
	/* Skimmed, not checked: the text is the program's own, and
	 * test_config checks that it is strict JSON, an object, with no
	 * escape in a top-level key, and that json_scan finds the same
	 * members: that test is what keeps a broken built-in section (it
	 * would read as absent) from shipping. */
	if (json_skim_members(r->data, r->len, keep_span, cfg) < 0)
		return forge_error("built-in '%s' is not a JSON object", CONFIG_DEFAULTS);
	cfg->defaults = r->data;
	cfg->defaults_len = r->len;
	/* Not validated on its own: the built-in object is what the effective
	 * configuration is validated on (a third of config_load's
	 * instructions, when the cache does not know it), and test_config
	 * checks it alone.  Its text is in the program: the build-id is its
	 * key in the cache. */
	keep_layer(cfg, "default", "built-in", jv_invalid(), "", 0);
	return 0;
}

static jv default_section(struct config *cfg, const char *key, size_t n);

/* The whole effective configuration, as config_load built it before the
 * sections were lazy: the defaults' object, then every layer merged in
 * order.  The defaults' object is made of their sections in the order of
 * the text (a parser's order; the sections read so far are not parsed
 * again).  -1 with a message when a built-in section does not parse
 * (test_config sees that they do). */
static int build_whole(struct config *cfg)
{
	if (jv_is_valid(cfg->effective))
		return 0;
	jv d = jv_object();
	for (size_t i = 0; i < cfg->nspans; i++) {
		const struct section_span *sp = &cfg->spans[i];

		if (sp->key_len > 0 && sp->key[0] == '$')
			continue;
		jv v = default_section(cfg, sp->key, sp->key_len);
		if (!jv_is_valid(v)) {
			jv_free(v);
			jv_free(d);
			return forge_error("built-in '%s': '%.*s' does not parse", CONFIG_DEFAULTS,
					   (int)sp->key_len, sp->key);
		}
		d = jv_object_set(d, jv_string_sized(sp->key, (int)sp->key_len), v);
	}
	jv_free(cfg->layers[0].value);
	cfg->layers[0].value = d;
	cfg->effective = jv_object();
	for (size_t i = 0; i < cfg->nlayers; i++)
		cfg->effective = jv_object_merge_recursive(cfg->effective, jv_copy(cfg->layers[i].value));
	return 0;
}

/* The whole configuration of a query that needs it (the accessors take a
 * const configuration: building it is a cache, not a change).  The
 * built-in sections parse (test_config), so this does not fail; an empty
 * object if it ever did. */
static jv whole(const struct config *ccfg)
{
	struct config *cfg = (struct config *)ccfg;

	if (build_whole(cfg) < 0)
		return jv_object();
	return jv_copy(cfg->effective);
}

/* The defaults' section key[0..n) (new reference), parsed on its own the
 * first time and kept, or an invalid jv when the defaults have no such
 * member (the last one of that name, as a parser keeps it; '$' keys are
 * notes) or it does not parse. */
static jv default_section(struct config *cfg, const char *key, size_t n)
{
	if (n == 0 || key[0] == '$')
		return jv_invalid();
	jv k = jv_string_sized(key, (int)n);
	jv v = jv_object_get(jv_copy(cfg->dsections), jv_copy(k));

	if (jv_is_valid(v)) {
		jv_free(k);
		return v;
	}
	jv_free(v);
	for (size_t i = cfg->nspans; i-- > 0;) {
		const struct section_span *sp = &cfg->spans[i];

		if (sp->key_len == n && memcmp(sp->key, key, n) == 0) {
			cfg->sections_parsed++;
			v = json_parse_without_notes(sp->value, sp->value_len);
			if (jv_is_valid(v))
				cfg->dsections = jv_object_set(cfg->dsections, k, jv_copy(v));
			else
				jv_free(k);
			return v;
		}
	}
	jv_free(k);
	return jv_invalid();
}

/* Top-level section key[0..n) merged across the layers as the whole merge
 * would (objects recursively, anything else replaced), or an invalid jv
 * when no layer has it.  The layers above the defaults are parsed: only
 * the defaults' section may be parsed here. */
static jv merge_section(struct config *cfg, const char *key, size_t n)
{
	jv cur = default_section(cfg, key, n);
	jv k = jv_string_sized(key, (int)n);

	for (size_t i = 1; i < cfg->nlayers; i++) {
		jv layer = cfg->layers[i].value;

		if (!jv_object_has(jv_copy(layer), jv_copy(k)))
			continue;
		jv v = jv_object_get(jv_copy(layer), jv_copy(k));

		if (jv_get_kind(cur) == JV_KIND_OBJECT && jv_get_kind(v) == JV_KIND_OBJECT) {
			cur = jv_object_merge_recursive(cur, v);
		} else {
			jv_free(cur);
			cur = v;
		}
	}
	jv_free(k);
	return cur;
}

/* The effective value of the top-level member key[0..n) (new reference),
 * or an invalid jv when absent: kept the first time it is asked for, from
 * the whole configuration once that is built, else merged. */
static jv section(const struct config *ccfg, const char *key, size_t n)
{
	struct config *cfg = (struct config *)ccfg;
	jv v;

	for (size_t i = 0; i < cfg->nsections; i++)
		if (cfg->sections[i].key_len == n && memcmp(cfg->sections[i].key, key, n) == 0)
			return jv_copy(cfg->sections[i].value);
	if (jv_is_valid(cfg->effective))
		v = path_step(jv_copy(cfg->effective), key, n);
	else
		v = merge_section(cfg, key, n);
	cfg->sections = xrealloc(cfg->sections, (cfg->nsections + 1) * sizeof *cfg->sections);
	cfg->sections[cfg->nsections++] = (struct section){ xstrndup(key, n), n, jv_copy(v) };
	return v;
}

void config_parse_counts(const struct config *cfg, int *sections, bool *whole_built)
{
	*sections = cfg->sections_parsed;
	*whole_built = jv_is_valid(cfg->effective);
}

/* $XDG_CONFIG_HOME/forge/config.json (the XDG spec ignores a relative
 * XDG_CONFIG_HOME), else $HOME/.config/forge/config.json (an absolute
 * HOME: home_dir()); NULL when neither is set. */
char *config_user_file(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = home_dir();
	struct buf b = BUF_INIT;

	if (xdg && xdg[0] == '/')
		buf_addf(&b, "%s/forge/config.json", xdg);
	else if (home)
		buf_addf(&b, "%s/.config/forge/config.json", home);
	else
		return NULL;
	return buf_detach(&b, NULL);
}

char *config_project_file(const char *repo)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "%s/.forge/config.json", repo);
	return buf_detach(&b, NULL);
}

/* The value of one variable of the table; an invalid jv (message set) when
 * a number does not parse. */
static jv env_value(const struct config_env_var *var, const char *text)
{
	double d;

	if (!var->number)
		return jv_string(text);
	if (forge_parse_double(&d, text) < 0 || !isfinite(d)) {
		forge_error("%s: '%s' is not a number", var->name, text);
		return jv_invalid();
	}
	return jv_number(d);
}

static int add_env(struct config *cfg)
{
	for (const struct config_env_var *var = env_vars; var->name; var++) {
		const char *text = getenv(var->name);
		jv layer = jv_null();

		if (!text || !*text)
			continue;
		jv v = env_value(var, text);
		if (!jv_is_valid(v)) {
			jv_free(v);
			return -1;
		}
		if (config_flag_set(&layer, var->path, v) < 0)
			return -1;
		struct buf key = BUF_INIT;

		buf_addf(&key, "%s=%s", var->name, text);
		int rc = add_layer(cfg, "env", var->name, layer, key.buf, key.len);

		buf_release(&key);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int add_user_and_project(struct config *cfg, const char *repo)
{
	char *path = config_user_file();
	int rc = 0;

	if (path)
		rc = add_file(cfg, "user", path, false);
	free(path);
	if (rc < 0 || !repo)
		return rc;
	path = config_project_file(repo);
	rc = add_file(cfg, "project", path, false);
	free(path);
	return rc;
}

/* ---- what a repository may not set ----------------------------------------
 *
 * The project layer is a file the repository's authors wrote -- often not
 * the person running Forge.  A value of it that would send the person's API
 * key elsewhere, widen what the commands of the worktree may do, let more
 * pass without a person (the level, the ladder, the gates) or let a run
 * spend or take more (prices, timeouts, budgets, caps) is
 * dropped from the layer at load unless the person's own layers (user
 * file, --config, FORGE_*, flags) set trust_project; the person's own
 * value (or the default) stands in its place.  A value that tightens, or
 * is the person's own anyway, stays.  One table, one place: every program
 * reads the same effective configuration.
 */
enum guard {
	G_ENDPOINT,     /* where a request with the key goes: null, or the person's value */
	G_SWITCH,       /* true widens: false, or the person's value */
	G_TRUST,        /* the trust itself: never the project's (dropped even when
			 * trusted, so that no reader takes it for the project's) */
	G_MODE,         /* confinement: off/allow < auto < require/deny, not below the person's */
	G_BOUND,        /* a limit, not above the person's (0: none, above every number) */
	G_FEWER,        /* what is let through: only items the person's list has */
	G_MORE,         /* what is refused or asked: every item the person's list has */
	G_ALLOW,        /* tools.permissions.P.allow: G_FEWER against P's list, else
			 * default's, when the person has one (none: any list narrows) */
	G_REMOTE,       /* a git remote pushed to: null, a remote's name (the
			 * clone's own .git/config says where it is), or the person's
			 * value; a URL would get the person's git credentials, a
			 * path would run that repository's hooks unconfined */
	G_MAX,          /* a number, not above the person's: a timeout, a budget, a
			 * cap, the automation level (0 is zero here; null or no
			 * value is the fallback key's, else no limit) */
	G_MIN,          /* a number, not below the person's: how much of a deploy
			 * its health check watches (fewer samples, or less time
			 * between them, see less) */
	G_LADDER,       /* safety.ladder: no rule of a row below the person's row
			 * (auto < ask < human) */
	G_GATES,        /* gates: every gate of the person's list kept, as strict */
	G_PRICE,        /* llm.pricing.MODEL.*: no price of the model below the
			 * person's (their llm.pricing, else schemas/pricing.json);
			 * a model with no price does not run, so any price widens */
	G_ENV,          /* deploy.environment: not another one when the person's is
			 * "production" (a production deploy always waits for a
			 * human: another name would skip that gate) */
	G_STRATEGY,     /* deploy.strategy: no further than the person's (branch
			 * < merge < push, command; push and command differ in
			 * where the change goes, so neither is the other's) */
};

static const struct {
	const char *path;       /* dotted; a '*' segment is any key */
	enum guard kind;
	const char *fallback;   /* G_MAX: the key whose value a null or missing
				 * one stands for, as the reader takes it */
} guarded[] = {
	{ "trust_project", G_TRUST, NULL },
	{ "mcp.trust_project", G_TRUST, NULL },
	{ "llm.base_url", G_ENDPOINT, NULL },
	{ "llm.phases.*.base_url", G_ENDPOINT, NULL },
	{ "llm.embeddings.base_url", G_ENDPOINT, NULL },
	{ "sandbox.command_timeout_s", G_BOUND, NULL },
	{ "sandbox.output_cap_bytes", G_BOUND, NULL },
	{ "sandbox.landlock", G_MODE, NULL },
	{ "sandbox.network", G_MODE, NULL },
	{ "sandbox.namespaces", G_MODE, NULL },
	{ "sandbox.read_anywhere", G_SWITCH, NULL },
	{ "sandbox.read_paths", G_FEWER, NULL },
	{ "sandbox.writable", G_FEWER, NULL },
	{ "sandbox.env", G_FEWER, NULL },
	{ "sandbox.limits.*", G_BOUND, NULL },
	{ "sandbox.deny", G_MORE, NULL },
	{ "sandbox.ask", G_MORE, NULL },
	{ "sandbox.deny_extra", G_MORE, NULL },
	{ "sandbox.ask_extra", G_MORE, NULL },
	{ "tools.permissions.*.deny", G_MORE, NULL },
	{ "tools.permissions.*.ask", G_MORE, NULL },
	{ "tools.permissions.*.allow", G_ALLOW, NULL },
	{ "git.push_remote", G_REMOTE, NULL },
	{ "deploy.remote", G_REMOTE, NULL },
	/* how much passes without a person */
	{ "deploy.environment", G_ENV, NULL },
	{ "deploy.strategy", G_STRATEGY, NULL },
	{ "deploy.canary.*", G_MORE, NULL },
	{ "safety.automation_level", G_MAX, NULL },
	{ "safety.ladder", G_LADDER, NULL },
	{ "gates", G_GATES, NULL },
	/* what a call costs: a lower price undercounts every budget */
	{ "llm.pricing.*.*", G_PRICE, NULL },
	/* the timeouts, budgets and caps */
	{ "llm.max_tokens", G_MAX, NULL },
	{ "llm.phases.*.max_tokens", G_MAX, "llm.max_tokens" },
	{ "llm.timeout_s", G_MAX, NULL },
	{ "llm.stall_timeout_s", G_MAX, NULL },
	{ "llm.max_retries", G_MAX, NULL },
	{ "llm.retry_max_delay_s", G_MAX, NULL },
	{ "tools.test_timeout_s", G_MAX, "safety.time_s.test" },
	{ "safety.iterations.*", G_MAX, "safety.iterations.default" },
	{ "safety.stagnation_threshold", G_MAX, NULL },
	{ "safety.cost.per_phase.*", G_MAX, NULL },
	{ "safety.cost.per_run", G_MAX, NULL },
	{ "safety.cost.per_day", G_MAX, NULL },
	{ "safety.time_s.*", G_MAX, NULL },
	{ "safety.error_rate.critical", G_MAX, NULL },
	{ "budget.usd", G_MAX, NULL },
	{ "reflect.budget", G_MAX, NULL },
	{ "bounces.review_max", G_MAX, NULL },
	{ "bounces.test_max", G_MAX, NULL },
	{ "bounces.rerun_max", G_MAX, NULL },
	{ "implement.fix_rounds", G_MAX, NULL },
	{ "implement.validation_timeout_s", G_MAX, NULL },
	{ "review.github.max_wait_s", G_MAX, NULL },
	{ "deploy.health.timeout_s", G_MAX, NULL },
	{ "deploy.health.error_rate_max", G_MAX, NULL },
	{ "deploy.health.latency_ms_max", G_MAX, NULL },
	{ "deploy.health.samples", G_MIN, NULL },
	{ "deploy.health.interval_s", G_MIN, NULL },
	{ "compile.languages.*.timeout_s", G_MAX, NULL },
	{ "memory.recall_limit", G_MAX, NULL },
	{ "stream.max_line_bytes", G_MAX, NULL },
	{ "agent.subagents.max_depth", G_MAX, NULL },
	{ "agent.subagents.max_count", G_MAX, NULL },
	{ "agent.subagents.budget_share_max", G_MAX, NULL },
};

static jv leaf_paths(jv acc, jv value, jv prefix);

/* The guard of the leaf at keys (an array of strings), or -1 for none. */
static int guard_of(jv keys)
{
	int n = jv_array_length(jv_copy(keys));

	for (size_t g = 0; g < sizeof guarded / sizeof *guarded; g++) {
		const char *p = guarded[g].path;
		int i = 0;

		for (; i < n && *p; i++) {
			jv k = jv_array_get(jv_copy(keys), i);
			size_t len = strcspn(p, ".");
			bool same = jv_get_kind(k) == JV_KIND_STRING &&
				    ((len == 1 && *p == '*') ||
				     ((size_t)jv_string_length_bytes(jv_copy(k)) == len &&
				      memcmp(jv_string_value(k), p, len) == 0));

			jv_free(k);
			if (!same)
				break;
			p += len + (p[len] == '.');
		}
		if (i == n && !*p)
			return (int)g;
	}
	return -1;
}

/* The value at keys[1..] in cur, the section keys[0] names (consumed; an
 * invalid jv when it is none), or an invalid jv.  Borrows keys. */
static jv below_section(jv cur, jv keys)
{
	int n = jv_array_length(jv_copy(keys));

	for (int i = 1; i < n && jv_is_valid(cur); i++) {
		jv k = jv_array_get(jv_copy(keys), i);

		if (jv_get_kind(cur) == JV_KIND_OBJECT && jv_object_has(jv_copy(cur), jv_copy(k))) {
			cur = jv_object_get(cur, k);
		} else {
			jv_free(cur);
			jv_free(k);
			cur = jv_invalid();
		}
	}
	return cur;
}

/* The value at keys made by the layers below layer `top` (the defaults
 * included), or an invalid jv when none has it.  Borrows keys. */
static jv value_below(struct config *cfg, size_t top, jv keys)
{
	for (size_t i = top; i-- > 1;)
		if (path_exists(cfg->layers[i].value, keys))
			return jv_getpath(jv_copy(cfg->layers[i].value), jv_copy(keys));
	jv first = jv_array_get(jv_copy(keys), 0);
	jv cur = default_section(cfg, jv_string_value(first), (size_t)jv_string_length_bytes(jv_copy(first)));

	jv_free(first);
	return below_section(cur, keys);
}

/* How much a confinement mode confines. */
static int mode_rank(jv v)
{
	const char *s = jv_get_kind(v) == JV_KIND_STRING ? jv_string_value(v) : "auto";

	if (!strcmp(s, "off") || !strcmp(s, "allow"))
		return 0;
	if (!strcmp(s, "require") || !strcmp(s, "deny"))
		return 2;
	return 1;
}

/* A limit as a number to compare: 0 (none) and no number above all. */
static double bound_of(jv v)
{
	double d = jv_get_kind(v) == JV_KIND_NUMBER ? jv_number_value(v) : 0;

	return d > 0 ? d : INFINITY;
}

/* Whether every item of list a is in list b; a that is no list asks for
 * nothing, b that is no list has everything (no list: no limit). */
static bool all_in(jv a, jv b)
{
	bool ok = true;

	if (jv_get_kind(a) != JV_KIND_ARRAY || jv_get_kind(b) != JV_KIND_ARRAY)
		return true;
	jv_array_foreach(a, i, x) {
		bool found = false;

		jv_array_foreach(b, j, y) {
			if (jv_equal(jv_copy(x), y))   /* (consumes y: called for each) */
				found = true;
			(void)j;
		}
		ok = ok && found;
		jv_free(x);
		(void)i;
	}
	return ok;
}

/* Whether v names a remote of the clone's own (a name such as "origin"),
 * not a URL or path, as git tells them apart: a ':' or a '/' is a
 * location, so is "." or ".." (git remote names may hold neither). */
static bool remote_name(jv v)
{
	const char *s = jv_get_kind(v) == JV_KIND_STRING ? jv_string_value(v) : NULL;

	return s && *s && *s != '-' && !strpbrk(s, ":/\\") && strcmp(s, ".") && strcmp(s, "..");
}

/* How far a deploy strategy takes the change: branch (left as it is),
 * merge (into the base branch), push or command (out of this clone);
 * an unknown one reads as the furthest. */
static int strategy_rank(jv v)
{
	const char *s = jv_get_kind(v) == JV_KIND_STRING ? jv_string_value(v) : "branch";

	return !strcmp(s, "branch") ? 0 : !strcmp(s, "merge") ? 1 : 2;
}

static bool is_production(jv v)
{
	return jv_get_kind(v) == JV_KIND_STRING && !strcmp(jv_string_value(v), "production");
}

/* A number to compare for G_MAX: a value that is no number sets no limit. */
static double max_of(jv v)
{
	return jv_get_kind(v) == JV_KIND_NUMBER ? jv_number_value(v) : INFINITY;
}

/* A G_MIN value: no value is no lower bound. */
static double min_of(jv v)
{
	return jv_get_kind(v) == JV_KIND_NUMBER ? jv_number_value(v) : -INFINITY;
}

/* How strict a rule of the ladder is: auto, ask, human; anything else
 * reads as human (engine/gates.c: ladder_rule). */
static int rule_rank(jv v)
{
	const char *s = jv_get_kind(v) == JV_KIND_STRING ? jv_string_value(v) : "human";

	return !strcmp(s, "auto") ? 0 : !strcmp(s, "ask") ? 1 : 2;
}

/* The rank of the rule of ladder row `row` at decision point `point` for
 * risk: a rule by risk (an object) is read for that risk, as ladder_rule
 * reads it; a row or point that is not there is human.  Borrows both. */
static int row_rule(jv row, jv point, const char *risk)
{
	jv at = jv_null();

	if (jv_get_kind(row) == JV_KIND_OBJECT && jv_object_has(jv_copy(row), jv_copy(point)))
		at = jv_object_get(jv_copy(row), jv_copy(point));
	if (jv_get_kind(at) == JV_KIND_OBJECT) {
		jv v = json_get(at, risk);

		jv_free(at);
		at = v;
	}
	int r = rule_rank(at);

	jv_free(at);
	return r;
}

/* Whether ladder pl lets a decision of some level through with less than
 * ladder mine does: a rule of one of its rows below the rule of mine's
 * row of that level, for any risk.  Borrows both. */
static bool ladder_looser(jv pl, jv mine)
{
	static const char *const risks[] = { "low", "medium", "high", "critical" };
	bool looser = false;

	if (jv_get_kind(mine) != JV_KIND_ARRAY)
		return false;
	jv_array_foreach(mine, i, mrow) {
		jv prow = jv_get_kind(pl) == JV_KIND_ARRAY ? jv_array_get(jv_copy(pl), i) : jv_null();

		if (jv_get_kind(mrow) == JV_KIND_OBJECT) {
			jv_object_foreach(mrow, point, rule) {
				bool named = !strcmp(jv_string_value(point), "name");   /* a row's name, no rule */

				for (size_t r = 0; r < sizeof risks / sizeof *risks && !named; r++)
					looser = looser || row_rule(prow, point, risks[r]) < row_rule(mrow, point, risks[r]);
				jv_free(point);
				jv_free(rule);
			}
		}
		jv_free(prow);
		jv_free(mrow);
	}
	return looser;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Whether gate p is as strict as gate m: the same id (a decision point of
 * the ladder by its id) and the same condition (two jq expressions are not
 * compared: another one is looser, for all this knows), at m's phase or at
 * every phase ("*"), and passing by itself at no lower automation level
 * (auto_approve_level null: never).  Borrows both. */
static bool gate_as_strict(jv p, jv m)
{
	const char *pp = json_get_str(p, "phase"), *mp = json_get_str(m, "phase");
	jv pl = json_get(p, "auto_approve_level"), ml = json_get(m, "auto_approve_level");
	bool ok = same_str(json_get_str(p, "id"), json_get_str(m, "id")) &&
		  same_str(json_get_str(p, "condition"), json_get_str(m, "condition")) &&
		  (same_str(pp, mp) || same_str(pp, "*")) && max_of(pl) >= max_of(ml);

	jv_free(pl);
	jv_free(ml);
	return ok;
}

/* Whether gate list pg leaves out a gate of list mine, or has it less
 * strict (gate_as_strict).  Borrows both. */
static bool gates_looser(jv pg, jv mine)
{
	bool looser = false;

	if (jv_get_kind(mine) != JV_KIND_ARRAY)
		return false;
	jv_array_foreach(mine, i, m) {
		bool kept = false;

		if (jv_get_kind(pg) == JV_KIND_ARRAY) {
			jv_array_foreach(pg, j, p) {
				kept = kept || gate_as_strict(p, m);
				jv_free(p);
				(void)j;
			}
		}
		looser = looser || !kept;
		jv_free(m);
		(void)i;
	}
	return looser;
}

/* ---- prices, found as llm_price_find finds them (lib/llm/llm_pricing.c;
 * this layer is below lib/llm) ---- */

/* True when s matches pat, where '9' stands for any digit. */
static bool shape(const char *s, const char *pat)
{
	for (; *pat; s++, pat++)
		if (*pat == '9' ? (*s < '0' || *s > '9') : *s != *pat)
			return false;
	return *s == '\0';
}

size_t config_model_undated_len(const char *name)
{
	size_t n = strlen(name);

	if (n > 9 && shape(name + n - 9, "-99999999"))
		return n - 9;
	if (n > 11 && shape(name + n - 11, "-9999-99-99"))
		return n - 11;
	return n;
}

/* The prices of entry e (borrowed): {input, output, cache_read,
 * cache_write}, the cache's defaulting to input; null when e is no price
 * (it lacks input or output). */
static jv prices_of(jv e)
{
	if (jv_get_kind(e) != JV_KIND_OBJECT || !json_has(e, "input") || !json_has(e, "output"))
		return jv_null();
	double in = json_get_num(e, "input", 0);
	jv p = json_set(jv_object(), "input", jv_number(in));

	p = json_set(p, "output", jv_number(json_get_num(e, "output", 0)));
	p = json_set(p, "cache_read", jv_number(json_get_num(e, "cache_read", in)));
	return json_set(p, "cache_write", jv_number(json_get_num(e, "cache_write", in)));
}

/* The prices of model in table (an object of entries; borrowed): its
 * own entry, else its undated name's; null when neither is a price. */
static jv table_prices(jv table, const char *model)
{
	jv e = json_get(table, model);
	jv p = prices_of(e);
	size_t n = config_model_undated_len(model);

	jv_free(e);
	if (jv_get_kind(p) == JV_KIND_NULL && n < strlen(model)) {
		char *base = xstrndup(model, n);

		e = json_get(table, base);
		jv_free(p);
		p = prices_of(e);
		jv_free(e);
		free(base);
	}
	return p;
}

/* The prices of model: the overrides (borrowed), else the built-in table
 * (schemas/pricing.json, parsed here: only a repository that sets
 * llm.pricing gets here); null when neither has one. */
static jv model_prices(jv overrides, const char *model)
{
	jv p = table_prices(overrides, model);

	if (jv_get_kind(p) == JV_KIND_NULL) {
		const struct resource *r = resource_find("pricing.json");
		jv table = r ? json_parse(r->data, r->len) : jv_null();
		jv models = json_get(table, "models");

		jv_free(p);
		p = table_prices(models, model);
		jv_free(models);
		jv_free(table);
	}
	return p;
}

/* Whether prices pv are below prices mine in any of the four, or are
 * prices where mine are none (a model with no price is refused).
 * Borrows both. */
static bool cheaper(jv pv, jv mine)
{
	static const char *const kinds[] = { "input", "output", "cache_read", "cache_write" };

	if (jv_get_kind(pv) != JV_KIND_OBJECT)
		return false;
	if (jv_get_kind(mine) != JV_KIND_OBJECT)
		return true;
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
		if (json_get_num(pv, kinds[i], 0) < json_get_num(mine, kinds[i], 0))
			return true;
	return false;
}

/* Whether the project's value pv of a leaf of kind k widens what the
 * person's own value (or the default) mine allows.  Borrows both. */
static bool widens(enum guard k, jv pv, jv mine)
{
	if (jv_is_valid(mine) && jv_equal(jv_copy(pv), jv_copy(mine)))
		return false;
	switch (k) {
	case G_ENDPOINT:
		return jv_get_kind(pv) != JV_KIND_NULL;
	case G_SWITCH:
	case G_TRUST:
		return jv_get_kind(pv) == JV_KIND_TRUE;
	case G_MODE:
		return mode_rank(pv) < mode_rank(mine);
	case G_BOUND:
		return bound_of(pv) > bound_of(mine);
	case G_FEWER:
	case G_ALLOW:
		return !all_in(pv, mine);
	case G_MORE:
		return !all_in(mine, pv);
	case G_REMOTE:
		return jv_get_kind(pv) != JV_KIND_NULL && !remote_name(pv);
	case G_MAX:
		return max_of(pv) > max_of(mine);
	case G_MIN:
		return min_of(pv) < min_of(mine);
	case G_LADDER:
		return ladder_looser(pv, mine);
	case G_GATES:
		return gates_looser(pv, mine);
	case G_PRICE:
		return cheaper(pv, mine);
	case G_ENV:
		return is_production(mine) && !is_production(pv);
	case G_STRATEGY:
		/* (equal ones returned above: another of rank 2 goes elsewhere) */
		return strategy_rank(pv) > strategy_rank(mine) || strategy_rank(pv) == 2;
	}
	return true;
}

/* Whether the layers other than skip set trust_project to true (the
 * default: false). */
static bool trusted_without(struct config *cfg, size_t skip)
{
	jv key = jv_string("trust_project");

	for (size_t i = cfg->nlayers; i-- > 1;) {
		if (i == skip || !jv_object_has(jv_copy(cfg->layers[i].value), jv_copy(key)))
			continue;
		jv v = jv_object_get(jv_copy(cfg->layers[i].value), key);
		bool t = jv_get_kind(v) == JV_KIND_TRUE;

		jv_free(v);
		return t;
	}
	jv_free(key);
	return false;
}

/* The project's value of the leaf at keys (guarded[g]) and the person's
 * own (or the default) to compare it with, as the readers take them (*pv,
 * *mine: new references).  Borrows keys. */
static void compared(jv *pv, jv *mine, struct config *cfg, size_t pi, int g, jv keys)
{
	jv proj = cfg->layers[pi].value;

	*pv = jv_getpath(jv_copy(proj), jv_copy(keys));
	*mine = value_below(cfg, pi, keys);
	if (guarded[g].kind == G_ALLOW && !jv_is_valid(*mine)) {
		/* a phase without its own allow list takes default's */
		jv dk = jv_array_set(jv_copy(keys), 2, jv_string("default"));

		jv_free(*mine);
		*mine = value_below(cfg, pi, dk);
		jv_free(dk);
	} else if (guarded[g].kind == G_MAX && guarded[g].fallback) {
		/* (tools.test_timeout_s null: safety.time_s.test, ...) */
		jv fk = path_keys(guarded[g].fallback);
		jv fb = value_below(cfg, pi, fk);

		if (jv_get_kind(*mine) != JV_KIND_NUMBER) {
			jv_free(*mine);
			*mine = jv_copy(fb);
		}
		if (jv_get_kind(*pv) == JV_KIND_NULL) {
			jv_free(*pv);
			*pv = jv_copy(fb);
		}
		jv_free(fb);
		jv_free(fk);
	} else if (guarded[g].kind == G_PRICE) {
		/* a leaf of llm.pricing.MODEL: the model's prices with and
		 * without the repository's entry merged into the person's */
		jv model = jv_array_get(jv_copy(keys), 2);
		jv tk = jv_array_slice(jv_copy(keys), 0, 2);
		jv below = value_below(cfg, pi, tk);
		jv entry = jv_getpath(jv_copy(proj), jv_array_slice(jv_copy(keys), 0, 3));

		if (jv_get_kind(below) != JV_KIND_OBJECT) {
			jv_free(below);
			below = jv_object();
		}
		jv merged = jv_object_merge_recursive(jv_copy(below), jv_object_set(jv_object(), jv_copy(model), entry));

		jv_free(*pv);
		jv_free(*mine);
		*mine = model_prices(below, jv_string_value(model));
		*pv = table_prices(merged, jv_string_value(model));
		if (jv_get_kind(*pv) == JV_KIND_NULL) {   /* no price: the person's stands */
			jv_free(*pv);
			*pv = jv_copy(*mine);
		}
		jv_free(merged);
		jv_free(below);
		jv_free(tk);
		jv_free(model);
	}
}

/* Drop from the project layer what it may not set (above), each recorded
 * in cfg->ignored.  A leaf a later layer sets is not the project's to
 * decide: left alone. */
static void guard_project(struct config *cfg)
{
	size_t pi = 0;

	for (size_t i = 1; i < cfg->nlayers; i++)
		if (!strcmp(cfg->layers[i].name, "project"))
			pi = i;
	if (!pi)
		return;
	struct layer *proj = &cfg->layers[pi];
	jv leaves = leaf_paths(jv_array(), proj->value, jv_array());
	jv drop = jv_array(), sort_keys = jv_array();
	bool trusted = false, asked = false;

	jv_array_foreach(leaves, i, keys) {
		int g = guard_of(keys);
		bool later = false;

		for (size_t j = pi + 1; g >= 0 && j < cfg->nlayers && !later; j++)
			later = path_exists(cfg->layers[j].value, keys);
		if (g >= 0 && !later && !asked) {
			trusted = trusted_without(cfg, pi);
			asked = true;
		}
		bool trust_key = g >= 0 && guarded[g].kind == G_TRUST;

		if (g < 0 || later || (trusted && !trust_key)) {
			jv_free(keys);
			continue;
		}
		jv pv, mine;

		compared(&pv, &mine, cfg, pi, g, keys);
		bool wide = !trusted && widens(guarded[g].kind, pv, mine);

		if (wide) {
			char *path = path_join(keys);

			cfg->ignored = jv_array_append(cfg->ignored,
				json_set(json_set(jv_object(), "path", jv_string(path)), "source",
					 jv_string(proj->source)));
			sort_keys = jv_array_append(sort_keys, jv_string(path));
			free(path);
		}
		if (wide && guarded[g].kind == G_PRICE)   /* the entry, not left as {} without a price */
			drop = jv_array_append(drop, jv_array_slice(jv_copy(keys), 0, 3));
		else if (wide || trust_key)
			drop = jv_array_append(drop, jv_copy(keys));
		jv_free(pv);
		jv_free(mine);
		jv_free(keys);
	}
	jv_free(leaves);
	if (jv_array_length(jv_copy(drop)) > 0) {
		proj->value = jv_delpaths(proj->value, drop);
		if (jv_array_length(jv_copy(sort_keys)) > 0)
			cfg->ignored = jv_sort(cfg->ignored, jv_copy(sort_keys));
	} else {
		jv_free(drop);
	}
	jv_free(sort_keys);
}

bool config_project_widens(const struct config *cfg, const char *path, jv value)
{
	jv keys = path_keys(path);
	int g = guard_of(keys);
	bool wide = false;

	if (g >= 0) {
		jv mine = config_get(cfg, path);

		wide = widens(guarded[g].kind, value, mine);
		jv_free(mine);
	}
	jv_free(keys);
	return wide;
}

jv config_ignored(const struct config *cfg)
{
	return jv_copy(cfg->ignored);
}

/* True when the validation cache says these inputs made a valid whole. */
static bool effective_known_valid(const struct config *cfg)
{
	char key[KEY_HEX + 1];

	cache_load();
	if (!vcache.keys)
		return false;
	cache_key(key, 'E', cfg->inputs.buf, cfg->inputs.len);
	return cache_has(key);
}

int config_load(struct config **out, struct config_sources *src)
{
	struct config *cfg = xcalloc(1, sizeof *cfg);
	jv flags = src->flags;

	src->flags = jv_null();
	cfg->effective = jv_invalid();
	cfg->dsections = jv_object();
	cfg->ignored = jv_array();
	buf_init(&cfg->inputs, 0);
	if (add_defaults(cfg) < 0 || add_user_and_project(cfg, src->repo) < 0)
		goto fail;
	if (src->file && add_file(cfg, "file", src->file, true) < 0)
		goto fail;
	if (add_env(cfg) < 0)
		goto fail;
	if (jv_get_kind(flags) != JV_KIND_NULL) {
		char *text = json_dumps(jv_copy(flags), false);
		int rc = add_layer(cfg, "flags", "command line", flags, text, strlen(text));

		free(text);
		flags = jv_null();
		if (rc < 0)
			goto fail;
	}
	guard_project(cfg);
	/* Each layer is valid on its own; check what they make together (the
	 * whole is built for it only when the cache does not know it). */
	if (!effective_known_valid(cfg) &&
	    (build_whole(cfg) < 0 ||
	     validate(cfg->effective, "effective configuration", 'E', cfg->inputs.buf, cfg->inputs.len) < 0))
		goto fail;
	cache_save();
	*out = cfg;
	return 0;
fail:
	jv_free(flags);
	config_free(cfg);
	return -1;
}

void config_free(struct config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->nlayers; i++) {
		free(cfg->layers[i].source);
		jv_free(cfg->layers[i].value);
	}
	free(cfg->layers);
	free(cfg->spans);
	for (size_t i = 0; i < cfg->nsections; i++) {
		free(cfg->sections[i].key);
		jv_free(cfg->sections[i].value);
	}
	free(cfg->sections);
	jv_free(cfg->dsections);
	jv_free(cfg->ignored);
	jv_free(cfg->effective);
	buf_release(&cfg->inputs);
	for (size_t i = 0; cfg->memo && i < CONFIG_MEMO_SLOTS; i++) {
		free(cfg->memo[i].path);
		jv_free(cfg->memo[i].value);
	}
	free(cfg->memo);
	free(cfg);
}

/* ---- queries -------------------------------------------------------- */

static jv lookup_keys(const struct config *cfg, jv keys);

/* lookup() of a path with a quoted segment (path_keys): the slow way. */
static jv lookup_quoted(const struct config *cfg, const char *path)
{
	jv keys = path_keys(path), v;

	if (!jv_is_valid(keys))
		return keys;
	v = lookup_keys(cfg, keys);
	jv_free(keys);
	return v;
}

/* The value at a dotted path (new reference), or an invalid jv when
 * absent: its first segment is a section (section()), the rest steps into
 * it; "" is the whole. */
static jv lookup_walk(const struct config *cfg, const char *path)
{
	if (strchr(path, '"'))
		return lookup_quoted(cfg, path);
	size_t n = strcspn(path, ".");
	jv cur = section(cfg, path, n);

	for (const char *p = path + n; jv_is_valid(cur) && *p;) {
		p++;
		n = strcspn(p, ".");
		cur = path_step(cur, p, n);
		p += n;
	}
	return cur;
}

static jv lookup(const struct config *ccfg, const char *path)
{
	struct config *cfg = (struct config *)ccfg;
	uint32_t h = 2166136261u;
	struct memo *m;
	jv v;

	if (!*path)
		return whole(cfg);
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 16777619u;
	if (!cfg->memo)
		cfg->memo = xcalloc(CONFIG_MEMO_SLOTS, sizeof *cfg->memo);
	m = &cfg->memo[h % CONFIG_MEMO_SLOTS];
	if (m->path && strcmp(m->path, path) == 0)
		return jv_is_valid(m->value) ? jv_copy(m->value) : jv_invalid();
	v = lookup_walk(cfg, path);
	/* (not an invalid path's message: that one is said again) */
	if (!jv_is_valid(v)) {
		jv msg = jv_invalid_get_msg(jv_copy(v));
		bool said = jv_get_kind(msg) != JV_KIND_NULL;

		jv_free(msg);
		if (said)
			return v;
	}
	free(m->path);
	jv_free(m->value);
	m->path = xstrdup(path);
	m->value = jv_copy(v);
	return v;
}

jv config_get(const struct config *cfg, const char *path)
{
	jv v = lookup(cfg, path);

	if (jv_is_valid(v))
		return v;
	jv_free(v);
	return jv_null();
}

bool config_has(const struct config *cfg, const char *path)
{
	jv v = lookup(cfg, path);
	bool found = jv_is_valid(v);

	jv_free(v);
	return found;
}

const char *config_get_str(const struct config *cfg, const char *path)
{
	jv v = lookup(cfg, path);
	/* cfg (its sections or its whole) still holds the string after our
	 * reference goes. */
	const char *s = jv_get_kind(v) == JV_KIND_STRING ? jv_string_value(v) : NULL;

	jv_free(v);
	return s;
}

double config_get_num(const struct config *cfg, const char *path)
{
	jv v = lookup(cfg, path);
	double d = jv_get_kind(v) == JV_KIND_NUMBER ? jv_number_value(v) : 0;

	jv_free(v);
	return d;
}

bool config_get_bool(const struct config *cfg, const char *path)
{
	jv v = lookup(cfg, path);
	bool b = jv_get_kind(v) == JV_KIND_TRUE;

	jv_free(v);
	return b;
}

jv config_layer_value(const struct config *cfg, const char *name)
{
	for (size_t i = 1; i < cfg->nlayers; i++)
		if (!strcmp(cfg->layers[i].name, name))
			return jv_copy(cfg->layers[i].value);
	return jv_null();
}

jv config_effective(const struct config *cfg)
{
	return whole(cfg);
}

/* ---- explain -------------------------------------------------------- */

/* Append to acc the key paths of every leaf under value (non-objects and
 * empty objects).  Borrows value, consumes acc and prefix. */
static jv leaf_paths(jv acc, jv value, jv prefix)
{
	if (jv_get_kind(value) != JV_KIND_OBJECT || jv_object_length(jv_copy(value)) == 0)
		return jv_array_append(acc, prefix);
	jv_object_foreach(value, key, val) {
		acc = leaf_paths(acc, val, jv_array_append(jv_copy(prefix), key));
		jv_free(val);
	}
	jv_free(prefix);
	return acc;
}

/* The highest layer that names the leaf: a later layer either replaced the
 * value there or did not touch it.  None of the layers above the defaults
 * (the defaults, unparsed, are not asked: they are the answer then). */
static const struct layer *leaf_origin(const struct config *cfg, jv keys)
{
	for (size_t i = cfg->nlayers; i-- > 1;)
		if (path_exists(cfg->layers[i].value, keys))
			return &cfg->layers[i];
	return NULL;
}

/* The value at the object path keys (each a key of an object, as
 * path_exists() reads them), or an invalid jv.  Borrows keys. */
static jv lookup_keys(const struct config *cfg, jv keys)
{
	jv first = jv_array_get(jv_copy(keys), 0);
	jv cur = section(cfg, jv_string_value(first), (size_t)jv_string_length_bytes(jv_copy(first)));

	jv_free(first);
	return below_section(cur, keys);
}

jv config_explain(const struct config *cfg)
{
	jv all = whole(cfg);
	jv leaves = leaf_paths(jv_array(), all, jv_array());
	jv entries = jv_array();
	jv sort_keys = jv_array();

	jv_array_foreach(leaves, i, keys) {
		const struct layer *l = leaf_origin(cfg, keys);
		char *path = path_join(keys);
		jv e = jv_object();

		e = json_set(e, "path", jv_string(path));
		e = json_set(e, "value", jv_getpath(jv_copy(all), jv_copy(keys)));
		e = json_set(e, "layer", jv_string(l ? l->name : "default"));
		e = json_set(e, "source", jv_string(l ? l->source : "built-in"));
		entries = jv_array_append(entries, e);
		sort_keys = jv_array_append(sort_keys, jv_string(path));
		free(path);
		jv_free(keys);
	}
	jv_free(leaves);
	jv_free(all);
	return jv_sort(entries, sort_keys);
}

int config_leaf_layer(const struct config *cfg, const char *path, const char **layer,
		      const char **source)
{
	jv keys = path_keys(path), v;
	const struct layer *l;
	bool leaf;

	if (!jv_is_valid(keys)) {
		jv_free(keys);
		return -1;
	}
	/* (as the path of an object: no segment indexes an array here) */
	v = lookup_keys(cfg, keys);
	leaf = jv_is_valid(v) && (jv_get_kind(v) != JV_KIND_OBJECT || jv_object_length(jv_copy(v)) == 0);
	jv_free(v);
	if (!leaf) {
		jv_free(keys);
		return -1;
	}
	l = leaf_origin(cfg, keys);
	jv_free(keys);
	*layer = l ? l->name : "default";
	*source = l ? l->source : "built-in";
	return 0;
}

/* ---- files ---------------------------------------------------------- */

static jv file_entry(jv acc, const char *layer, const char *path)
{
	jv e = jv_object();

	e = json_set(e, "layer", jv_string(layer));
	e = json_set(e, "path", jv_string(path));
	e = json_set(e, "exists", jv_bool(file_exists(path)));
	return jv_array_append(acc, e);
}

jv config_files(const struct config_sources *src)
{
	jv files = jv_array();
	char *path = config_user_file();

	if (path)
		files = file_entry(files, "user", path);
	free(path);
	if (src->repo) {
		path = config_project_file(src->repo);
		files = file_entry(files, "project", path);
		free(path);
	}
	if (src->file)
		files = file_entry(files, "file", src->file);
	return files;
}
