/* child.c - a streaming child process; see child.h. */
#include "os/child.h"
#include "core/buf.h"
#include "core/forge.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static volatile sig_atomic_t running_pid;

void child_forward_signal(int sig)
{
	pid_t pid = (pid_t)running_pid;

	if (pid > 0)
		kill(pid, sig);
}

struct stream {
	int fd;
	struct buf line;
	int cut;
	void (*cb)(void *, const char *, size_t, int);
};

/* Hand over every complete line in data; keep the partial rest. */
static void feed(struct stream *s, const char *data, size_t n, size_t max, void *payload)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		size_t room = s->line.len < max ? max - s->line.len : 0;

		buf_add(&s->line, data, take < room ? take : room);
		if (take > room)
			s->cut = 1;
		if (nl) {
			if (s->cb)
				s->cb(payload, s->line.buf, s->line.len, s->cut);
			buf_reset(&s->line);
			s->cut = 0;
			take++;
		}
		data += take;
		n -= take;
	}
}

static void flush_partial(struct stream *s, void *payload)
{
	if (s->line.len && s->cb)
		s->cb(payload, s->line.buf, s->line.len, s->cut);
	buf_release(&s->line);
}

static int spawn(pid_t *pid, const struct child_opts *o, int in, int out, int err)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t def;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in, STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, err, STDERR_FILENO);
	posix_spawnattr_init(&attr);
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);	/* the supervisor ignores it; the child must not */
	sigaddset(&def, SIGINT);
	sigaddset(&def, SIGTERM);
	posix_spawnattr_setsigdefault(&attr, &def);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawn(pid, o->argv[0], &fa, &attr, (char *const *)o->argv,
			 o->envp ? o->envp : environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc != 0)
		return forge_error("cannot run '%s': %s", o->argv[0], strerror(rc));
	return 0;
}

static int wait_for(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 128 + SIGKILL;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

int child_run(int *status, const struct child_opts *o)
{
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	size_t max = o->max_line ? o->max_line : 16u << 20;
	struct stream out = { .fd = -1, .cb = o->on_stdout }, err = { .fd = -1, .cb = o->on_stderr };
	size_t written = 0;
	pid_t pid;
	int rc = -1;

	*status = -1;
	buf_init(&out.line, 0);
	buf_init(&err.line, 0);
	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
		forge_error("cannot make pipes: %s", strerror(errno));
		goto out;
	}
	if (spawn(&pid, o, pin[0], pout[1], perr[1]) < 0)
		goto out;
	running_pid = pid;
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	pin[0] = pout[1] = perr[1] = -1;
	fcntl(pin[1], F_SETFL, O_NONBLOCK);
	if (!o->input_len) {
		close(pin[1]);
		pin[1] = -1;
	}
	out.fd = pout[0];	/* the streams own the read ends from here */
	err.fd = perr[0];
	pout[0] = perr[0] = -1;

	while (out.fd >= 0 || err.fd >= 0) {
		struct pollfd p[3] = {
			{ .fd = out.fd, .events = POLLIN }, { .fd = err.fd, .events = POLLIN },
			{ .fd = pin[1], .events = POLLOUT },
		};
		int n = poll(p, 3, 0);
		if (n == 0) {
			if (o->on_idle)
				o->on_idle(o->payload);
			n = poll(p, 3, -1);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pin[1] >= 0 && (p[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = write(pin[1], o->input + written, o->input_len - written);
			if (w > 0)
				written += (size_t)w;
			if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == o->input_len) {
				close(pin[1]);	/* done, or the child stopped reading */
				pin[1] = -1;
			}
		}
		struct stream *s[2] = { &out, &err };
		for (int i = 0; i < 2; i++) {
			if (s[i]->fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char chunk[65536];
			ssize_t r = read(s[i]->fd, chunk, sizeof chunk);
			if (r > 0) {
				feed(s[i], chunk, (size_t)r, max, o->payload);
			} else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
				close(s[i]->fd);
				s[i]->fd = -1;
			}
		}
	}
	flush_partial(&out, o->payload);
	flush_partial(&err, o->payload);
	*status = wait_for(pid);
	running_pid = 0;
	rc = 0;
out:
	for (int i = 0; i < 2; i++) {
		if (pin[i] >= 0)
			close(pin[i]);
		if (pout[i] >= 0)
			close(pout[i]);
		if (perr[i] >= 0)
			close(perr[i]);
	}
	if (out.fd >= 0)
		close(out.fd);
	if (err.fd >= 0)
		close(err.fd);
	buf_release(&out.line);
	buf_release(&err.line);
	return rc;
}
