/* curl_lazy.c - libcurl loaded on first use (core/lazylib.h): the
 * functions Forge calls, each looking up the real one on its first call.
 * libcurl (with OpenSSL, nghttp2, libssh2, LDAP, RTMP, GnuTLS, Kerberos:
 * ~30 libraries) is then loaded by the first HTTP request, not at every
 * program's start.  curl_easy_setopt() and curl_easy_getinfo() pass their
 * one variadic argument on by its type, as libcurl reads it. */
#define CURL_DISABLE_TYPECHECK 1
#include "core/lazylib.h"

#include <curl/curl.h>
#include <stdarg.h>

#ifndef FORGE_CURL_SONAME
#define FORGE_CURL_SONAME "libcurl.so.4"
#endif

static struct lazylib curl = LAZYLIB_INIT(FORGE_CURL_SONAME);

#define LAZY(name) \
	static __typeof__(name) *p_##name; \
	if (!p_##name) \
		*(void **)&p_##name = lazylib_sym(&curl, #name);

CURLcode curl_global_init(long flags)
{
	LAZY(curl_global_init)
	return p_curl_global_init(flags);
}

CURL *curl_easy_init(void)
{
	LAZY(curl_easy_init)
	return p_curl_easy_init();
}

void curl_easy_cleanup(CURL *handle)
{
	LAZY(curl_easy_cleanup)
	p_curl_easy_cleanup(handle);
}

void curl_easy_reset(CURL *handle)
{
	LAZY(curl_easy_reset)
	p_curl_easy_reset(handle);
}

CURLcode curl_easy_perform(CURL *handle)
{
	LAZY(curl_easy_perform)
	return p_curl_easy_perform(handle);
}

const char *curl_easy_strerror(CURLcode code)
{
	LAZY(curl_easy_strerror)
	return p_curl_easy_strerror(code);
}

time_t curl_getdate(const char *p, const time_t *unused)
{
	LAZY(curl_getdate)
	return p_curl_getdate(p, unused);
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *data)
{
	LAZY(curl_slist_append)
	return p_curl_slist_append(list, data);
}

void curl_slist_free_all(struct curl_slist *list)
{
	LAZY(curl_slist_free_all)
	p_curl_slist_free_all(list);
}

curl_version_info_data *curl_version_info(CURLversion age)
{
	LAZY(curl_version_info)
	return p_curl_version_info(age);
}

CURLcode curl_easy_setopt(CURL *handle, CURLoption option, ...)
{
	LAZY(curl_easy_setopt)
	va_list ap;
	CURLcode rc;

	va_start(ap, option);
	if (option < CURLOPTTYPE_OBJECTPOINT) {
		long v = va_arg(ap, long);
		rc = p_curl_easy_setopt(handle, option, v);
	} else if (option >= CURLOPTTYPE_OFF_T && option < CURLOPTTYPE_BLOB) {
		curl_off_t v = va_arg(ap, curl_off_t);
		rc = p_curl_easy_setopt(handle, option, v);
	} else {
		/* object, function (passed as a pointer: POSIX) and blob pointers */
		void *v = va_arg(ap, void *);
		rc = p_curl_easy_setopt(handle, option, v);
	}
	va_end(ap);
	return rc;
}

CURLcode curl_easy_getinfo(CURL *handle, CURLINFO info, ...)
{
	LAZY(curl_easy_getinfo)
	va_list ap;
	void *out;

	va_start(ap, info);
	out = va_arg(ap, void *);
	va_end(ap);
	return p_curl_easy_getinfo(handle, info, out);
}
