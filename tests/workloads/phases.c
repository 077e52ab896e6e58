/* Two phases: fnA burns the first SECONDS (argument, default 1) of
   wall-clock time, fnB the next: the timeline and --time tests' workload. */
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

volatile unsigned long sink;

__attribute__((noinline)) void fnA(double seconds) {
    double end = now() + seconds;
    unsigned long x = 1;
    while (now() < end)
        for (int i = 0; i < 20000; i++) x = x * 6364136223846793005UL + 1;
    sink = x;
}

__attribute__((noinline)) void fnB(double seconds) {
    double end = now() + seconds;
    unsigned long x = 3;
    while (now() < end)
        for (int i = 0; i < 20000; i++) x = x * 2862933555777941757UL + 7;
    sink = x;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    fnA(seconds);
    fnB(seconds);
    return 0;
}
