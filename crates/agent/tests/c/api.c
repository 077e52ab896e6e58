/* gperftools C API scenarios, built against include/gperftools/profiler.h
 * and linked with -lcpuprof:
 *   api start PATH    ProfilerStart / state / ProfilerStop / state
 *   api flush PATH    ProfilerFlush mid-run writes a readable profile
 *   api filter PATH   ProfilerStartWithOptions keeps only accepted threads
 *   api env           no API calls: CPUPROFILE alone starts profiling
 *   api stack         ProfilerGetStackTrace from the caller's stack
 *   api term PATH     own SIGTERM handler installed, then ProfilerStart; spins
 */
#include <gperftools/profiler.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "burn.h"

DEFINE_BURN(api_burn)
DEFINE_BURN(accepted_work)
DEFINE_BURN(rejected_work)

static __thread int accepted;
static int filter(void *arg) { (void)arg; return accepted; }
static void *accepted_thread(void *a) { (void)a; accepted = 1; accepted_work(0.4); return NULL; }
static void *rejected_thread(void *a) { (void)a; accepted = 0; rejected_work(0.4); return NULL; }

static void print_state(const char *when) {
    struct ProfilerState st;
    memset(&st, 0x55, sizeof st);
    ProfilerGetCurrentState(&st);
    printf("%s enabled=%d samples=%d name=%s all_threads=%d\n", when, st.enabled,
           st.samples_gathered, st.profile_name, ProfilingIsEnabledForAllThreads());
}

static void on_term(int sig) {
    (void)sig;
    static const char msg[] = "own handler ran\n";
    write(1, msg, sizeof msg - 1);
    _exit(3);
}

__attribute__((noinline)) static int take_stack(void) {
    void *pcs[64];
    return ProfilerGetStackTrace(pcs, 64, 0, NULL);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "env";
    const char *path = argc > 2 ? argv[2] : NULL;
    if (!strcmp(mode, "start")) {
        print_state("before");
        if (!ProfilerStart(path)) { fprintf(stderr, "ProfilerStart failed\n"); return 1; }
        printf("second start=%d\n", ProfilerStart(path));
        api_burn(0.5);
        print_state("running");
        ProfilerStop();
        print_state("stopped");
    } else if (!strcmp(mode, "flush")) {
        ProfilerStart(path);
        api_burn(0.3);
        ProfilerFlush();
        struct stat st;
        printf("flushed bytes=%ld\n", stat(path, &st) == 0 ? (long)st.st_size : -1L);
        fflush(stdout);
        api_burn(0.3);
        ProfilerStop();
    } else if (!strcmp(mode, "filter")) {
        struct ProfilerOptions options;
        memset(&options, 0, sizeof options);
        options.filter_in_thread = filter;
        ProfilerStartWithOptions(path, &options);
        pthread_t a, b;
        pthread_create(&a, NULL, accepted_thread, NULL);
        pthread_create(&b, NULL, rejected_thread, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        ProfilerStop();
    } else if (!strcmp(mode, "stack")) {
        printf("stack before start=%d\n", take_stack());
        ProfilerStart(path);
        printf("stack depth=%d\n", take_stack());
        ProfilerStop();
    } else if (!strcmp(mode, "term")) {
        signal(SIGTERM, on_term);
        ProfilerStart(path);
        printf("ready\n");
        fflush(stdout);
        api_burn(30.0);
    } else {
        ProfilerEnable();
        ProfilerDisable();
        ProfilerRegisterThread();
        api_burn(0.5);
    }
    return 0;
}
