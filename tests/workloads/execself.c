/* Burns CPU (its own CPU time, whatever the load), then execs itself (a
 * new image, at another address under ASLR) to burn again: samples taken
 * just before the exec must be named from the mappings of the image they
 * were taken in.
 *   execself SECONDS [again]
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile double sink;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}
__attribute__((noinline)) void burn_before(double seconds) {
    double end = now() + seconds, x = 1;
    while (now() < end)
        for (int i = 0; i < 10000; i++) x = x * 1.0000001 + 1e-9;
    sink = x;
}
__attribute__((noinline)) void burn_after(double seconds) {
    double end = now() + seconds, x = 2;
    while (now() < end)
        for (int i = 0; i < 10000; i++) x = x * 1.0000001 + 1e-9;
    sink = x;
}
int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 0.2;
    if (argc > 2) {
        burn_after(seconds);
        return 0;
    }
    burn_before(seconds);
    execl("/proc/self/exe", argv[0], argv[1], "again", (char *)0);
    return 1;
}
