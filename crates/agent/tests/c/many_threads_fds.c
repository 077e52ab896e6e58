/* 900 threads alive (each burns a little CPU, then waits), then the main
 * thread opens /dev/null until open() fails: prints "opened N". Run under
 * RLIMIT_NOFILE 1024 (`ulimit -n 1024`). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "burn.h"

DEFINE_BURN(thread_burn)
DEFINE_BURN(main_burn)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int started, release;

static void *worker(void *arg) {
    (void)arg;
    thread_burn(0.002);
    pthread_mutex_lock(&lock);
    started++;
    pthread_cond_broadcast(&cond);
    while (!release) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 900;
    pthread_t *threads = calloc(n, sizeof *threads);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    for (int i = 0; i < n; i++)
        if (pthread_create(&threads[i], &attr, worker, NULL) != 0) {
            perror("pthread_create");
            return 1;
        }
    pthread_mutex_lock(&lock);
    while (started < n) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    main_burn(0.2);
    usleep(1200 * 1000); /* the agent's sweep runs in between */
    int opened = 0;
    while (open("/dev/null", O_RDONLY) >= 0) opened++;
    printf("opened %d\n", opened);
    pthread_mutex_lock(&lock);
    release = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n; i++) pthread_join(threads[i], NULL);
    return 0;
}
