/* sandbox_job.c - worktree commands in the sandbox; see sandbox_job.h. */
#include "os/sandbox_job.h"
#include "core/forge.h"
#include "core/tmpdir.h"
#include "os/sandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* policy->env_extra followed by pass_env, copied; NULL-terminated. */
static char **merged_names(const struct sandbox_policy *p, const char *const *pass)
{
	size_t n = 0, k = 0;
	char **v;

	while (p->env_extra && p->env_extra[n])
		n++;
	for (size_t i = 0; pass && pass[i]; i++)
		n++;
	v = xcalloc(n + 1, sizeof *v);
	for (size_t i = 0; p->env_extra && p->env_extra[i]; i++)
		v[k++] = xstrdup(p->env_extra[i]);
	for (size_t i = 0; pass && pass[i]; i++)
		v[k++] = xstrdup(pass[i]);
	v[k] = NULL;
	return v;
}

int sandbox_job_run(struct proc_result *out, jv *unconfined, const struct sandbox_job *job)
{
	struct sandbox_policy *own = NULL, p;
	char *tmp = NULL, **names = NULL, **env = NULL;
	int rc = -1;

	memset(out, 0, sizeof *out);
	buf_init(&out->out, 0);
	buf_init(&out->err, 0);
	if (unconfined)
		*unconfined = jv_null();
	if (!job->policy && sandbox_policy_new(&own, jv_null()) < 0)
		return -1;
	p = job->policy ? *job->policy : *own;   /* a shallow copy to adjust */
	if (job->output_cap)
		p.output_cap = job->output_cap;
	if (job->allow_network)
		p.network = SANDBOX_OFF;
	if (job->pass_env) {
		names = merged_names(&p, job->pass_env);
		p.env_extra = names;
	}
	if (!job->tmp && tmpdir_make(&tmp, "forge-cmd") < 0)
		goto out;
	if (job->untranslated)
		env = sandbox_env_untranslated(job->base_env);
	struct sandbox_cmd cmd = {
		.command = job->command,
		.root = job->root,
		.cwd = job->cwd,
		.tmp = job->tmp ? job->tmp : tmp,
		.base_env = env ? env : job->base_env,
		.timeout_ms = job->timeout_ms,
		.cut_count = job->cut_count,
	};
	rc = sandbox_run(out, unconfined, &p, &cmd);
out:
	tmpdir_remove(tmp);
	sandbox_env_free(env);
	for (size_t i = 0; names && names[i]; i++)
		free(names[i]);
	free(names);
	sandbox_policy_free(own);
	return rc;
}

void sandbox_shell_join(struct buf *b, const char *const *argv)
{
	for (size_t i = 0; argv[i]; i++) {
		if (i)
			buf_addch(b, ' ');
		buf_add_shell_quoted(b, argv[i]);
	}
}
