/* A daemon-like program: 4 threads burn CPU, the main thread closes every
 * descriptor above 2 (close_range(3, ~0U, 0)) after 0.5 s, and the threads
 * go on burning in after_close() for ARGV[1] CPU seconds each. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "burn.h"

DEFINE_BURN(before_close)
DEFINE_BURN(after_close)

static double seconds = 2.0;
static pthread_barrier_t closed;

static void *worker(void *arg) {
    (void)arg;
    before_close(0.3);
    pthread_barrier_wait(&closed);
    after_close(seconds);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) seconds = atof(argv[1]);
    pthread_t threads[4];
    pthread_barrier_init(&closed, NULL, 5);
    for (int i = 0; i < 4; i++) pthread_create(&threads[i], NULL, worker, NULL);
    usleep(500 * 1000);
    if (syscall(SYS_close_range, 3, ~0U, 0) != 0) perror("close_range");
    pthread_barrier_wait(&closed);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    printf("done\n");
    return 0;
}
