/* For CPUPROFILESIGNAL=12: presses the switch twice around each of two
 * bursts of work, giving PATH.0 and PATH.1. */
#include <signal.h>
#include <unistd.h>
#include "burn.h"
DEFINE_BURN(first_burst)
DEFINE_BURN(second_burst)
int main(void) {
    raise(SIGUSR2); usleep(200000); first_burst(0.3); raise(SIGUSR2); usleep(300000);
    raise(SIGUSR2); usleep(200000); second_burst(0.3); raise(SIGUSR2); usleep(300000);
    return 0;
}
