/*
 * tui_models.c - the model picker of `forge tui` (tui.h): each phase's
 * provider and model as the configuration resolves them (llm_choose()),
 * and a new choice written as llm.phases.PHASE.{provider,model} to the
 * project's .forge/config.json through config_file_set() (checked against
 * the schema before anything is written).  The models offered are those of
 * the price table (schemas/pricing.json): claude-* for anthropic, the others
 * for openai.
 */
#include "app/tui.h"

#include "app/cli.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/resource.h"
#include "data/config.h"
#include "llm/llm.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const phases[] = { "plan", "implement", "review", "test", "deploy" };
static const char *const providers[] = { "anthropic", "openai" };
enum { NPHASES = 5, NPROVIDERS = 2 };

/* Let the person pick one of n rows (title above them); its index, or -1
 * on Esc. */
static int pick(struct tui *t, const char *title, const char *const *rows, int n)
{
	int sel = 0, top = 0;

	for (;;) {
		int room = LINES - 3;
		if (sel < top)
			top = sel;
		if (room > 0 && sel >= top + room)
			top = sel - room + 1;
		erase();
		tui_put(t, 0, 0, COLS, TUI_HEAD, title);
		for (int i = top, y = 2; i < n && y < LINES - 1; i++, y++)
			tui_put(t, y, 2, COLS - 2, i == sel ? TUI_SELECTED : TUI_PLAIN, rows[i]);
		tui_footer(t, " Enter choose  Esc back  arrows move");
		refresh();
		int c = tui_getch();
		if (tui_stop || c == 27 || c == 3 || c == 'q')
			return -1;
		if ((c == KEY_UP || c == 'k') && sel > 0)
			sel--;
		else if ((c == KEY_DOWN || c == 'j') && sel < n - 1)
			sel++;
		else if (c == '\n' || c == '\r' || c == KEY_ENTER)
			return sel;
	}
}

/* The models of the price table for provider, sorted as the table is;
 * *n how many.  The strings are malloc'd, as is the array. */
static char **models_of(const char *provider, int *n)
{
	const struct resource *r = resource_find("pricing.json");
	jv table = r ? json_parse(r->data, r->len) : jv_null(), models = json_get(table, "models");
	char **out = xcalloc(jv_get_kind(models) == JV_KIND_OBJECT ? (size_t)jv_object_length(jv_copy(models)) + 1 : 1,
			     sizeof *out);

	*n = 0;
	if (jv_get_kind(models) == JV_KIND_OBJECT) {
		jv_object_foreach(models, name, v) {
			const char *s = jv_string_value(name);
			if ((strncmp(s, "claude-", 7) == 0) == (strcmp(provider, "anthropic") == 0))
				out[(*n)++] = xstrdup(s);
			jv_free(name);
			jv_free(v);
		}
	}
	jv_free(models);
	jv_free(table);
	return out;
}

/* The configuration again, with the file just written (t->ses->cfg). */
static void reload_config(struct tui *t, const struct cli_common *common)
{
	struct config *cfg = NULL;
	struct config_sources src = { t->ses->repo, common ? common->config : NULL, jv_null() };

	if (config_load(&cfg, &src) == 0) {
		config_free(t->ses->cfg);
		t->ses->cfg = cfg;
	}
}

/* Write phase's provider and model to path. */
static int write_choice(const char *path, const char *phase, const char *provider, const char *model)
{
	char key[64];

	snprintf(key, sizeof key, "llm.phases.%s.provider", phase);
	if (config_file_set(path, key, jv_string(provider)) != 0)
		return -1;
	snprintf(key, sizeof key, "llm.phases.%s.model", phase);
	return config_file_set(path, key, jv_string(model)) != 0 ? -1 : 0;
}

/* The phases with what each uses now; rows[i] malloc'd. */
static void phase_rows(const struct tui *t, char **rows)
{
	for (int i = 0; i < NPHASES; i++) {
		struct llm_choice ch;
		char row[256];
		llm_choose(&ch, t->ses->cfg, phases[i]);
		snprintf(row, sizeof row, "%-10s %s / %s", phases[i], ch.provider ? ch.provider : "(no provider)",
			 ch.model ? ch.model : "-");
		rows[i] = xstrdup(row);
	}
}

void tui_models(struct tui *t)
{
	char *rows[NPHASES], **models = NULL, *path = NULL;
	int n = 0, phase, prov, model;

	if (!t->ses->repo) {
		tui_say(t, "not in a repository: no .forge/config.json to write");
		return;
	}
	phase_rows(t, rows);
	phase = pick(t, "model picker: the phase (provider / model it uses now)", (const char *const *)rows, NPHASES);
	for (int i = 0; i < NPHASES; i++)
		free(rows[i]);
	if (phase < 0 || (prov = pick(t, "the provider", providers, NPROVIDERS)) < 0)
		return;
	models = models_of(providers[prov], &n);
	model = pick(t, "the model", (const char *const *)models, n);
	if (model >= 0) {
		path = config_project_file(t->ses->repo);
		if (write_choice(path, phases[phase], providers[prov], models[model]) < 0) {
			tui_say(t, "%s", forge_last_error());
		} else {
			tui_say(t, "%s: %s / %s in %s", phases[phase], providers[prov], models[model], path);
			reload_config(t, t->common);
		}
	}
	for (int i = 0; i < n; i++)
		free(models[i]);
	free(models);
	free(path);
}
