/* term.c - colour, the status line and the spinner on stderr; see term.h. */
#include "app/term.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define TICK_MS 200
#define TAIL_MAX 4096           /* the streamed text kept: its end, for the last line */

bool term_color(int fd)
{
	const char *no = getenv("NO_COLOR"), *term = getenv("TERM");

	if (no && *no)
		return false;
	if (term && strcmp(term, "dumb") == 0)
		return false;
	return isatty(fd) == 1;
}

const char *term_sgr(bool on, enum term_style style)
{
	static const char *const seq[] = {
		[TERM_RESET] = "\033[0m", [TERM_BOLD] = "\033[1m", [TERM_DIM] = "\033[2m",
		[TERM_RED] = "\033[31m", [TERM_GREEN] = "\033[32m", [TERM_YELLOW] = "\033[33m",
		[TERM_CYAN] = "\033[36m",
	};
	return on ? seq[style] : "";
}

int term_width(int fd)
{
	struct winsize ws;

	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

size_t term_cut(const char *s, size_t len, size_t cols)
{
	size_t i = 0;

	while (i < len && cols > 0) {
		i++;
		while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80)
			i++;	/* the rest of a UTF-8 character */
		cols--;
	}
	return i;
}

/* ---- the status line ---------------------------------------------------- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool drawn;              /* a status line is on the screen (or relayed) */

void term_write(int fd, const char *s, size_t len)
{
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

enum mode { MODE_NONE, MODE_TTY, MODE_RELAY };

static enum mode status_mode(void)
{
	const char *relay = getenv(TERM_RELAY_ENV);

	const char *term = getenv("TERM");

	/* (a terminal that cannot erase a line, TERM=dumb: no status line,
	 * whose "\r\033[K" would show there as it is) */
	if (isatty(STDERR_FILENO))
		return term && strcmp(term, "dumb") == 0 ? MODE_NONE : MODE_TTY;
	return relay && *relay ? MODE_RELAY : MODE_NONE;
}

bool term_status_enabled(void)
{
	return status_mode() != MODE_NONE;
}

/* Draw with the lock held. */
static void draw(const char *text)
{
	enum mode m = status_mode();
	struct buf b = BUF_INIT;
	bool empty = !text || !*text;

	if (m == MODE_NONE || (empty && !drawn))
		return;
	if (m == MODE_RELAY) {
		buf_adds(&b, TERM_RELAY_MARK);
		if (!empty)
			buf_add(&b, text, strcspn(text, "\n"));
		buf_addch(&b, '\n');
	} else {
		bool color = term_color(STDERR_FILENO);
		size_t width = (size_t)term_width(STDERR_FILENO);
		size_t len = empty ? 0 : strcspn(text, "\n");

		buf_adds(&b, "\r\033[K");
		if (!empty) {
			/* one column spare: a full line would wrap on some terminals */
			size_t cut = term_cut(text, len, width > 1 ? width - 1 : 1);
			buf_adds(&b, term_sgr(color, TERM_DIM));
			/* the model's text may hold control characters: never sent
			 * to the terminal as they are */
			for (size_t i = 0; i < cut; i++)
				buf_addch(&b, (unsigned char)text[i] < 0x20 || text[i] == 0x7f ? ' ' : text[i]);
			buf_adds(&b, term_sgr(color, TERM_RESET));
		}
	}
	term_write(STDERR_FILENO, b.buf, b.len);
	drawn = !empty;
	buf_release(&b);
}

void term_status(const char *text)
{
	pthread_mutex_lock(&lock);
	draw(text);
	pthread_mutex_unlock(&lock);
}

void term_status_clear(void)
{
	pthread_mutex_lock(&lock);
	if (drawn)
		draw(NULL);
	pthread_mutex_unlock(&lock);
}

/* ---- the spinner --------------------------------------------------------- */

static struct {
	bool running, stop;
	pthread_t thread;
	pthread_cond_t wake;
	char label[256];
	struct timespec t0;
	size_t bytes;           /* streamed so far */
	char tail[TAIL_MAX];    /* the end of the streamed text */
	size_t tail_len;
	unsigned frame;
} sp = { .wake = PTHREAD_COND_INITIALIZER };

static double seconds_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* The last non-empty line of the streamed text, blanks trimmed. */
static void last_line(const char **start, size_t *len)
{
	size_t end = sp.tail_len, b;

	while (end > 0 && (sp.tail[end - 1] == '\n' || sp.tail[end - 1] == ' ' || sp.tail[end - 1] == '\r'))
		end--;
	b = end;
	while (b > 0 && sp.tail[b - 1] != '\n')
		b--;
	while (b < end && (sp.tail[b] == ' ' || sp.tail[b] == '\t'))
		b++;
	*start = sp.tail + b;
	*len = end - b;
}

/* Redraw the spinner's line, lock held. */
static void spinner_draw(void)
{
	static const char *const frames[] = { "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏" };
	struct buf b = BUF_INIT;
	const char *line;
	size_t len;

	buf_addf(&b, "%s %s · %.1f s · ~%zu tokens", frames[sp.frame++ % 10], sp.label,
		 seconds_since(&sp.t0), (sp.bytes + 3) / 4);
	last_line(&line, &len);
	if (len) {
		buf_adds(&b, " · ");
		buf_add(&b, line, len);
	}
	draw(b.buf);
	buf_release(&b);
}

static void *spin(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	while (!sp.stop) {
		struct timespec until;
		spinner_draw();
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += TICK_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&sp.wake, &lock, &until);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

void term_spinner_start(const char *label)
{
	if (sp.running || !term_status_enabled())
		return;
	pthread_mutex_lock(&lock);
	snprintf(sp.label, sizeof sp.label, "%s", label ? label : "");
	clock_gettime(CLOCK_MONOTONIC, &sp.t0);
	sp.bytes = sp.tail_len = 0;
	sp.stop = false;
	pthread_mutex_unlock(&lock);
	/* Every signal blocked in the thread: they stay the main thread's
	 * (the prompt's and the phases' handlers expect them there). */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	sp.running = pthread_create(&sp.thread, NULL, spin, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void term_spinner_text(const char *text, size_t len)
{
	if (!sp.running || !len)
		return;
	pthread_mutex_lock(&lock);
	sp.bytes += len;
	if (len > TAIL_MAX / 2) {
		text += len - TAIL_MAX / 2;
		len = TAIL_MAX / 2;
	}
	if (sp.tail_len + len > TAIL_MAX) {	/* keep the newer half */
		size_t keep = TAIL_MAX / 2 < sp.tail_len ? TAIL_MAX / 2 : sp.tail_len;
		memmove(sp.tail, sp.tail + sp.tail_len - keep, keep);
		sp.tail_len = keep;
	}
	memcpy(sp.tail + sp.tail_len, text, len);
	sp.tail_len += len;
	spinner_draw();         /* the text as it comes, not only at the next tick */
	pthread_mutex_unlock(&lock);
}

void term_spinner_stop(void)
{
	if (!sp.running)
		return;
	pthread_mutex_lock(&lock);
	sp.stop = true;
	pthread_cond_signal(&sp.wake);
	pthread_mutex_unlock(&lock);
	pthread_join(sp.thread, NULL);
	sp.running = false;
	term_status_clear();
}

void term_clean(char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 && (unsigned char)s[i + 1] <= 0x9F)
			s[i] = s[i + 1] = ' ', i++;
		else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F)
			s[i] = ' ';
	}
}

/* s[0..n) with its control characters spaces (term_clean); NULL when it
 * has none. */
static char *clean_text(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F || c == 0xC2) {
			char *out = xmalloc(n + 1);

			memcpy(out, s, n);
			out[n] = '\0';
			term_clean(out, n);
			if (memcmp(out, s, n) == 0) {   /* (a C2 of no C1) */
				free(out);
				return NULL;
			}
			return out;
		}
	}
	return NULL;
}

static jv safe_string(jv v, void *unused)
{
	char *clean = clean_text(jv_string_value(v), (size_t)jv_string_length_bytes(jv_copy(v)));
	jv out;

	(void)unused;
	if (!clean)
		return v;
	out = jv_string_sized(clean, jv_string_length_bytes(jv_copy(v)));
	free(clean);
	jv_free(v);
	return out;
}

jv term_safe(jv v)
{
	return json_map_strings(v, safe_string, NULL);
}
