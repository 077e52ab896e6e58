/* malloc_storm SECONDS: 8 threads malloc, touch and free blocks of random
 * sizes for SECONDS of wall time (the handler must never need malloc). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double seconds = 10;
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}
__attribute__((noinline)) static unsigned long storm(unsigned seed) {
    void *blocks[64] = {0};
    unsigned long total = 0;
    double end = now() + seconds;
    while (now() < end) {
        for (int i = 0; i < 1000; i++) {
            seed = seed * 1103515245u + 12345u;
            int slot = seed % 64;
            free(blocks[slot]);
            size_t size = 16 + (seed >> 8) % 65536;
            blocks[slot] = malloc(size);
            memset(blocks[slot], (int)seed, size < 256 ? size : 256);
            total += size;
        }
    }
    for (int i = 0; i < 64; i++) free(blocks[i]);
    return total;
}
static void *thread_main(void *arg) { return (void *)storm((unsigned)(long)arg); }
int main(int argc, char **argv) {
    if (argc > 1) seconds = atof(argv[1]);
    pthread_t t[8];
    for (long i = 0; i < 8; i++) pthread_create(&t[i], NULL, thread_main, (void *)(i + 1));
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    printf("storm done\n");
    return 0;
}
