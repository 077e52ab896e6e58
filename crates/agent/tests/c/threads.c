/* threads N: N threads (1-4), thread i burns 0.4 CPU-s in worker_i. */
#include <pthread.h>
#include <stdlib.h>
#include "burn.h"
DEFINE_BURN(worker_0)
DEFINE_BURN(worker_1)
DEFINE_BURN(worker_2)
DEFINE_BURN(worker_3)
static double (*const workers[4])(double) = {worker_0, worker_1, worker_2, worker_3};
static void *thread_main(void *arg) { workers[(long)arg](0.4); return NULL; }
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    pthread_t t[4];
    for (long i = 1; i < n; i++) pthread_create(&t[i], NULL, thread_main, (void *)i);
    thread_main((void *)0);
    for (int i = 1; i < n; i++) pthread_join(t[i], NULL);
    return 0;
}
