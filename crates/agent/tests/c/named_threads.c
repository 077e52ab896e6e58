/* Three named threads burn known, different amounts of CPU time:
 * "io" 0.2 s in io_work, "compute-1" 0.6 s in compute_one, "compute-2"
 * 0.3 s in compute_two (each scaled by ARGV[1], default 1). Each prints
 * the CPU time its clock measured: "NAME CPU_SECONDS". The main thread
 * only waits. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "burn.h"

DEFINE_BURN(io_work)
DEFINE_BURN(compute_one)
DEFINE_BURN(compute_two)

struct job {
    const char *name;
    double (*burn)(double);
    double seconds;
    double measured;
};

static void *thread_main(void *arg) {
    struct job *job = arg;
    pthread_setname_np(pthread_self(), job->name);
    job->burn(job->seconds);
    job->measured = thread_cpu_seconds();
    return NULL;
}

int main(int argc, char **argv) {
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    struct job jobs[3] = {
        {"io", io_work, 0.2 * scale, 0},
        {"compute-1", compute_one, 0.6 * scale, 0},
        {"compute-2", compute_two, 0.3 * scale, 0},
    };
    pthread_t threads[3];
    for (int i = 0; i < 3; i++) pthread_create(&threads[i], NULL, thread_main, &jobs[i]);
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < 3; i++) printf("%s %.6f\n", jobs[i].name, jobs[i].measured);
    return 0;
}
