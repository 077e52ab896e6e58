/* Code that runs on stacks that are not a thread's own: inside the
 * program's SIGUSR1 handler on a sigaltstack, and in makecontext /
 * swapcontext coroutines on malloc'd stacks. ARGV[1]: "altstack" or
 * "coroutines"; ARGV[2]: rounds; ARGV[3]: stack size in bytes. Prints a
 * checksum of the work done, which must not depend on profiling. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

/* A fixed amount of work (no clock): the checksum is deterministic. */
__attribute__((noinline)) static uint64_t work(uint64_t seed, long iterations) {
    uint64_t x = seed * 2 + 1;
    for (long i = 0; i < iterations; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

static volatile uint64_t handler_sum;
static volatile long handler_runs;

__attribute__((noinline)) void on_altstack_work(void) {
    handler_sum += work(handler_runs, 400000);
}

static void usr1_handler(int sig) {
    (void)sig;
    stack_t now;
    sigaltstack(NULL, &now);
    if (!(now.ss_flags & SS_ONSTACK)) {
        fprintf(stderr, "not on the alternate stack\n");
        abort();
    }
    handler_runs++;
    on_altstack_work();
}

static int run_altstack(long rounds, size_t size) {
    stack_t ss = {.ss_sp = malloc(size), .ss_size = size, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) { perror("sigaltstack"); return 2; }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = usr1_handler;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    for (long i = 0; i < rounds; i++) raise(SIGUSR1);
    printf("altstack: %ld handler runs, checksum %016llx\n", (long)handler_runs,
           (unsigned long long)handler_sum);
    return 0;
}

#define COROUTINES 4
static ucontext_t main_context, contexts[COROUTINES];
static uint64_t coroutine_sum[COROUTINES];
static long coroutine_rounds;

__attribute__((noinline)) void coroutine_work(int id, long round) {
    coroutine_sum[id] += work((uint64_t)id * 1000003 + round, 100000);
}

static void coroutine(int id) {
    for (long round = 0; round < coroutine_rounds; round++) {
        coroutine_work(id, round);
        /* Hand over to the next coroutine; the last one to main. */
        swapcontext(&contexts[id], id + 1 < COROUTINES ? &contexts[id + 1] : &main_context);
    }
}

static int run_coroutines(long rounds, size_t size) {
    coroutine_rounds = rounds;
    for (int id = 0; id < COROUTINES; id++) {
        getcontext(&contexts[id]);
        contexts[id].uc_stack.ss_sp = malloc(size);
        contexts[id].uc_stack.ss_size = size;
        contexts[id].uc_link = &main_context;
        makecontext(&contexts[id], (void (*)(void))coroutine, 1, id);
    }
    for (long round = 0; round < rounds; round++) swapcontext(&main_context, &contexts[0]);
    uint64_t sum = 0;
    for (int id = 0; id < COROUTINES; id++) sum ^= coroutine_sum[id];
    printf("coroutines: %d x %ld rounds, checksum %016llx\n", COROUTINES, rounds,
           (unsigned long long)sum);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: %s altstack|coroutines ROUNDS STACK_BYTES\n", argv[0]); return 2; }
    long rounds = atol(argv[2]);
    size_t size = (size_t)atol(argv[3]);
    if (strcmp(argv[1], "altstack") == 0) return run_altstack(rounds, size);
    if (strcmp(argv[1], "coroutines") == 0) return run_coroutines(rounds, size);
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
