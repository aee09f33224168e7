/*
 * config_file.c - writing a configuration file: one key set in it, checked
 * as config_load() checks a layer, written whole or not at all (config.h).
 */
#include "data/config.h"

#include "core/buf.h"
#include "core/forge.h"
#include "core/owner.h"
#include "core/json.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir, a new directory following its parent's owner under sudo
 * (core/owner.h); an existing one is left as it is. */
static int make_dir(const char *dir)
{
	if (mkdir(dir, 0755) == 0)
		owner_follow(-1, dir);
	else if (errno != EEXIST)
		return owner_error(errno, dir, true, "cannot create '%s'", dir);
	return 0;
}

int config_make_parent(const char *path)
{
	char *copy = xstrdup(path);
	char *dir = dirname(copy);
	int rc = 0;

	for (char *p = dir + 1; *p && rc == 0; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		rc = make_dir(dir);
		*p = '/';
	}
	if (rc == 0)
		rc = make_dir(dir);
	free(copy);
	return rc;
}

/* The file at path as an object (jv_null() when it does not exist), or
 * invalid after forge_error(). */
static jv read_layer(const char *path)
{
	struct stat st;
	jv file;

	if (stat(path, &st) < 0)
		return jv_null();
	file = json_parse_file(path);
	if (!jv_is_valid(file)) {
		char *msg = json_invalid_msg(file);
		forge_error("%s", msg);
		free(msg);
		return jv_invalid();
	}
	if (jv_get_kind(file) != JV_KIND_OBJECT) {
		jv_free(file);
		forge_error("%s: expected an object", path);
		return jv_invalid();
	}
	return file;
}

int config_file_set(const char *path, const char *key, jv value)
{
	jv file = read_layer(path);
	struct buf b = BUF_INIT;
	int rc = CONFIG_FILE_BAD;

	if (!jv_is_valid(file)) {
		jv_free(value);
		return rc;
	}
	if (config_flag_set(&file, key, value) < 0 || config_layer_check(file, path) < 0)
		goto out;
	jv pretty = jv_dump_string(jv_copy(file), JV_PRINT_INDENT_FLAGS(2));
	buf_adds(&b, jv_string_value(pretty));
	buf_addch(&b, '\n');
	jv_free(pretty);
	rc = config_make_parent(path) == 0 && buf_replace_file(path, b.buf, b.len) == 0 ? 0 : CONFIG_FILE_UNWRITTEN;
	if (rc == 0)
		owner_follow(-1, path);     /* a new file (one replaced keeps its owner) */
out:
	buf_release(&b);
	jv_free(file);
	return rc;
}
