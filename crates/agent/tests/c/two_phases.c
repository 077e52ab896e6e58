/* Two phases on the main thread: phase_one burns SECONDS of CPU time,
 * then phase_two as much. Prints the realtime clock (ns since the epoch)
 * at the start, at the switch and at the end: "start NS", "switch NS",
 * "end NS". Argument: seconds per phase (default 0.5). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "burn.h"

DEFINE_BURN(phase_one)
DEFINE_BURN(phase_two)

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 0.5;
    printf("start %lld\n", now_ns());
    double x = phase_one(seconds);
    printf("switch %lld\n", now_ns());
    x += phase_two(seconds);
    printf("end %lld\n", now_ns());
    return x == 0.0;
}
