/* deploy_health.c - the HTTP health check after a canary step; see deploy.h. */
#include "deploy/deploy.h"
#include "core/forge.h"
#include "net/http.h"
#include "core/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double deploy_percentile(const double *sorted, size_t n, double p)
{
	if (n == 0)
		return 0;
	double rank = ceil(p / 100.0 * (double)n);
	size_t i = rank < 1 ? 0 : (size_t)rank - 1;
	return sorted[i < n ? i : n - 1];
}

static void pause_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (ms > 0 && nanosleep(&ts, &ts) != 0)
		;
}

int deploy_health_check(struct deploy_health *out, const struct deploy_health_opts *opts)
{
	struct http_client c;
	int n = opts->samples > 0 ? opts->samples : 1;
	double *lat = xcalloc((size_t)n, sizeof *lat);
	memset(out, 0, sizeof *out);
	if (http_client_init(&c) < 0) {
		free(lat);
		return forge_error_prefix("health check of '%s'", opts->url);
	}
	c.timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 5000;
	c.connect_timeout_ms = c.timeout_ms;
	c.stall_ms = c.timeout_ms;
	c.retry.max_retries = 0;
	for (int i = 0; i < n; i++) {
		struct http_response r;
		struct http_request req = { .method = "GET", .url = opts->url, .max_body = 64 * 1024 };

		if (i > 0 && opts->interval_ms > 0)
			pause_ms(opts->interval_ms);
		http_send(&r, &c, &req);
		lat[i] = r.duration_ms;
		out->last_status = r.status;
		if (r.status < 200 || r.status > 399) {
			out->errors++;
			if (r.status)
				snprintf(out->last_error, sizeof out->last_error, "HTTP %ld", r.status);
			else
				snprintf(out->last_error, sizeof out->last_error, "%s",
					 r.error[0] ? r.error : "no response");
			if (r.timed_out)
				lat[i] = (double)c.timeout_ms;
		}
		http_response_release(&r);
		out->samples++;
	}
	qsort(lat, (size_t)n, sizeof *lat, cmp_double);
	out->error_rate = (double)out->errors / (double)out->samples;
	out->p50_ms = deploy_percentile(lat, (size_t)n, 50);
	out->p95_ms = deploy_percentile(lat, (size_t)n, 95);
	http_client_release(&c);
	free(lat);
	return 0;
}

bool deploy_health_ok(const struct deploy_health *h, double error_rate_max, double latency_ms_max)
{
	return h->samples > 0 && h->error_rate <= error_rate_max && h->p95_ms <= latency_ms_max;
}

static double round1(double v)
{
	return round(v * 10) / 10;
}

jv deploy_health_json(const struct deploy_health *h)
{
	jv o = jv_object();

	o = json_set(o, "samples", jv_number(h->samples));
	o = json_set(o, "errors", jv_number(h->errors));
	o = json_set(o, "error_rate", jv_number(round(h->error_rate * 10000) / 10000));
	o = json_set(o, "p50_ms", jv_number(round1(h->p50_ms)));
	o = json_set(o, "p95_ms", jv_number(round1(h->p95_ms)));
	if (h->errors) {
		o = json_set(o, "status", jv_number((double)h->last_status));
		o = json_set(o, "error", jv_string(h->last_error));
	}
	return o;
}
