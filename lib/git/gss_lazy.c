/*
 * gss_lazy.c - the GSS-API functions a statically linked libgit2 or libcurl
 * calls for SPNEGO ("Negotiate") authentication (and libcurl for SOCKS5
 * GSS-API), loaded from the system's libgssapi_krb5 on the first call (built
 * with GIT2_STATIC=1 or CURL_STATIC=1; see the Makefile).  Kerberos and the
 * libraries it needs are thus loaded by a push to a server that asks for
 * Negotiate, not by every program.  Without the library every call says
 * GSS_S_UNAVAILABLE, and libgit2 or libcurl offers no Negotiate (as one
 * built without GSS-API would).
 *
 * The prototypes are RFC 2744's, with the opaque handle types as pointers
 * (the header is not installed with the library).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef uint32_t OM_uint32;
typedef struct gss_OID_desc_struct {
	OM_uint32 length;
	void *elements;
} gss_OID_desc, *gss_OID;

#define GSS_S_UNAVAILABLE (16u << 16)

/* 1.2.840.113554.1.2.1.4 (RFC 2744 §4): the value is what libgssapi compares */
static gss_OID_desc hostbased_service = { 10, (void *)"\x2a\x86\x48\x86\xf7\x12\x01\x02\x01\x04" };
gss_OID GSS_C_NT_HOSTBASED_SERVICE = &hostbased_service;

static void *gss_handle;

const int forge_gss_lazy = 1;   /* referenced by git.c and http.c: links this file */

static void gss_load(void)
{
	gss_handle = dlopen("libgssapi_krb5.so.2", RTLD_LAZY | RTLD_GLOBAL);
}

/* The library's `name`, or NULL when it (or the library) is missing. */
static void *gss_sym(const char *name)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, gss_load);
	return gss_handle ? dlsym(gss_handle, name) : NULL;
}

/* GSS(ret-args, name, params, args): a wrapper that forwards to the library. */
#define GSS(name, params, args)                                              \
	OM_uint32 name params;                                               \
	OM_uint32 name params                                                \
	{                                                                    \
		static OM_uint32 (*fn) params;                               \
		if (!fn)                                                     \
			*(void **)&fn = gss_sym(#name);                      \
		if (!fn) {                                                   \
			if (minor)                                           \
				*minor = 0;                                  \
			return GSS_S_UNAVAILABLE;                            \
		}                                                            \
		return fn args;                                              \
	}

GSS(gss_delete_sec_context, (OM_uint32 *minor, void **ctx, void *out_token),
    (minor, ctx, out_token))
GSS(gss_display_status, (OM_uint32 *minor, OM_uint32 status, int type, gss_OID mech,
			 OM_uint32 *msg_ctx, void *string),
    (minor, status, type, mech, msg_ctx, string))
GSS(gss_display_name, (OM_uint32 *minor, void *name, void *out_buffer, gss_OID *out_type),
    (minor, name, out_buffer, out_type))
GSS(gss_import_name, (OM_uint32 *minor, void *buffer, gss_OID type, void **name),
    (minor, buffer, type, name))
GSS(gss_indicate_mechs, (OM_uint32 *minor, void **mech_set), (minor, mech_set))
GSS(gss_init_sec_context, (OM_uint32 *minor, void *cred, void **ctx, void *target, gss_OID mech,
			   OM_uint32 req_flags, OM_uint32 time_req, void *bindings, void *in_token,
			   gss_OID *actual_mech, void *out_token, OM_uint32 *ret_flags,
			   OM_uint32 *time_rec),
    (minor, cred, ctx, target, mech, req_flags, time_req, bindings, in_token, actual_mech,
     out_token, ret_flags, time_rec))
GSS(gss_inquire_context, (OM_uint32 *minor, void *ctx, void **src_name, void **targ_name,
			  OM_uint32 *lifetime, gss_OID *mech, OM_uint32 *flags, int *local, int *open),
    (minor, ctx, src_name, targ_name, lifetime, mech, flags, local, open))
GSS(gss_release_buffer, (OM_uint32 *minor, void *buffer), (minor, buffer))
GSS(gss_release_name, (OM_uint32 *minor, void **name), (minor, name))
GSS(gss_release_oid_set, (OM_uint32 *minor, void **set), (minor, set))
GSS(gss_unwrap, (OM_uint32 *minor, void *ctx, void *in_buffer, void *out_buffer, int *conf_state,
		 OM_uint32 *qop_state),
    (minor, ctx, in_buffer, out_buffer, conf_state, qop_state))
GSS(gss_wrap, (OM_uint32 *minor, void *ctx, int conf_req, OM_uint32 qop_req, void *in_buffer,
	       int *conf_state, void *out_buffer),
    (minor, ctx, conf_req, qop_req, in_buffer, conf_state, out_buffer))
