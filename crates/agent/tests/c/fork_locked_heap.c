/* A threaded program with an allocator of its own whose lock is not
 * fork-safe (no pthread_atfork handler), as Chromium's is: one thread
 * holds the heap lock while the main thread forks children that exec
 * /bin/true at once (execl, as a launcher does). A child forked while
 * the lock is held inherits it held by a thread that does not exist in
 * it: any malloc or free
 * between its fork and its exec waits forever. The program itself
 * allocates nothing there (POSIX allows only async-signal-safe calls in
 * that window), so without a profiler every child execs.
 *
 * Argument: how many children (default 20). Each child is forked while the lock is held
 * (most often: it is let go for 1 ms in 51) and gets 3 s to exec
 * and exit; one that does not is killed and counted as stuck. Prints
 * "children stuck: S of N, failed: F" (F: exited otherwise than 0). The
 * parent first burns 0.1 CPU-s in parent_work, so that it has samples. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "burn.h"

DEFINE_BURN(parent_work)

/* ---- The allocator: a bump arena behind one mutex; free keeps nothing. */

#define ARENA_SIZE ((size_t)1 << 32)
#define HEADER 16

static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
static char *arena, *arena_next;

static void *take(size_t size, size_t align) {
    if (align < HEADER) align = HEADER;
    pthread_mutex_lock(&heap_lock);
    if (!arena) {
        arena = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (arena == MAP_FAILED) abort();
        arena_next = arena;
    }
    uintptr_t at = ((uintptr_t)arena_next + HEADER + align - 1) & ~(uintptr_t)(align - 1);
    if (at + size > (uintptr_t)arena + ARENA_SIZE) {
        pthread_mutex_unlock(&heap_lock);
        return NULL;
    }
    arena_next = (char *)(at + size);
    ((size_t *)at)[-1] = size;
    pthread_mutex_unlock(&heap_lock);
    return (void *)at;
}

static int ours(void *p) {
    return arena && (char *)p >= arena && (char *)p < arena + ARENA_SIZE;
}

void *malloc(size_t size) { return take(size, HEADER); }

void free(void *p) {
    if (!p) return;
    /* Freeing takes the lock too, as a real allocator does. */
    pthread_mutex_lock(&heap_lock);
    pthread_mutex_unlock(&heap_lock);
}

void *calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    return take(n * size, HEADER); /* fresh anonymous memory is zero */
}

void *realloc(void *p, size_t size) {
    void *q = take(size, HEADER);
    if (p && q) {
        size_t old = ours(p) ? ((size_t *)p)[-1] : size;
        memcpy(q, p, old < size ? old : size);
    }
    return q;
}

int posix_memalign(void **out, size_t align, size_t size) {
    void *p = take(size, align);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t size) { return take(size, align); }
void *memalign(size_t align, size_t size) { return take(size, align); }
size_t malloc_usable_size(void *p) { return p && ours(p) ? ((size_t *)p)[-1] : 0; }

/* ---- The program. */

static volatile int holding, done;

static void pause_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

/* Holds the heap lock 50 ms at a time, letting go for 1 ms in between
 * (other threads, the profiler's among them, get their turn). */
static void *hold_heap(void *arg) {
    (void)arg;
    while (!done) {
        pthread_mutex_lock(&heap_lock);
        holding = 1;
        pause_ms(50);
        holding = 0;
        pthread_mutex_unlock(&heap_lock);
        pause_ms(1);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20;
    parent_work(0.1);
    pthread_t holder;
    if (pthread_create(&holder, NULL, hold_heap, NULL) != 0) return 2;
    int stuck = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        while (!holding) pause_ms(1);
        pid_t pid = fork();
        if (pid < 0) return 3;
        if (pid == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int status = 0;
        int waited = 0;
        while (waitpid(pid, &status, WNOHANG) == 0) {
            if (++waited > 3000) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                stuck++;
                status = 0;
                break;
            }
            pause_ms(1);
        }
        if (waited <= 3000 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) failed++;
    }
    done = 1;
    pthread_join(holder, NULL);
    printf("children stuck: %d of %d, failed: %d\n", stuck, n, failed);
    return 0;
}
