/* git_cred.c - credentials for a remote (git_internal.h): git's own
 * credential helpers over http(s), the SSH agent then ~/.ssh keys over ssh. */
#include "git/git_internal.h"

#include "core/buf.h"
#include "core/cachedir.h"
#include "core/forge.h"
#include "core/secret.h"
#include "core/sha256.h"
#include "os/proc.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A helper may wait for a human (a browser sign-in of Git Credential Manager). */
#define CRED_HELPER_TIMEOUT_MS 120000

char *forge_git_url_display(const char *url)
{
	return secret_url_shown(url);
}

void forge_git_cred_init(struct forge_git_cred *c, const char *dir, const char *remote)
{
	memset(c, 0, sizeof *c);
	c->dir = dir;
	c->remote = remote;
}

static void forget(struct forge_git_cred *c)
{
	buf_release(&c->desc);
	if (c->password)
		memset(c->password, 0, strlen(c->password));
	free(c->password);
	free(c->username);
	c->password = c->username = NULL;
}

void forge_git_cred_release(struct forge_git_cred *c)
{
	forget(c);
}

/*
 * `git credential ACTION` in c->dir with `input` on its stdin (git's
 * credential protocol); never prompts on the terminal.  approve and reject
 * run in a session of their own with stderr to /dev/null: a helper may
 * start a daemon that outlives them (credential-cache--daemon), which must
 * neither hold our pipe (proc_run would wait for it) nor be in a process
 * group that forge kills when the run's programs end.
 */
static int helper(struct forge_git_cred *c, const char *action, const char *input, struct proc_result *r)
{
	const char *fill[] = { "/usr/bin/env", "GIT_TERMINAL_PROMPT=0", "git", "credential", action, NULL };
	const char *tell[] = { "/usr/bin/env", "GIT_TERMINAL_PROMPT=0", "setsid", "sh", "-c",
			       "exec git credential \"$0\" 2>/dev/null", action, NULL };
	struct proc_opts o = PROC_OPTS_INIT;
	/* the user's helper gets neither the model keys nor the GitHub token
	 * (README: never passed to any child process) */
	char **env = llm_environ_scrubbed();
	int rc;

	o.argv = strcmp(action, "fill") == 0 ? fill : tell;
	o.envp = env;
	o.cwd = c->dir;
	o.input = input;
	o.input_len = strlen(input);
	o.timeout_ms = CRED_HELPER_TIMEOUT_MS;
	o.keep_pgrp = true;     /* a helper may daemonize (credential-cache) */
	o.out_cap = 65536;
	rc = proc_run(r, &o);
	free(env);
	return rc;
}

/* What git's helpers are asked: protocol, host[:port], path and the user
 * of the URL, as git itself describes a remote (credential.useHttpPath and
 * the helpers' own matching are git's business). */
static int describe(struct forge_git_cred *c, const char *url, const char *user)
{
	const char *scheme = strstr(url, "://");

	buf_reset(&c->desc);
	if (!scheme)
		return -1;
	const char *host = scheme + 3, *end = host + strcspn(host, "/?#");
	const char *at = memrchr(host, '@', (size_t)(end - host));

	if (at)
		host = at + 1;
	buf_addf(&c->desc, "protocol=%.*s\nhost=%.*s\n", (int)(scheme - url), url, (int)(end - host), host);
	if (*end == '/' && end[1])
		buf_addf(&c->desc, "path=%.*s\n", (int)strcspn(end + 1, "?#"), end + 1);
	if (user && *user)
		buf_addf(&c->desc, "username=%s\n", user);
	return 0;
}

/* The value of "key=" in git's credential output, malloc'd, or NULL. */
static char *field(const char *out, const char *key)
{
	size_t k = strlen(key);

	for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, k) == 0 && p[k] == '=')
			return strndup(p + k + 1, strcspn(p + k + 1, "\n"));
	return NULL;
}

/* The credential description plus what the helper gave, for approve/reject. */
static void tell_helpers(struct forge_git_cred *c, const char *action)
{
	struct proc_result r;
	struct buf in = BUF_INIT;

	buf_adds(&in, c->desc.buf ? c->desc.buf : "");
	if (c->username && !strstr(in.buf ? in.buf : "", "\nusername="))
		buf_addf(&in, "username=%s\n", c->username);
	buf_addf(&in, "password=%s\n\n", c->password ? c->password : "");
	helper(c, action, in.buf, &r);   /* best effort, as git does */
	proc_result_release(&r);
	memset(in.buf, 0, in.len);
	buf_release(&in);
}

void forge_git_cred_done(struct forge_git_cred *c, bool ok)
{
	if (c->filled && ok)
		tell_helpers(c, "approve");
	c->filled = false;
}

/* The first line of a helper's complaint, or a default. */
static void helper_failed(const struct proc_result *r)
{
	const char *e = r->err.len ? r->err.buf : "no credential helper gave one";
	char msg[300];

	snprintf(msg, sizeof msg, "no credentials: git credential fill: %.*s", (int)strcspn(e, "\n"), e);
	git_error_set_str(GIT_ERROR_NET, msg);
}

static int userpass(git_credential **out, struct forge_git_cred *c, const char *url, const char *user)
{
	struct proc_result r;
	struct buf in = BUF_INIT;
	int rc = GIT_EAUTH;

	if (c->filled) {
		/* called again: the server refused what the helpers gave */
		tell_helpers(c, "reject");
		c->filled = false;
		git_error_set_str(GIT_ERROR_NET, "authentication failed: the server refused the username and password "
						 "of git's credential helper (told to forget them: git credential reject)");
		return GIT_EAUTH;
	}
	if (c->userpass_tries++ > 0) {
		git_error_set_str(GIT_ERROR_NET, "authentication failed");
		return GIT_EAUTH;
	}
	if (describe(c, url, user) < 0)
		return GIT_PASSTHROUGH;
	buf_addch(&in, '\n');
	buf_addf(&in, "%s\n", c->desc.buf);
	if (helper(c, "fill", in.buf + 1, &r) < 0 || r.exit_code != 0) {
		helper_failed(&r);
		goto out;
	}
	c->username = field(r.out.buf, "username");
	c->password = field(r.out.buf, "password");
	if (!c->username || !c->password) {
		helper_failed(&r);
		goto out;
	}
	llm_secret_add(c->password);
	if (git_credential_userpass_plaintext_new(out, c->username, c->password) < 0)
		goto out;
	c->filled = true;
	rc = 0;
out:
	if (r.out.buf)
		memset(r.out.buf, 0, r.out.len);
	proc_result_release(&r);
	buf_release(&in);
	return rc;
}

/* The user of an ssh URL without one: the local user, as ssh does. */
static const char *local_user(void)
{
	const char *u = getenv("USER");
	struct passwd *pw;

	if (u && *u)
		return u;
	pw = getpwuid(getuid());
	return pw ? pw->pw_name : "git";
}

/* Over ssh: the agent first (when SSH_AUTH_SOCK is set), then each of
 * ~/.ssh/id_ed25519, id_ecdsa, id_rsa that exists (without a passphrase,
 * or with the agent holding it), one a call until one is accepted. */
static int ssh_key(git_credential **out, struct forge_git_cred *c, const char *user)
{
	static const char *const keys[] = { "id_ed25519", "id_ecdsa", "id_rsa" };
	const char *home = home_dir(), *sock = getenv("SSH_AUTH_SOCK");
	char priv[4096], pub[4100];
	struct stat st;

	if (!user || !*user)
		user = local_user();
	if (c->ssh_step == 0) {
		c->ssh_step++;
		if (sock && *sock)
			return git_credential_ssh_key_from_agent(out, user);
	}
	while (home && c->ssh_step - 1 < (int)(sizeof keys / sizeof keys[0])) {
		const char *k = keys[c->ssh_step++ - 1];

		snprintf(priv, sizeof priv, "%s/.ssh/%s", home, k);
		snprintf(pub, sizeof pub, "%s.pub", priv);
		if (stat(priv, &st) == 0)
			return git_credential_ssh_key_new(out, user, stat(pub, &st) == 0 ? pub : NULL, priv, NULL);
	}
	git_error_set_str(GIT_ERROR_SSH, "authentication failed: no key of the SSH agent or of ~/.ssh "
					 "(id_ed25519, id_ecdsa, id_rsa) was accepted");
	return GIT_EAUTH;
}

int forge_git_cred_acquire(git_credential **out, const char *url, const char *user, unsigned int allowed,
			   void *payload)
{
	struct forge_git_cred *c = payload;

	*out = NULL;
	if (allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT)
		return userpass(out, c, url, user);
	if (allowed & GIT_CREDENTIAL_SSH_KEY)
		return ssh_key(out, c, user);
	if (allowed & GIT_CREDENTIAL_USERNAME)
		return git_credential_username_new(out, user && *user ? user : local_user());
	return GIT_PASSTHROUGH;
}

/* ---- ssh host keys ------------------------------------------------------- */

void forge_git_cred_url(struct forge_git_cred *c, const char *url)
{
	const char *scheme = strstr(url, "://"), *host, *end, *colon;

	c->port = 22;
	if (!scheme || strncmp(url, "ssh", 3) != 0)
		return;
	host = scheme + 3;
	end = host + strcspn(host, "/?#");
	if (memrchr(host, '@', (size_t)(end - host)))
		host = (const char *)memrchr(host, '@', (size_t)(end - host)) + 1;
	colon = *host == '[' ? memchr(host, ']', (size_t)(end - host)) : host;
	colon = colon ? memchr(colon, ':', (size_t)(end - colon)) : NULL;
	if (colon && colon + 1 < end)
		c->port = (int)strtol(colon + 1, NULL, 10);
}

/* base64 of one known_hosts key into out (at most cap bytes); its length, or -1. */
static long unbase64(unsigned char *out, size_t cap, const char *in, size_t n)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned long acc = 0;
	size_t len = 0;
	int bits = 0;

	for (size_t i = 0; i < n && in[i] != '='; i++) {
		const char *p = strchr(abc, in[i]);

		if (!p || !in[i])
			return -1;
		acc = (acc << 6) | (unsigned long)(p - abc);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (len == cap)
				return -1;
			out[len++] = (unsigned char)(acc >> bits);
		}
	}
	return (long)len;
}

/* Whether a line `ssh-keygen -F` printed holds the key whose SHA-256 is sha. */
static bool line_has_key(const char *line, size_t n, const unsigned char sha[32])
{
	unsigned char key[8192], got[32];
	const char *f[3];
	size_t fl[3], k = 0, i = 0;

	if (!n || *line == '#' || *line == '@')
		return false;   /* comments, @cert-authority and @revoked lines */
	while (i < n && k < 3) {
		while (i < n && (line[i] == ' ' || line[i] == '\t'))
			i++;
		f[k] = line + i;
		while (i < n && line[i] != ' ' && line[i] != '\t')
			i++;
		fl[k] = (size_t)(line + i - f[k]);
		k += fl[k] > 0;
	}
	long len = k == 3 ? unbase64(key, sizeof key, f[2], fl[2]) : -1;
	struct sha256 h;

	if (len <= 0)
		return false;
	sha256_init(&h);
	sha256_update(&h, key, (size_t)len);
	sha256_final(got, &h);
	return memcmp(got, sha, 32) == 0;
}

/* 1: a known_hosts file has host's key, 0: it has others for host, -1: none. */
static int known_host(const char *file, const char *host, const unsigned char sha[32])
{
	const char *argv[] = { "/usr/bin/env", "ssh-keygen", "-F", host, "-f", file, NULL };
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	char **env = llm_environ_scrubbed();
	int found = -1;

	o.argv = argv;
	o.envp = env;
	o.timeout_ms = 10000;
	o.out_cap = 1 << 20;
	if (access(file, R_OK) == 0 && proc_run(&r, &o) == 0 && r.exit_code == 0) {
		for (const char *p = r.out.buf; p && *p;) {
			size_t n = strcspn(p, "\n");

			if (n && *p != '#')
				found = found == 1 || line_has_key(p, n, sha) ? 1 : 0;
			p += n + (p[n] == '\n');
		}
	}
	if (access(file, R_OK) == 0)
		proc_result_release(&r);
	free(env);
	return found;
}

int forge_git_cred_check_host(git_cert *cert, int valid, const char *host, void *payload)
{
	struct forge_git_cred *c = payload;
	const git_cert_hostkey *k = (const git_cert_hostkey *)cert;
	const char *home = home_dir();
	char name[300], file[4096], msg[700];
	int mine = -1, sys;

	if (cert->cert_type != GIT_CERT_HOSTKEY_LIBSSH2)
		return GIT_PASSTHROUGH;         /* TLS: libgit2's own check */
	(void)valid;
	if (c->port == 22)
		snprintf(name, sizeof name, "%s", host);
	else
		snprintf(name, sizeof name, "[%s]:%d", host, c->port);
	if (!(k->type & GIT_CERT_SSH_SHA256)) {
		git_error_set_str(GIT_ERROR_SSH, "host key verification failed: no SHA-256 of the host key");
		return GIT_ECERTIFICATE;
	}
	if (home) {
		snprintf(file, sizeof file, "%s/.ssh/known_hosts", home);
		mine = known_host(file, name, k->hash_sha256);
	}
	sys = mine == 1 ? 1 : known_host("/etc/ssh/ssh_known_hosts", name, k->hash_sha256);
	if (mine == 1 || sys == 1)
		return 0;
	if (mine == 0 || sys == 0)
		snprintf(msg, sizeof msg, "host key verification failed: the key of %s is not the one in known_hosts "
			 "(~/.ssh/known_hosts, /etc/ssh/ssh_known_hosts)", name);
	else
		snprintf(msg, sizeof msg, "host key verification failed: %s is not in ~/.ssh/known_hosts "
			 "(connect once with ssh, or: ssh-keyscan%s%.0d %s >> ~/.ssh/known_hosts)",
			 name, c->port == 22 ? "" : " -p ", c->port == 22 ? 0 : c->port, host);
	git_error_set_str(GIT_ERROR_SSH, msg);
	return GIT_ECERTIFICATE;
}
