/* test_term.c - the width and cleaning of what Forge shows on a terminal
 * (app/term.h): display columns, cutting to a width, control characters. */
#include "app/term.h"
#include "core/buf.h"
#include "core/json.h"
#include "unit.h"

#include <locale.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

static size_t cols(const char *s)
{
	return term_columns(s, strlen(s));
}

static void test_columns(void)
{
	CHECK_INT((int)cols("plain.txt"), 9);
	CHECK_INT((int)cols("café"), 4);                 /* é: 2 bytes, 1 column */
	CHECK_INT((int)cols("cafe\xcc\x81"), 4);         /* e + combining acute: 0 */
	CHECK_INT((int)cols("説明書.md"), 9);            /* wide: 2 columns each */
	CHECK_INT((int)cols("한글"), 4);
	CHECK_INT((int)cols("ok \xf0\x9f\x9a\x80"), 5);  /* an emoji: 2 */
	CHECK_INT((int)cols("\xff" "a"), 2);             /* a stray byte: 1 */
	CHECK_INT((int)cols("⠋ · …"), 5);
}

/* c as UTF-8 in out (5 bytes). */
static void utf8(char *out, uint32_t c)
{
	unsigned char *o = (unsigned char *)out;

	if (c < 0x800) {
		*o++ = (unsigned char)(0xC0 | c >> 6);
	} else if (c < 0x10000) {
		*o++ = (unsigned char)(0xE0 | c >> 12);
		*o++ = (unsigned char)(0x80 | (c >> 6 & 0x3F));
	} else {
		*o++ = (unsigned char)(0xF0 | c >> 18);
		*o++ = (unsigned char)(0x80 | (c >> 12 & 0x3F));
		*o++ = (unsigned char)(0x80 | (c >> 6 & 0x3F));
	}
	*o++ = (unsigned char)(0x80 | (c & 0x3F));
	*o = '\0';
}

/* What curses draws 2 wide (wcwidth) is counted 2: else a row cut at the
 * screen's edge spills onto the next (hunt44: hexagrams, ♿, ⚓, ❎). */
static void test_columns_as_wcwidth(void)
{
	char s[8];

	CHECK_INT((int)cols("䷀♿⚓❎"), 8);
	CHECK_INT((int)cols("\xe3\x80\xae"), 2);        /* U+302E, a Hangul tone mark W */
	if (!setlocale(LC_CTYPE, "C.UTF-8"))
		return;
	for (uint32_t c = 0x300; c < 0x40000; c++) {
		if (c >= 0xD800 && c <= 0xDFFF)
			continue;
		utf8(s, c);
		if (wcwidth((wchar_t)c) == 2 && cols(s) != 2)
			CHECK_INT((int)c, -1);   /* names the code point */
	}
	setlocale(LC_CTYPE, "C");
}

static void test_cut(void)
{
	const char *cjk = "模型正在思考";           /* 6 characters, 12 columns */

	CHECK_INT((int)term_cut(cjk, strlen(cjk), 12), 18);
	CHECK_INT((int)term_cut(cjk, strlen(cjk), 11), 15);   /* a wide character is not split */
	CHECK_INT((int)term_cut(cjk, strlen(cjk), 1), 0);
	CHECK_INT((int)term_cut("abc", 3, 2), 2);
	CHECK_INT((int)term_cut("abc", 3, 10), 3);
	/* a combining mark stays with its letter */
	CHECK_INT((int)term_cut("e\xcc\x81x", 4, 1), 3);
	CHECK_INT((int)term_cut("é", 2, 0), 0);
}

static void test_clean(void)
{
	char s[] = "a\033]0;T\a \xc2\x9b" "2J\tb\nc\x7f é 説";

	term_clean_line(s, strlen(s));
	CHECK_STR(s, "a ]0;T    2J b c  é 説");
	char t[] = "x\ty\nz\xc2\x85";
	term_clean(t, strlen(t));
	CHECK_STR(t, "x\ty\nz  ");
	/* a C2 of no C1 (é's lead byte alone at the end; a C2 A0) is kept */
	char u[] = "\xc2\xa0\033\xc2";
	term_clean(u, strlen(u));
	CHECK_STR(u, "\xc2\xa0 \xc2");
	char w[] = "\xc2\x9b";
	term_clean(w, 1);           /* (its C1 byte is past n: a C2 alone) */
	CHECK_STR(w, "\xc2\x9b");
	jv safe = term_safe(json_set(jv_object(), "t\033", jv_string("a\033[2Jb\xc2\x9b\n")));
	char *dumped = json_dumps(safe, false);
	CHECK_STR(dumped, "{\"t \":\"a [2Jb  \\n\"}");
	free(dumped);
}

/* What a terminal is shown of a file whole (forge diff): the control
 * characters visible as less shows them, the rest as it is. */
static void test_visible(void)
{
	static const char text[] = "a\033]0;T\a b\033[2J\rc\x7f\tx\ny\xc2\x9b é\xc2\xa0 \0z";
	struct buf b = BUF_INIT;

	CHECK(buf_add_visible(&b, text, sizeof text - 1) == 0);
	CHECK_STR(b.buf, "a^[]0;T^G b^[[2J^Mc^?\tx\ny<U+009B> é\xc2\xa0 ^@z");
	buf_truncate(&b, 0);
	CHECK(buf_add_visible(&b, "plain\xc2", 6) == 0);   /* a C2 cut short: a byte as it is */
	CHECK_STR(b.buf, "plain\xc2");
	CHECK_INT((int)buf_control_at("\xc2\x85", 2), 2);
	CHECK_INT((int)buf_control_at("\xc2\x85", 1), 0);
	CHECK_INT((int)buf_control_at("\n", 1), 1);
	CHECK_INT((int)buf_control_at("a", 0), 0);
	buf_release(&b);
}

/* File names quoted once, as git quotes them: a name json_path() quoted
 * (not UTF-8) as it is (before: quoted again, "\"caf\\351.txt\""). */
static void test_quote_paths(void)
{
	const char *text = "{\"files\":[\"a\\nb\",\"plain.c\",\"\\\"caf\\\\351.txt\\\"\"],"
			       "\"x\":{\"path\":\"\\\"caf\\\\351.txt\\\"\"},\"title\":\"a\\nb\"}";
	jv v = json_parse(text, strlen(text));

	CHECK(jv_is_valid(v));
	v = term_quote_paths(v);
	char *out = json_dumps(v, true);
	CHECK_STR(out, "{\"files\":[\"\\\"a\\\\nb\\\"\",\"plain.c\",\"\\\"caf\\\\351.txt\\\"\"],"
		       "\"title\":\"a\\nb\",\"x\":{\"path\":\"\\\"caf\\\\351.txt\\\"\"}}");
	free(out);
}

int main(void)
{
	RUN(test_columns);
	RUN(test_columns_as_wcwidth);
	RUN(test_cut);
	RUN(test_clean);
	RUN(test_visible);
	RUN(test_quote_paths);
	return unit_done();
}
