/* lazylib.c - a shared library loaded on first use (see lazylib.h). */
#include "core/lazylib.h"
#include "core/forge.h"

#include <dlfcn.h>
#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void *lazylib_sym(struct lazylib *lib, const char *name)
{
	void *handle, *sym;

	pthread_mutex_lock(&lock);
	if (!lib->handle)
		lib->handle = dlopen(lib->soname, RTLD_NOW | RTLD_GLOBAL);
	handle = lib->handle;
	pthread_mutex_unlock(&lock);
	if (!handle)
		forge_fatal("cannot load %s: %s", lib->soname, dlerror());
	sym = dlsym(handle, name);
	if (!sym)
		forge_fatal("%s has no %s: %s", lib->soname, name, dlerror());
	return sym;
}

int lazylib_loaded(const struct lazylib *lib)
{
	return lib->handle != NULL;
}
