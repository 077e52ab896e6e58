/* forkexec PROG [ARGS]: forks twice; each child execs PROG ARGS; the parent
 * burns 0.3 CPU-s, waits for both and prints the children's pids. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "burn.h"
DEFINE_BURN(parent_work)
int main(int argc, char **argv) {
    pid_t kids[2];
    for (int i = 0; i < 2; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            execv(argv[1], argv + 1);
            _exit(127);
        }
    }
    parent_work(0.3);
    for (int i = 0; i < 2; i++) {
        int status;
        waitpid(kids[i], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) { fprintf(stderr, "child %d status %#x\n", (int)kids[i], status); return 1; }
    }
    printf("%d %d\n", (int)kids[0], (int)kids[1]);
    return 0;
}
