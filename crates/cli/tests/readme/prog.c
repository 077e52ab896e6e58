/* The small program the README's examples are run on (crates/cli/tests/readme.rs):
 * 60% of its CPU time in burn_a (through `recurse`), 30% in burn_b, 10% in burn_c,
 * README_PROG_SECONDS CPU-seconds in all (default 0.5); README_PROG_B_TWICE=1 makes
 * burn_b do twice the work (the README's `--base` example). Arguments are ignored.
 * Build: cc -O2 -g prog.c -o prog
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) double burn_a(double s) {
    double end = cpu_now() + s, x = 1.0;
    while (cpu_now() < end)
        for (int i = 0; i < 100000; i++) x = x * 1.0000001 + 1e-9;
    return x;
}
__attribute__((noinline)) double burn_b(double s) {
    double end = cpu_now() + s, x = 2.0;
    while (cpu_now() < end)
        for (int i = 0; i < 100000; i++) x = x * 0.9999999 + 1e-9;
    return x;
}
__attribute__((noinline)) double burn_c(double s) {
    double end = cpu_now() + s, x = 3.0;
    while (cpu_now() < end)
        for (int i = 0; i < 100000; i++) x = x * 1.0000002 - 1e-9;
    return x;
}
__attribute__((noinline)) double recurse(int n, double s) {
    if (n <= 1) return burn_a(s);
    double r = recurse(n - 1, s);
    __asm__ volatile("" ::: "memory");
    return r;
}

__attribute__((noinline)) double work(double seconds, int b_twice) {
    double total = 0, slice = 0.01;
    for (double used = 0; used < seconds; used += slice) {
        total += recurse(5, slice * 0.6);
        total += burn_b(slice * 0.3 * (b_twice ? 2 : 1));
        total += burn_c(slice * 0.1);
    }
    return total;
}

int main(void) {
    const char *s = getenv("README_PROG_SECONDS");
    const char *twice = getenv("README_PROG_B_TWICE");
    double r = work(s ? atof(s) : 0.5, twice && *twice == '1');
    printf("done %g\n", r);
    return 0;
}
