/* Shared by the agent's C test programs: spin on the thread's CPU clock. */
#include <time.h>
static double thread_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}
#define DEFINE_BURN(name)                                                    \
    __attribute__((noinline)) double name(double seconds) {                 \
        double end = thread_cpu_seconds() + seconds, x = 1.0;                \
        while (thread_cpu_seconds() < end)                                   \
            for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 1e-9;        \
        return x;                                                            \
    }
