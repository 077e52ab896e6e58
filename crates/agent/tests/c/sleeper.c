/* Mostly waits: 1 s of wall time in sleep_wait, ~0.05 s of CPU. */
#include <errno.h>
#include <time.h>
#include "burn.h"
DEFINE_BURN(short_burn)
__attribute__((noinline)) void sleep_wait(double seconds) {
    struct timespec now, end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += (time_t)seconds;
    end.tv_nsec += (long)((seconds - (time_t)seconds) * 1e9);
    if (end.tv_nsec >= 1000000000L) { end.tv_sec++; end.tv_nsec -= 1000000000L; }
    /* Absolute deadline: an interrupting signal cannot shorten the wait. */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL) == EINTR) {}
    (void)now;
}
int main(void) {
    short_burn(0.05);
    sleep_wait(1.0);
    return 0;
}
