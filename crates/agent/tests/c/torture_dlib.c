/* The library torture_dlopen loads and unloads: fixed work in dl_work. */
#include <stdint.h>
__attribute__((noinline)) uint64_t dl_work(uint64_t seed, long n) {
    uint64_t x = seed * 2 + 1;
    for (long i = 0; i < n; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}
