/* dlopen/dlclose churn: ARGV[1] rounds; each opens one of the libraries
 * ARGV[2..] (in turn, so they land at different addresses), runs its
 * dl_work for a fixed amount of work while the profiler samples it, and
 * closes it. A second thread does the same on the other libraries at the
 * same time. Prints a checksum that does not depend on profiling. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long rounds;
static int libraries;
static char **paths;

struct churn { int first; uint64_t sum; int failed; };

static void *churn(void *arg) {
    struct churn *c = arg;
    for (long round = 0; round < rounds; round++) {
        const char *path = paths[(c->first + round) % libraries];
        void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!handle) { fprintf(stderr, "dlopen %s: %s\n", path, dlerror()); c->failed = 1; return NULL; }
        uint64_t (*work)(uint64_t, long) = (uint64_t (*)(uint64_t, long))dlsym(handle, "dl_work");
        if (!work) { fprintf(stderr, "dlsym: %s\n", dlerror()); c->failed = 1; return NULL; }
        c->sum ^= work((uint64_t)round * 2 + (uint64_t)c->first, 2000000);
        dlclose(handle);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s ROUNDS LIB...\n", argv[0]); return 2; }
    rounds = atol(argv[1]);
    paths = argv + 2;
    libraries = argc - 2;
    struct churn a = {0, 0, 0}, b = {1, 0, 0};
    pthread_t thread;
    pthread_create(&thread, NULL, churn, &b);
    churn(&a);
    pthread_join(thread, NULL);
    if (a.failed || b.failed) return 1;
    printf("dlopen churn: %ld rounds x 2 threads, checksum %016llx %016llx\n", rounds,
           (unsigned long long)a.sum, (unsigned long long)b.sum);
    return 0;
}
