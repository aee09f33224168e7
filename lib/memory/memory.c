/*
 * memory.c - the top of lib/memory/: the memory handle (options, open,
 * free; memory.h).  The order of the files is in memory_internal.h.
 */
#include "memory/memory_internal.h"

#include <stdlib.h>
#include <string.h>

#include "data/config.h"
#include "core/forge.h"
#include "store/store.h"

/* ---- handle ---------------------------------------------------------- */

void memory_options_init(struct memory_options *opt)
{
	memset(opt, 0, sizeof *opt);
	opt->lexical_weight = -1;
}

void memory_options_from_config(struct memory_options *opt, const struct config *cfg)
{
	memory_options_init(opt);
	opt->embed_provider = config_get_str(cfg, "llm.embeddings.provider");
	opt->embed_model = config_get_str(cfg, "llm.embeddings.model");
	opt->embed_base_url = config_get_str(cfg, "llm.embeddings.base_url");
	opt->dim = (int)config_get_num(cfg, "memory.embedding_dim");
	opt->lexical_weight = config_get_num(cfg, "memory.lexical_weight");
	opt->thesaurus = config_get_str(cfg, "memory.thesaurus");
}

static char *dup_or_null(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

int memory_open(struct memory **out, struct store *st, const struct memory_options *opt)
{
	struct memory_options dflt;
	struct memory *m;
	struct buf b = BUF_INIT;

	*out = NULL;
	if (!opt) {
		memory_options_init(&dflt);
		opt = &dflt;
	}
	if (opt->dim && (opt->dim < 64 || opt->dim > 2048 || opt->dim % 16))
		return forge_error("memory embedding size %d: use a multiple of 16 from 64 to 2048",
				   opt->dim);
	if (opt->embed_provider && *opt->embed_provider && strcmp(opt->embed_provider, "openai") &&
	    strcmp(opt->embed_provider, "ollama"))
		return forge_error("unknown embedding provider '%s': use openai, ollama or none",
				   opt->embed_provider);
	m = xcalloc(1, sizeof *m);
	m->st = st;
	m->pg = store_backend(st) == DB_POSTGRES;
	m->pgvector = -1;
	m->now = opt->now;
	m->now_payload = opt->now_payload;
	m->embed_provider = dup_or_null(opt->embed_provider);
	m->embed_model = dup_or_null(opt->embed_model);
	m->embed_base_url = dup_or_null(opt->embed_base_url);
	m->dim = opt->dim ? opt->dim : 256;
	m->lexw = opt->lexical_weight >= 0 && opt->lexical_weight <= 1 ? opt->lexical_weight : 0.8;
	m->vec_floor = m->embed_provider ? 0 : (float)MEMORY_LOCAL_COSINE_MIN;
	if (m->embed_provider)
		buf_addf(&b, "%s:%s", m->embed_provider, m->embed_model ? m->embed_model : "default");
	else
		buf_addf(&b, "local-fh1:%d", m->dim);
	m->embedder_id = buf_detach(&b, NULL);
	m->thesaurus = dup_or_null(opt->thesaurus);
	if (opt->vector_path) {
		m->vec_path = dup_or_null(opt->vector_path);
	} else if (!m->pg && strcmp(store_path(st), ":memory:") != 0 && *store_path(st) && !store_readonly(st)) {
		/* (A read-only store keeps its vectors in memory: the file and its
		 * lock may not be writable where the database is.) */
		buf_addf(&b, "%s.vectors", store_path(st));
		m->vec_path = buf_detach(&b, NULL);
	}
	/* (read-only too: a read shows the accesses recorded beside the rows) */
	if (!m->pg && strcmp(store_path(st), ":memory:") != 0 && *store_path(st)) {
		buf_addf(&b, "%s.accesses", store_path(st));
		m->acc_path = buf_detach(&b, NULL);
	}
	*out = m;
	return 0;
}

void memory_free(struct memory *m)
{
	if (!m)
		return;
	vindex_free(m->idx);
	if (m->stem)
		m->stem_api.xDelete(m->stem);
	sqlite3_close(m->stem_db);
	for (int i = 0; i < MS_COUNT; i++)
		db_finalize(m->stmt[i]);
	free(m->embed_provider);
	free(m->embed_model);
	free(m->embed_base_url);
	free(m->embedder_id);
	free(m->vec_path);
	free(m->acc_path);
	mem_access_free(m->acc);
	free(m->thesaurus);
	free(m);
}
