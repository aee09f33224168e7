/* term.c - colour, the status line and the spinner on stderr; see term.h. */
#include "app/term.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define TICK_MS 200
#define TAIL_MAX 4096           /* the streamed text kept: its end, for the last line */

/* TERM says nothing of what the terminal can do: "dumb", or unset or
 * empty (a terminal whose emulator set none: `env -u TERM`, a bare
 * serial console), where an escape sequence may show as it is. */
static bool term_dumb(void)
{
	const char *term = getenv("TERM");

	return !term || !*term || strcmp(term, "dumb") == 0;
}

bool term_color(int fd)
{
	const char *no = getenv("NO_COLOR");

	if (no && *no)
		return false;
	if (term_dumb())
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

/* The code point of the UTF-8 character at s[0..len) and its length in
 * *n (1 for a byte that starts no valid character, taken as it is). */
static uint32_t decode(const unsigned char *s, size_t len, size_t *n)
{
	size_t need = s[0] < 0x80 ? 1 : s[0] >= 0xF0 && s[0] < 0xF8 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
	uint32_t c = need == 4 ? s[0] & 0x07u : need == 3 ? s[0] & 0x0Fu : need == 2 ? s[0] & 0x1Fu : s[0];

	if (need == 0 || need > len) {
		*n = 1;
		return s[0];
	}
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xC0) != 0x80) {
			*n = 1;
			return s[0];
		}
		c = c << 6 | (s[i] & 0x3Fu);
	}
	*n = need;
	return c;
}

static bool in(uint32_t c, const uint32_t (*r)[2], size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (c >= r[i][0] && c <= r[i][1])
			return true;
	return false;
}

/* The columns c takes: a small table rather than wcwidth(), which needs a
 * UTF-8 locale no Forge program sets.  Combining marks and zero-width
 * characters 0; East Asian wide and fullwidth ones and emoji 2 (as
 * Unicode's EastAsianWidth W/F, the common blocks); else 1.  forge tui
 * draws with curses, which counts by wcwidth(): every character glibc's
 * (2.36, C.UTF-8) counts 2 is 2 here too, or a cut row would spill. */
static size_t cp_width(uint32_t c)
{
	static const uint32_t zero[][2] = {
		{ 0x0300, 0x036F }, { 0x0483, 0x0489 }, { 0x0591, 0x05BD }, { 0x0610, 0x061A },
		{ 0x064B, 0x065F }, { 0x0E31, 0x0E31 }, { 0x0E34, 0x0E3A }, { 0x0E47, 0x0E4E },
		{ 0x1AB0, 0x1AFF }, { 0x1DC0, 0x1DFF }, { 0x200B, 0x200F }, { 0x20D0, 0x20FF },
		{ 0x302A, 0x302D }, { 0x3099, 0x309A }, { 0xFE00, 0xFE0F }, { 0xFE20, 0xFE2F },
		{ 0xFEFF, 0xFEFF }, { 0xE0100, 0xE01EF },
	};
	static const uint32_t wide[][2] = {
		{ 0x1100, 0x115F }, { 0x231A, 0x231B }, { 0x2329, 0x232A }, { 0x23E9, 0x23EC },
		{ 0x23F0, 0x23F0 }, { 0x23F3, 0x23F3 }, { 0x25FD, 0x25FE }, { 0x2614, 0x2615 },
		{ 0x2648, 0x2653 }, { 0x267F, 0x267F }, { 0x2693, 0x2693 }, { 0x26A1, 0x26A1 },
		{ 0x26AA, 0x26AB }, { 0x26BD, 0x26BE }, { 0x26C4, 0x26C5 }, { 0x26CE, 0x26CE },
		{ 0x26D4, 0x26D4 }, { 0x26EA, 0x26EA }, { 0x26F2, 0x26F5 }, { 0x26FA, 0x26FD },
		{ 0x2705, 0x2705 }, { 0x270A, 0x270B }, { 0x2728, 0x2728 }, { 0x274C, 0x274C },
		{ 0x274E, 0x274E }, { 0x2753, 0x2755 }, { 0x2757, 0x2757 }, { 0x2795, 0x2797 },
		{ 0x27B0, 0x27B0 }, { 0x27BF, 0x27BF }, { 0x2B1B, 0x2B1C }, { 0x2B50, 0x2B50 },
		{ 0x2B55, 0x2B55 }, { 0x2E80, 0x303E }, { 0x3041, 0x33FF }, { 0x3400, 0x4DFF },
		{ 0x4E00, 0x9FFF }, { 0xA000, 0xA4CF }, { 0xA960, 0xA97F }, { 0xAC00, 0xD7A3 },
		{ 0xF900, 0xFAFF }, { 0xFE10, 0xFE19 }, { 0xFE30, 0xFE6F }, { 0xFF00, 0xFF60 },
		{ 0xFFE0, 0xFFE6 }, { 0x16FE0, 0x16FE4 }, { 0x16FF0, 0x16FF1 }, { 0x17000, 0x18D08 },
		{ 0x1AFF0, 0x1AFF3 }, { 0x1AFF5, 0x1AFFB }, { 0x1AFFD, 0x1AFFE }, { 0x1B000, 0x1B2FF },
		{ 0x1F004, 0x1F004 }, { 0x1F0CF, 0x1F0CF }, { 0x1F18E, 0x1F18E }, { 0x1F191, 0x1F19A },
		{ 0x1F200, 0x1F251 }, { 0x1F260, 0x1F265 }, { 0x1F300, 0x1F64F }, { 0x1F680, 0x1F6FF },
		{ 0x1F7E0, 0x1F7EB }, { 0x1F7F0, 0x1F7F0 }, { 0x1F90C, 0x1F9FF }, { 0x1FA70, 0x1FAFF },
		{ 0x20000, 0x2FFFD }, { 0x30000, 0x3FFFD },
	};

	if (c < 0x300)
		return 1;
	if (in(c, zero, sizeof zero / sizeof zero[0]))
		return 0;
	return in(c, wide, sizeof wide / sizeof wide[0]) ? 2 : 1;
}

size_t term_columns(const char *s, size_t len)
{
	size_t cols = 0, n;

	for (size_t i = 0; i < len; i += n)
		cols += cp_width(decode((const unsigned char *)s + i, len - i, &n));
	return cols;
}

int term_pad(const char *s, size_t width)
{
	size_t w = term_columns(s, strlen(s));

	return w < width ? (int)(width - w) : 0;
}

size_t term_cut(const char *s, size_t len, size_t cols)
{
	size_t i = 0, used = 0, n;

	while (i < len) {
		size_t w = cp_width(decode((const unsigned char *)s + i, len - i, &n));
		if (used + w > cols)
			break;
		used += w;
		i += n;
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

	/* (a terminal that cannot erase a line, TERM=dumb or none: no status
	 * line, whose "\r\033[K" would show there as it is) */
	if (isatty(STDERR_FILENO))
		return term_dumb() ? MODE_NONE : MODE_TTY;
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
			/* the model's text may hold control characters: never sent
			 * to the terminal as they are (cleaned before it is cut,
			 * so that the cut counts what is shown) */
			char *line = xstrndup(text, len);
			term_clean_line(line, len);
			/* one column spare: a full line would wrap on some terminals */
			size_t cut = term_cut(line, len, width > 1 ? width - 1 : 1);
			buf_adds(&b, term_sgr(color, TERM_DIM));
			buf_add(&b, line, cut);
			buf_adds(&b, term_sgr(color, TERM_RESET));
			free(line);
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

/* The length of the control character at s[0..left) that term_clean()
 * makes spaces (buf_control_at(), newline and tab aside), or 0. */
static size_t unsafe_at(const char *s, size_t left)
{
	size_t k = buf_control_at(s, left);

	return k && *s != '\n' && *s != '\t' ? k : 0;
}

void term_clean(char *s, size_t n)
{
	for (size_t i = 0, k; i < n; i += k ? k : 1)
		if ((k = unsafe_at(s + i, n - i)))
			memset(s + i, ' ', k);
}

void term_clean_line(char *s, size_t n)
{
	term_clean(s, n);
	for (size_t i = 0; i < n; i++)
		if (s[i] == '\n' || s[i] == '\t')
			s[i] = ' ';
}

/* s[0..n) with its control characters spaces (term_clean); NULL when it
 * has none. */
static char *clean_text(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (unsafe_at(s + i, n - i)) {
			char *out = xmalloc(n + 1);

			memcpy(out, s, n);
			out[n] = '\0';
			term_clean(out + i, n - i);
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

static jv quote_paths(jv v, bool names)
{
	jv out;

	switch (jv_get_kind(v)) {
	case JV_KIND_STRING: {
		/* (one that starts with '"' is quoted already: json_path()) */
		if (!names || jv_string_value(v)[0] == '"' || !buf_path_needs_quotes(jv_string_value(v)))
			return v;
		char *q = buf_path_quoted(jv_string_value(v));

		out = jv_string(q);
		free(q);
		break;
	}
	case JV_KIND_ARRAY:
		out = jv_array();
		jv_array_foreach(v, i, x) {
			out = jv_array_append(out, quote_paths(x, names));
			(void)i;
		}
		break;
	case JV_KIND_OBJECT:
		out = jv_object();
		jv_object_foreach(v, k, x) {
			const char *key = jv_string_value(k);
			bool name = !strcmp(key, "path") || !strcmp(key, "old_path") || !strcmp(key, "file") ||
				    !strcmp(key, "files");

			out = jv_object_set(out, k, quote_paths(x, name));
		}
		break;
	default:
		return v;
	}
	jv_free(v);
	return out;
}

jv term_quote_paths(jv v)
{
	return quote_paths(v, false);
}

jv term_safe(jv v)
{
	return json_map_strings(v, safe_string, NULL);
}
