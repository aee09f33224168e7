/*
 * cli_help.c - the shared command line's words: --help, the manual page,
 * the completion words, usage errors, finishing stdout, where the programs
 * are, which arguments are common options (cli_common_option); see cli.h.
 * Apart from cli.c (parsing, sessions) so that a program that only prints
 * help or dispatches (forge) links none of the library behind sessions:
 * the `forge` dispatcher needs only libc.
 */
#include "app/cli.h"
#include "app/cli_tables.h"
#include "core/forge.h"

#include <errno.h>
#include <poll.h>
#include <limits.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const struct cli_option cli_common_options[] = {
	{ "help", 'h', NULL, "show this help and exit", 'h' },
	{ "version", 0, NULL, "show the version and exit", OPT_VERSION },
	{ "repo", 0, "DIR", "the repository (default: the one containing the current directory)", OPT_REPO },
	{ "db", 0, "PATH", "the database (default: $FORGE_DB, else <repo>/.forge/forge.db)", OPT_DB },
	{ "config", 0, "PATH", "a config file layered over .forge/config.json", OPT_CONFIG },
	{ "quiet", 'q', NULL, "print less on stderr", 'q' },
	{ "verbose", 'v', NULL, "print more on stderr (repeatable)", 'v' },
	{ NULL, 0, NULL, NULL, 0 }
};

const struct cli_option cli_model_options[] = {
	{ "provider", 0, "P", "anthropic, openai or replay ($FORGE_PROVIDER)", OPT_PROVIDER },
	{ "model", 0, "M", "the model ($FORGE_MODEL)", OPT_MODEL },
	{ "base-url", 0, "URL", "the provider's base URL ($FORGE_BASE_URL)", OPT_BASE_URL },
	{ "cassette", 0, "FILE", "answers to replay with the replay provider ($FORGE_CASSETTE)", OPT_CASSETTE },
	{ NULL, 0, NULL, NULL, 0 }
};

/* Not in --help: what the manual pages and shell completions are made from. */
const struct cli_option cli_hidden_options[] = {
	{ "help-man", 0, NULL, "the help as a man(7) page", OPT_HELP_MAN },
	{ "help-words", 0, NULL, "the words shell completion offers", OPT_HELP_WORDS },
	{ NULL, 0, NULL, NULL, 0 }
};

/* cli_common_option for the long option argv[i], from table tab. */
static int long_option_in(const struct cli_option *tab, int argc, char **argv, int i)
{
	const char *a = argv[i] + 2;

	for (const struct cli_option *o = tab; o->name; o++) {
		size_t n = strlen(o->name);

		if (strncmp(a, o->name, n) != 0 || (a[n] && a[n] != '='))
			continue;
		if (o->id == 'h' || o->id == OPT_VERSION)
			return 0;
		if (!o->arg)
			return a[n] ? 0 : 1;    /* (--quiet=X: not one) */
		if (a[n] == '=')
			return 1;
		return i + 1 < argc ? 2 : -1;
	}
	return 0;
}

int cli_common_option(int argc, char **argv, int i)
{
	const char *a = argv[i];
	int n;

	if (a[0] != '-' || !a[1])
		return 0;
	if (a[1] != '-')       /* -q, -v, -vv, -qv */
		return strspn(a + 1, "qv") == strlen(a + 1) ? 1 : 0;
	n = long_option_in(cli_common_options, argc, argv, i);
	return n ? n : long_option_in(cli_model_options, argc, argv, i);
}

const char *cli_common_long_name(const char *arg, char *cands, size_t size)
{
	const struct cli_option *tabs[] = { cli_common_options, cli_model_options };
	const char *name = arg + 2, *hit = NULL;
	size_t len = strcspn(name, "="), used = 0;
	int n = 0;

	if (size)
		cands[0] = '\0';
	if (strncmp(arg, "--", 2) != 0 || !len)
		return NULL;
	for (size_t t = 0; t < sizeof tabs / sizeof tabs[0]; t++)
		for (const struct cli_option *o = tabs[t]; o->name; o++) {
			if (strncmp(o->name, name, len) != 0)
				continue;
			if (!o->name[len])
				return o->name;         /* the whole name */
			hit = o->name;
			n++;
			if (used < size) {
				int w = snprintf(cands + used, size - used, "%s--%s", n > 1 ? ", " : "", o->name);

				used += w > 0 ? (size_t)w : 0;
			}
		}
	if (n == 1) {
		if (size)
			cands[0] = '\0';
		return hit;
	}
	if (n == 0 && size)
		cands[0] = '\0';
	return NULL;
}

size_t cli_count_options(const struct cli_option *o)
{
	size_t n = 0;

	while (o && o[n].name)
		n++;
	return n;
}

/* ---- --help, wrapped ------------------------------------------------------- */

/* The widest line --help prints: an 80-column terminal shows it whole. */
#define HELP_WIDTH 80

/* The columns s[0..n) takes: its characters (UTF-8: "…" is one). */
static size_t columns(const char *s, size_t n)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xC0) != 0x80;
	return c;
}

/*
 * The words of s[0..n) on f from column col on, wrapped at HELP_WIDTH with
 * each further line indented by hang; no newline after the last.  Spaces
 * between words on one line are kept ("end.  Next"); a line break becomes
 * one space, two after a '.' (before anything but a lower-case letter); a
 * number stays on the line of the word after it.  With units, a space inside
 * [ ] does not break ("[--jobs N]" stays whole: a synopsis).  A word wider
 * than the room stays whole.
 */
static void wrap_words(FILE *f, const char *s, size_t n, size_t col, size_t hang, bool units)
{
	const char *end = s + n, *p = s + strspn(s, " \n");
	bool first = true;

	if (p > end)
		p = end;
	while (p < end) {
		const char *w = p;
		int depth = 0;

		for (;;) {
			while (p < end && (depth > 0 || (*p != ' ' && *p != '\n'))) {
				if (units && *p == '[')
					depth++;
				else if (units && *p == ']' && depth > 0)
					depth--;
				p++;
			}
			/* a number stays with the word after it ("5 git") */
			const char *tok = p;

			while (tok > w && tok[-1] != ' ')
				tok--;
			if (tok == p || strspn(tok, "0123456789") != (size_t)(p - tok) ||
			    p + 1 >= end || p[0] != ' ' || p[1] == ' ' || p[1] == '\n')
				break;
			p++;
		}
		size_t len = (size_t)(p - w), wide = columns(w, len), sep = 0;

		if (!first) {
			const char *gap = w;
			bool broken = false;

			while (gap > s && (gap[-1] == ' ' || gap[-1] == '\n')) {
				broken |= gap[-1] == '\n';
				gap--;
			}
			if (!broken)
				sep = (size_t)(w - gap);
			else
				sep = gap > s && gap[-1] == '.' && !(*w >= 'a' && *w <= 'z') ? 2 : 1;
		}
		if (!first && col + sep + wide > HELP_WIDTH) {
			fprintf(f, "\n%*s", (int)hang, "");
			col = hang;
		} else {
			fprintf(f, "%*s", (int)sep, "");
			col += sep;
		}
		fwrite(w, 1, len, f);
		col += wide;
		first = false;
		p += strspn(p, " \n");
		if (p > end)
			p = end;
	}
}

/* The column where an indented line's description starts: after its first
 * word and two spaces or more ("  store   persist …": 10); 0 when none. */
static size_t hanging_column(const char *line, size_t n)
{
	size_t i = strspn(line, " ");

	i += strcspn(line + i, " ");
	if (i + 1 < n && line[i] == ' ' && line[i + 1] == ' ') {
		size_t k = i + strspn(line + i, " ");

		if (k < n)
			return k;
	}
	return 0;
}

/* cli.h */
void cli_help_text(const char *text, void *fp)
{
	FILE *f = fp;

	if (!text)
		return;
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n"), lead = strspn(p, " "), widest = columns(p, n);
		const char *end = p + n + (p[n] == '\n');
		size_t first = 0, hang = 0;

		if (lead >= n) {
			fputc('\n', f);
			p = end;
			continue;
		}
		if (!lead) {
			/* (a line ending a sentence ends it: "Exit: …" after it
			 * stays at the start of a line) */
			while (*end && *end != '\n' && *end != ' ' && p[n - 1] != '.' && end[-2] != '.') {
				size_t m = strcspn(end, "\n");

				widest = columns(end, m) > widest ? columns(end, m) : widest;
				end += m + (end[m] == '\n');
			}
		} else if ((hang = hanging_column(p, n)) > 0) {
			first = hang;
			while (*end) {
				size_t m = strcspn(end, "\n");

				if (m <= hang || strspn(end, " ") != hang)
					break;
				widest = columns(end, m) > widest ? columns(end, m) : widest;
				end += m + (end[m] == '\n');
			}
		} else {
			first = lead;
			hang = lead + 2;
		}
		if (widest <= HELP_WIDTH) {
			fwrite(p, 1, (size_t)(end - p), f);
			if (end[-1] != '\n')
				fputc('\n', f);
		} else {
			fwrite(p, 1, first, f);
			wrap_words(f, p + first, (size_t)(end - p) - first, first, hang, false);
			fputc('\n', f);
		}
		p = end;
	}
}

static void print_options(FILE *f, const char *title, const struct cli_option *o)
{
	if (!cli_count_options(o))
		return;
	fprintf(f, "\n%s:\n", title);
	for (; o->name; o++) {
		char left[64];
		int col;

		if (o->short_name)
			snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(left, sizeof left, "    --%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		col = fprintf(f, "  %-24s ", left);
		/* a description too long for the line goes on under its column */
		wrap_words(f, o->help, strlen(o->help), col > 0 ? (size_t)col : 0, 27, false);
		fputc('\n', f);
	}
}

/* True when text has a line of its own about the exit status ("Exit status:",
 * "Exit:"): the program's own replaces the generic one. */
static bool has_exit_status(const char *text)
{
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, "Exit status", 11) || !strncmp(p, "Exit:", 5))
			return true;
	return false;
}

void cli_usage(const struct cli_spec *spec, void *fp)
{
	FILE *f = fp;
	const char *line = spec->synopsis;
	bool first = true;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		int col = fprintf(f, "%s %s ", first ? "usage:" : "      ", spec->name);

		/* a long synopsis goes on indented under its first operand */
		wrap_words(f, line, n, col > 0 ? (size_t)col : 0, col > 0 ? (size_t)col + 2 : 2, true);
		fputc('\n', f);
		first = false;
		line += n + (nl ? 1 : 0);
	}
	if (spec->description) {
		fputc('\n', f);
		cli_help_text(spec->description, f);
	}
	print_options(f, "Options", spec->options);
	if (spec->flags & CLI_MODEL_OPTIONS)
		print_options(f, "Model options", cli_model_options);
	else if (spec->flags & CLI_MODEL_OPTIONS_UNUSED) {
		char title[160];

		snprintf(title, sizeof title, "Model options (accepted and ignored: %s calls no model)",
			 spec->name);
		print_options(f, title, cli_model_options);
	}
	print_options(f, "Common options", cli_common_options);
	/* (a text without its last newline ended the help mid-line: before,
	 * forge-merge's, forge-diff's, … with the shell's prompt after it) */
	if (spec->extra_help && *spec->extra_help) {
		fputc('\n', f);
		cli_help_text(spec->extra_help, f);
	}
	if (!has_exit_status(spec->extra_help)) {
		fputc('\n', f);
		cli_help_text("Exit status: 0 ok, 1 rejected or skipped, 2 usage or bad input,\n"
			      "3 breaker tripped, 4 human needed, 5 dependency failed, 130 interrupted.\n", f);
	}
}

/* ---- the manual page and completion words --------------------------------- */

/* Text for roff: backslashes, minus signs, a leading '.' or '\'', and every
 * character outside ASCII as \[uXXXX] (groff reads its input as Latin-1
 * unless preconv runs: man does, groff alone does not). */
static void roff_text(FILE *f, const char *s, size_t n)
{
	if (n && (s[0] == '.' || s[0] == '\''))
		fputs("\\&", f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\') {
			fputs("\\e", f);
		} else if (c == '-') {
			fputs("\\-", f);
		} else if (c < 0x80) {
			fputc(c, f);
		} else {
			unsigned cp = 0;
			int more = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;

			bool ok = more > 0 && i + (size_t)more < n;

			for (int k = 1; ok && k <= more; k++)
				ok = ((unsigned char)s[i + (size_t)k] & 0xC0) == 0x80;
			if (!ok) {
				fputc('?', f);	/* not UTF-8: one byte */
				continue;
			}
			cp = c & (0x3F >> more);
			for (int k = 0; k < more; k++)
				cp = (cp << 6) | ((unsigned char)s[++i] & 0x3F);
			fprintf(f, "\\[u%04X]", cp);
		}
	}
}

static void roff_str(FILE *f, const char *s)
{
	roff_text(f, s, strlen(s));
}

/* The page name: spec->name with spaces as '-' ("forge run" → "forge-run"). */
static void page_name(char *out, size_t len, const char *name, bool upper)
{
	size_t i = 0;

	for (; name[i] && i + 1 < len; i++) {
		char c = name[i] == ' ' ? '-' : name[i];

		out[i] = upper && c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
	}
	out[i] = '\0';
}

/* The description's first clause (up to ". ", ": " or "; "), lines joined,
 * at most ~100 characters cut at a space. */
static void summary(char *out, size_t len, const char *desc)
{
	size_t k = 0;

	for (const char *p = desc; *p && k + 1 < len; p++) {
		if ((*p == '.' || *p == ':' || *p == ';') && (p[1] == ' ' || p[1] == '\n' || !p[1]))
			break;
		out[k++] = *p == '\n' ? ' ' : *p;
	}
	out[k] = '\0';
	if (k > 100) {
		out[100] = '\0';
		char *sp = strrchr(out, ' ');
		if (sp)
			*sp = '\0';
	}
	for (k = strlen(out); k && strchr(",;: ", out[k - 1]); k--)
		out[k - 1] = '\0';
}

static void man_options(FILE *f, const char *title, const struct cli_option *o)
{
	if (!cli_count_options(o))
		return;
	fprintf(f, ".SH %s\n", title);
	for (; o->name; o++) {
		fputs(".TP\n", f);
		if (o->short_name)
			fprintf(f, "\\fB\\-%c\\fR, ", o->short_name);
		fputs("\\fB\\-\\-", f);
		roff_str(f, o->name);
		fputs("\\fR", f);
		if (o->arg) {
			fputs(" \\fI", f);
			roff_str(f, o->arg);
			fputs("\\fR", f);
		}
		fputc('\n', f);
		roff_str(f, o->help);
		fputc('\n', f);
	}
}

/*
 * Free text (a description, extra_help) as roff: blank lines are paragraph
 * breaks, indented lines are kept as they are, an unindented line ending in
 * ':' is a subsection, "Exit status…" starts EXIT STATUS.  Sets *exit_seen.
 */
static void man_text(FILE *f, const char *text, bool *exit_seen)
{
	bool literal = false;

	for (const char *p = text; p && *p;) {
		size_t n = strcspn(p, "\n");
		bool indented = n && (p[0] == ' ' || p[0] == '\t');
		bool blank = strspn(p, " \t") >= n;

		if (literal && !indented) {
			fputs(".fi\n.RE\n", f);
			literal = false;
		}
		if (blank) {
			fputs(".PP\n", f);
		} else if (indented) {
			if (!literal)
				fputs(".RS 2\n.nf\n", f);
			literal = true;
			size_t lead = strspn(p, " \t");
			/* keep the indentation beyond the first two columns */
			for (size_t i = 2; i < lead; i++)
				fputs("\\ ", f);
			roff_text(f, p + lead, n - lead);
			fputc('\n', f);
		} else if (!strncmp(p, "Exit status", 11) || !strncmp(p, "Exit:", 5)) {
			const char *rest = memchr(p, ':', n);

			*exit_seen = true;
			fputs(".SH EXIT STATUS\n", f);
			if (rest && (size_t)(rest - p) + 1 < n) {
				rest += 1 + strspn(rest + 1, " ");
				roff_text(f, rest, n - (size_t)(rest - p));
				fputc('\n', f);
			}
		} else if (p[n - 1] == ':' && n < 80) {
			fputs(".SS \"", f);
			roff_text(f, p, n - 1);
			fputs("\"\n", f);
		} else {
			roff_text(f, p, n);
			fputc('\n', f);
		}
		p += n + (p[n] == '\n');
	}
	if (literal)
		fputs(".fi\n.RE\n", f);
}

void cli_man(const struct cli_spec *spec, void *fp)
{
	FILE *f = fp;
	char name[128], title[128], sum[160];
	bool exit_seen = false;

	page_name(name, sizeof name, spec->name, false);
	page_name(title, sizeof title, spec->name, true);
	summary(sum, sizeof sum, spec->description ? spec->description : spec->name);
	fprintf(f, ".\\\" %s(1) - made by `%s --help-man` from its --help; do not edit\n", name, spec->name);
	fprintf(f, ".TH %s 1 \"\" \"forge %s\" \"Forge Manual\"\n.SH NAME\n", title, FORGE_VERSION);
	roff_str(f, name);
	fputs(" \\- ", f);
	roff_str(f, sum);
	fputs("\n.SH SYNOPSIS\n.nf\n", f);
	for (const char *line = spec->synopsis; line && *line;) {
		size_t n = strcspn(line, "\n");

		fputs("\\fB", f);
		roff_str(f, spec->name);
		fputs("\\fR ", f);
		roff_text(f, line, n);
		fputc('\n', f);
		line += n + (line[n] == '\n');
	}
	fputs(".fi\n", f);
	if (spec->description) {
		fputs(".SH DESCRIPTION\n", f);
		man_text(f, spec->description, &exit_seen);
	}
	man_options(f, "OPTIONS", spec->options);
	if (spec->flags & (CLI_MODEL_OPTIONS | CLI_MODEL_OPTIONS_UNUSED))
		man_options(f, spec->flags & CLI_MODEL_OPTIONS ? "MODEL OPTIONS"
			    : "MODEL OPTIONS (ACCEPTED AND IGNORED)", cli_model_options);
	man_options(f, "COMMON OPTIONS", cli_common_options);
	if (spec->extra_help) {
		fputs(".SH NOTES\n", f);
		man_text(f, spec->extra_help, &exit_seen);
	}
	if (!exit_seen)
		fputs(".SH EXIT STATUS\n0 ok, 1 rejected or skipped, 2 usage or bad input, 3 breaker tripped,\n"
		      "4 human needed, 5 dependency failed, 130 interrupted.\n", f);
	fprintf(f, ".SH SEE ALSO\n%s\n", strcmp(name, "forge") ? "\\fBforge\\fR(1)" : "\\fBforge\\-run\\fR(1)");
}

/* Whether a synopsis token is an operand name: upper case, maybe in [ ]. */
static bool operand_token(const char *t, size_t n, const char **name, size_t *len)
{
	while (n && (*t == '[' || *t == '(')) {
		t++;
		n--;
	}
	size_t k = 0;

	while (k < n && ((t[k] >= 'A' && t[k] <= 'Z') || t[k] == '_' || (k && t[k] >= '0' && t[k] <= '9')))
		k++;
	*name = t;
	*len = k;
	return k > 0 && t[0] >= 'A' && t[0] <= 'Z';
}

static void words_options(FILE *f, const struct cli_option *o)
{
	for (; o && o->name; o++) {
		fprintf(f, "option\t--%s\t%s\n", o->name, o->arg ? o->arg : "");
		if (o->short_name)
			fprintf(f, "option\t-%c\t%s\n", o->short_name, o->arg ? o->arg : "");
	}
}

void cli_words(const struct cli_spec *spec, void *fp)
{
	FILE *f = fp;

	for (const char *line = spec->synopsis; line && *line;) {
		size_t n = strcspn(line, "\n"), w = strcspn(line, " \n");
		const char *op = NULL;
		size_t oplen = 0;

		if (w && line[0] >= 'a' && line[0] <= 'z' && strspn(line, "abcdefghijklmnopqrstuvwxyz0123456789-_") == w) {
			/* the first operand after the subcommand; an option's
			 * argument ("[--type T]", "-n N") is not one */
			bool arg_next = false;

			for (const char *t = line + w; t < line + n;) {
				t += strspn(t, " ");
				size_t tl = strcspn(t, " \n");
				const char *bare = t + strspn(t, "[(");
				bool option = bare < t + tl && *bare == '-';

				if (tl && !option && !arg_next && operand_token(t, tl, &op, &oplen))
					break;
				op = NULL;
				oplen = 0;
				arg_next = option && !memchr(t, ']', tl) && !memchr(t, ')', tl);
				t += tl;
			}
			fprintf(f, "command\t%.*s\t%.*s\n", (int)w, line, (int)oplen, op ? op : "");
		} else if (w && operand_token(line, w, &op, &oplen)) {
			fprintf(f, "operand\t%.*s\n", (int)oplen, op);
		}
		line += n + (line[n] == '\n');
	}
	words_options(f, spec->options);
	if (spec->flags & (CLI_MODEL_OPTIONS | CLI_MODEL_OPTIONS_UNUSED))
		words_options(f, cli_model_options);
	words_options(f, cli_common_options);
}

void cli_usage_error(const struct cli_spec *spec, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", spec->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", spec->name);
	exit(FORGE_EXIT_USAGE);
}

/* Whether standard output is a pipe whose reader has gone (poll(2) says
 * POLLERR for a pipe without readers): after a write that failed earlier,
 * errno no longer says EPIPE. */
static bool reader_gone(void)
{
	struct pollfd p = { .fd = STDOUT_FILENO, .events = POLLOUT };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

void cli_catch_interrupts(void (*on_signal)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int cli_finish(const char *name, int status)
{
	int e = 0;

	errno = 0;
	if (fflush(stdout) == EOF)
		e = errno ? errno : EIO;
	else if (ferror(stdout))
		e = -1;		/* an earlier write failed: its errno is gone */
	else if (fclose(stdout) == EOF)
		e = errno ? errno : EIO;
	if (e == 0)
		return status;
	if (status == FORGE_EXIT_PIPE || e == EPIPE || reader_gone())
		return FORGE_EXIT_PIPE;		/* nothing is printed for it */
	if (e < 0 && status == FORGE_EXIT_DEPENDENCY)
		return status;			/* said where the write failed */
	if (e < 0)
		fprintf(stderr, "%s: cannot write to standard output\n", name);
	else
		fprintf(stderr, "%s: cannot write to standard output: %s\n", name, strerror(e));
	return FORGE_EXIT_DEPENDENCY;
}

char *cli_self_dir(void)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
	char *slash;

	if (n <= 0)
		return NULL;
	path[n] = '\0';
	slash = strrchr(path, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	return xstrdup(path);
}
