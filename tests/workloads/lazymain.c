// Opens a lazily bound library (lazylib.c) again and again, each time
// calling its `entry`, whose 1000 calls are each resolved by ld.so's
// lazy-binding trampoline: most samples of a recording are taken with
// _dl_runtime_resolve_xsavec (or _xsave, _fxsave) on the stack.
//   lazymain LIBRARY [CPU-SECONDS]
// Build: gcc -O1 -g -Wl,-z,lazy lazymain.c -o lazymain -ldl
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: lazymain LIBRARY [CPU-SECONDS]\n");
        return 2;
    }
    double seconds = argc > 2 ? atof(argv[2]) : 0.5;
    long sum = 0;
    while (cpu_seconds() < seconds) {
        void* library = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
        if (!library) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        int (*entry)(int) = (int (*)(int))dlsym(library, "entry");
        sum += entry(1);
        dlclose(library);
    }
    printf("%ld\n", sum);
    return 0;
}
