/* deploy_gate.c - the human gate before a deploy; see deploy.h. */
#include "deploy.h"
#include "config.h"
#include "forge.h"
#include "ids.h"
#include "json.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The config's gates[] entry with this id, or jv_null(). */
static jv configured_gate(const struct config *cfg, const char *id)
{
	jv gates = cfg ? config_get(cfg, "gates") : jv_null();
	jv found = jv_null();

	if (jv_get_kind(gates) == JV_KIND_ARRAY) {
		jv_array_foreach(gates, i, g) {
			const char *gid = json_get_str(g, "id");
			if (jv_get_kind(found) == JV_KIND_NULL && gid && strcmp(gid, id) == 0)
				found = jv_copy(g);
			jv_free(g);
		}
	}
	jv_free(gates);
	return found;
}

void deploy_gate_for(struct deploy_gate *out, const struct config *cfg, bool production,
		     const char *risk)
{
	const char *dflt;

	memset(out, 0, sizeof *out);
	if (production) {
		out->id = "production_deploy";
		dflt = "Approve production deployment.";
		snprintf(out->why, sizeof out->why,
			 "a production deploy always needs a human's approval (no automation level passes it)");
	} else if (deploy_risk_rank(risk) == 3) {
		out->id = "critical_deploy";
		dflt = "Approve deploying a critical-risk change.";
		snprintf(out->why, sizeof out->why, "a critical-risk deploy always needs a human's approval");
	} else {
		return;
	}
	jv g = configured_gate(cfg, out->id);
	const char *prompt = json_get_str(g, "prompt");
	snprintf(out->prompt, sizeof out->prompt, "%s", prompt && *prompt ? prompt : dflt);
	out->timeout_s = json_get_num(g, "timeout_s", 3600);
	jv_free(g);
}

enum deploy_answer deploy_answer_parse(const char *line)
{
	size_t len;

	if (!line)
		return DEPLOY_ANSWER_NO;
	while (isspace((unsigned char)*line))
		line++;
	len = strlen(line);
	while (len && isspace((unsigned char)line[len - 1]))
		len--;
	if ((len == 1 && (line[0] == 'y' || line[0] == 'Y')) ||
	    (len == 3 && strncasecmp(line, "yes", 3) == 0))
		return DEPLOY_ANSWER_YES;
	return DEPLOY_ANSWER_NO;
}

static void tty_write(int fd, const char *s)
{
	size_t len = strlen(s);

	while (len > 0) {
		ssize_t w = write(fd, s, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		len -= (size_t)w;
	}
}

enum deploy_answer deploy_gate_ask(const struct deploy_gate *gate, const char *summary,
				   const char *tty_path)
{
	char line[256];
	size_t len = 0;
	enum deploy_answer answer = DEPLOY_ANSWER_NONE;
	int fd = open(tty_path ? tty_path : "/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return DEPLOY_ANSWER_NONE;
	if (summary) {
		tty_write(fd, summary);
		tty_write(fd, "\n");
	}
	tty_write(fd, gate->prompt);
	tty_write(fd, " [y/N] ");
	int64_t deadline = monotonic_ms() + (int64_t)(gate->timeout_s * 1000);
	for (;;) {
		int64_t left = deadline - monotonic_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (left <= 0)
			break;
		int n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		if (n == 0)
			continue;
		ssize_t r = read(fd, line + len, sizeof line - 1 - len);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			break;	/* end of input: no answer */
		len += (size_t)r;
		line[len] = '\0';
		if (memchr(line, '\n', len) || len == sizeof line - 1) {
			char *nl = strchr(line, '\n');
			if (nl)
				*nl = '\0';
			answer = deploy_answer_parse(line);
			break;
		}
	}
	if (answer == DEPLOY_ANSWER_NONE)
		tty_write(fd, "\n(no answer)\n");
	close(fd);
	return answer;
}
