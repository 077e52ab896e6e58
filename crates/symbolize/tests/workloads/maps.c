/* Loads plugin.so with dlopen, calls it, then prints what a profiler
 * would record: its /proc/self/maps and, for a few code addresses, the
 * address and what dladdr(3) says (the file and its load base), so that
 * tests can symbolize the addresses from a profile-like mapping list and
 * check against addr2line at runtime address minus load base.
 *   maps PLUGIN.so OUT.maps
 * Output lines: ADDR FILE BASE NAME */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile double main_sink;

__attribute__((noinline)) double main_work(int n) {
    double x = 2.0;
    for (int i = 0; i < n; i++) x = x * 0.9999999 + 1e-9;
    main_sink = x;
    return x;
}

static void report(const char* name, void* address) {
    Dl_info info;
    if (!dladdr(address, &info)) {
        fprintf(stderr, "dladdr failed for %s\n", name);
        exit(1);
    }
    printf("%lx %s %lx %s\n", (unsigned long)address, info.dli_fname,
           (unsigned long)info.dli_fbase, name);
}

int main(int argc, char** argv) {
    if (argc != 3) return 2;
    void* handle = dlopen(argv[1], RTLD_NOW);
    if (!handle) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    double (*plugin_work)(int) = (double (*)(int))dlsym(handle, "plugin_work");
    plugin_work(1000);
    main_work(1000);
    /* Addresses inside the functions, as a sampled PC would be. */
    report("main_work", (char*)main_work + 4);
    report("plugin_work", (char*)plugin_work + 8);
    report("main", (char*)main + 2);
    report("qsort", (char*)dlsym(RTLD_DEFAULT, "qsort") + 6);
    FILE* in = fopen("/proc/self/maps", "r");
    FILE* out = fopen(argv[2], "w");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
    return 0;
}
