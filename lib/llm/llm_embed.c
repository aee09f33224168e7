/*
 * llm_embed.c - embeddings: OpenAI POST {base}/embeddings and Ollama
 * POST {base}/api/embed, with the same transport and retries as chat.
 */
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "net/http.h"
#include "core/json.h"
#include "llm/llm_internal.h"

static jv vectors_of(jv body, bool ollama)
{
	jv out = jv_array();

	if (ollama) {
		jv_free(out);
		return json_get(body, "embeddings");
	}
	jv data = json_get(body, "data");
	if (jv_get_kind(data) == JV_KIND_ARRAY) {
		jv_array_foreach(data, i, d) {
			out = jv_array_append(out, json_get(d, "embedding"));
			jv_free(d);
		}
	}
	jv_free(data);
	return out;
}

static int to_floats(float **out, size_t *dim, jv vecs, size_t n)
{
	size_t d = 0, k = 0;
	float *v = NULL;
	int rc = 0;

	if (jv_get_kind(vecs) != JV_KIND_ARRAY || (size_t)jv_array_length(jv_copy(vecs)) != n)
		return forge_error("the embedding response does not hold %zu vectors", n);
	jv_array_foreach(vecs, i, row) {
		if (rc == 0 && jv_get_kind(row) != JV_KIND_ARRAY)
			rc = forge_error("embedding %d is not an array of numbers", i);
		if (rc == 0 && !v) {
			d = (size_t)jv_array_length(jv_copy(row));
			v = xcalloc(n * (d ? d : 1), sizeof(*v));
		}
		if (rc == 0 && (size_t)jv_array_length(jv_copy(row)) != d)
			rc = forge_error("embeddings of different sizes");
		if (rc == 0) {
			jv_array_foreach(row, j, x) {
				v[k++] = jv_get_kind(x) == JV_KIND_NUMBER ? (float)jv_number_value(x) : 0.0f;
				jv_free(x);
			}
		}
		jv_free(row);
	}
	if (rc < 0) {
		free(v);
		return -1;
	}
	*out = v;
	*dim = d;
	return 0;
}

static int embed_send(jv *out, const struct llm_embed_options *opt, bool ollama, const char *key,
		      const char *body)
{
	const char *base = opt->base_url ? opt->base_url : ollama ? "http://127.0.0.1:11434"
			   : getenv("OPENAI_BASE_URL") ? getenv("OPENAI_BASE_URL") : "https://api.openai.com/v1";
	char *url = llm_url(base, ollama ? "/api/embed" : "/embeddings");
	struct buf ab = BUF_INIT;
	const char *headers[3] = { "content-type: application/json", NULL, NULL };
	struct http_client hc;
	struct http_response r;
	int rc;

	if (key) {
		buf_addf(&ab, "authorization: Bearer %s", key);
		headers[1] = ab.buf;
	}
	if (http_client_init(&hc) < 0) {
		free(url);
		buf_release(&ab);
		return -1;
	}
	hc.timeout_ms = opt->timeout_ms > 0 ? opt->timeout_ms : 60000;
	hc.retry.max_retries = opt->max_retries >= 0 ? opt->max_retries : 2;
	struct http_request req = { "POST", url, headers, body, strlen(body), NULL, NULL, NULL, NULL, 0 };
	rc = http_send(&r, &hc, &req);
	if (rc == 0)
		*out = json_parse(r.body.buf, r.body.len);
	else if (r.status) {
		char *msg = llm_redact(xstrndup(r.body.buf, r.body.len > 300 ? 300 : r.body.len));
		rc = forge_error("embeddings: HTTP %ld: %s", r.status, msg);
		free(msg);
	}
	http_response_release(&r);
	http_client_release(&hc);
	buf_release(&ab);
	free(url);
	return rc;
}

int llm_embed(float **out, size_t *dim, const struct llm_embed_options *opt,
	      const char *const *texts, size_t n)
{
	bool ollama = opt->provider && !strcmp(opt->provider, "ollama");
	jv input = jv_array(), body, resp = jv_null();
	char *key = NULL, *text;
	int rc;

	*out = NULL;
	*dim = 0;
	if (!ollama && opt->provider && strcmp(opt->provider, "openai"))
		return forge_error("unknown embedding provider '%s' (openai, ollama)", opt->provider);
	if (!opt->model)
		return forge_error("no embedding model configured");
	for (size_t i = 0; i < n; i++)
		input = jv_array_append(input, jv_string(texts[i] ? texts[i] : ""));
	body = json_set(json_set(jv_object(), "model", jv_string(opt->model)), "input", input);
	text = json_dumps(body, false);
	if (!ollama && llm_key_load(&key, "openai") < 0) {
		free(text);
		return -1;
	}
	rc = embed_send(&resp, opt, ollama, key, text);
	free(text);
	free(key);
	if (rc == 0) {
		jv vecs = vectors_of(resp, ollama);
		rc = to_floats(out, dim, vecs, n);
		jv_free(vecs);
	}
	jv_free(resp);
	return rc;
}
