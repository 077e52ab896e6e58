/* Children started the ways that bypass fork's handlers: ARGV[1] rounds,
 * alternating vfork + execv and posix_spawn of ARGV[2] (a program that
 * prints its arguments), with fixed work in the parent between them. The
 * children's output and the parent's checksum do not depend on profiling;
 * the exit status is the number of children that failed. */
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

__attribute__((noinline)) uint64_t spawn_parent_work(uint64_t seed, long n) {
    uint64_t x = seed * 2 + 1;
    for (long i = 0; i < n; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s ROUNDS PROGRAM\n", argv[0]); return 2; }
    long rounds = atol(argv[1]);
    const char *program = argv[2];
    uint64_t sum = 0;
    int failed = 0;
    for (long round = 0; round < rounds; round++) {
        char number[32];
        snprintf(number, sizeof number, "%ld", round);
        char *child_argv[] = {(char *)program, round % 2 ? "posix_spawn" : "vfork", number, NULL};
        fflush(stdout);
        pid_t pid;
        if (round % 2 == 0) {
            pid = vfork();
            if (pid == 0) {
                execv(program, child_argv);
                _exit(127);
            }
        } else if (posix_spawn(&pid, program, NULL, NULL, child_argv, environ) != 0) {
            pid = -1;
        }
        if (pid < 0) { failed++; continue; }
        sum ^= spawn_parent_work((uint64_t)round, 3000000);
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
    }
    printf("spawned %ld children, %d failed, checksum %016llx\n", rounds, failed, (unsigned long long)sum);
    return failed;
}
