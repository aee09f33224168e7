/* graph_merge.c - the states of nodes that ran at the same time, merged; see graph.h. */
#include "engine/graph.h"
#include "core/json.h"

#include <stdio.h>
#include <string.h>

/* The keys whose numbers add up: what each node spent. */
static bool accumulator(const char *key)
{
	return strcmp(key, "cost") == 0 || strcmp(key, "budget") == 0 || strcmp(key, "usage") == 0;
}

/* Bookkeeping every node writes: the last one's is kept. */
static bool last_wins(const char *key)
{
	return strcmp(key, "phase") == 0 || strcmp(key, "status") == 0;
}

/* Every key of base and of the returned objects, each once, as an array. */
static jv all_keys(jv base, const jv *ret, size_t n)
{
	jv keys = jv_object();

	for (size_t i = 0; i <= n; i++) {
		jv o = i == 0 ? base : ret[i - 1];

		if (jv_get_kind(o) != JV_KIND_OBJECT)
			continue;
		jv_object_foreach(o, k, v) {      /* borrows o */
			keys = jv_object_set(keys, k, jv_true());
			jv_free(v);
		}
	}
	return jv_keys_unsorted(keys);
}

/* o.key, or an invalid jv (no message) when o has no such key.  Borrows o. */
static jv member(jv o, const char *key)
{
	return json_has(o, key) ? json_get(o, key) : jv_invalid();
}

static bool same(jv a, jv b)
{
	if (!jv_is_valid(a) || !jv_is_valid(b))
		return !jv_is_valid(a) && !jv_is_valid(b);
	return json_equal(a, b);
}

static int merge_object(jv *out, jv base, const jv *vals, const char *const *names, size_t n,
			const char *path, bool top, char *why, size_t whylen);
static int merge_plain(jv *out, jv base, const jv *vals, const char *const *names, size_t n,
		       const char *path, char *why, size_t whylen);

/*
 * One key of an accumulator: numbers add their changes up, objects merge
 * key by key; anything else merges as a plain key.  Borrows everything.
 */
static int merge_acc(jv *out, jv base, const jv *vals, const char *const *names, size_t n,
		     const char *path, char *why, size_t whylen)
{
	bool numbers = !jv_is_valid(base) || jv_get_kind(base) == JV_KIND_NUMBER;
	bool objects = !jv_is_valid(base) || jv_get_kind(base) == JV_KIND_OBJECT;
	bool any = jv_is_valid(base);

	for (size_t i = 0; i < n; i++) {
		if (!jv_is_valid(vals[i]))
			continue;
		any = true;
		numbers = numbers && jv_get_kind(vals[i]) == JV_KIND_NUMBER;
		objects = objects && jv_get_kind(vals[i]) == JV_KIND_OBJECT;
	}
	if (any && numbers) {
		double b = jv_is_valid(base) ? jv_number_value(base) : 0, sum = b;

		for (size_t i = 0; i < n; i++)
			if (jv_is_valid(vals[i]))
				sum += jv_number_value(vals[i]) - b;
		*out = jv_number(sum);
		return 0;
	}
	if (any && objects)
		return merge_object(out, base, vals, names, n, path, false, why, whylen);
	return merge_plain(out, base, vals, names, n, path, why, whylen);
}

/* The value of one key (path names it): see graph_merge_states(). */
static int merge_plain(jv *out, jv base, const jv *vals, const char *const *names, size_t n,
		       const char *path, char *why, size_t whylen)
{
	size_t changer = n;

	for (size_t i = 0; i < n; i++) {
		if (same(base, vals[i]))
			continue;
		if (changer < n && !same(vals[changer], vals[i])) {
			snprintf(why, whylen, "key '%s' was changed by both '%s' and '%s', which ran at the "
				 "same time", path, names[changer], names[i]);
			return -1;
		}
		if (changer == n)
			changer = i;
	}
	*out = jv_copy(changer < n ? vals[changer] : base);
	return 0;
}

/*
 * One key's value (path names it): at the top of the state phase and status
 * are the last node's, the accumulators add up and any other key is plain;
 * inside an accumulator every key is an accumulator's part.
 */
static int merge_key(jv *out, jv base, const jv *vals, const char *const *names, size_t n,
		     const char *key, const char *path, bool top, char *why, size_t whylen)
{
	if (top && last_wins(key)) {
		*out = jv_copy(jv_is_valid(vals[n - 1]) ? vals[n - 1] : base);
		return 0;
	}
	if (!top || accumulator(key))
		return merge_acc(out, base, vals, names, n, path, why, whylen);
	return merge_plain(out, base, vals, names, n, path, why, whylen);
}

/*
 * Merge objects key by key (top: the states themselves, else the objects in
 * an accumulator at path), each key by merge_key().  *out is the merged
 * object and 0, or -1 with why.  Borrows everything.
 */
static int merge_object(jv *out, jv base, const jv *vals, const char *const *names, size_t n,
			const char *path, bool top, char *why, size_t whylen)
{
	jv keys = all_keys(base, vals, n), res = jv_object();
	jv sub[n ? n : 1];
	int rc = 0;

	jv_array_foreach(keys, ki, k) {
		const char *key = jv_string_value(k);
		char sub_path[512];
		jv b = member(base, key), v = jv_invalid();

		snprintf(sub_path, sizeof sub_path, "%s%s%s", path, top ? "" : ".", key);
		for (size_t i = 0; i < n; i++)
			sub[i] = member(vals[i], key);
		if (rc == 0 && merge_key(&v, b, sub, names, n, key, sub_path, top, why, whylen) < 0)
			rc = -1;
		if (rc == 0 && jv_is_valid(v))
			res = jv_object_set(res, jv_copy(k), v);
		else
			jv_free(v);
		for (size_t i = 0; i < n; i++)
			jv_free(sub[i]);
		jv_free(b);
		jv_free(k);
		(void)ki;
	}
	jv_free(keys);
	if (rc < 0) {
		jv_free(res);
		return -1;
	}
	*out = res;
	return 0;
}

int graph_merge_states(jv *out, jv base, const jv *returned, const char *const *names, size_t n,
		       char *why, size_t whylen)
{
	jv vals[n ? n : 1];
	const char *who[n ? n : 1];
	size_t m = 0;

	*out = jv_null();
	for (size_t i = 0; i < n; i++) {
		if (jv_get_kind(returned[i]) != JV_KIND_OBJECT)
			continue;
		vals[m] = returned[i];
		who[m++] = names[i];
	}
	if (m == 0) {
		*out = jv_copy(base);
		return 0;
	}
	if (merge_object(out, base, vals, who, m, "", true, why, whylen) < 0) {
		*out = jv_null();
		return -1;
	}
	return 0;
}
