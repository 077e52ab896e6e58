/* A gprof workload: a call graph with a two-function cycle (is_even /
 * is_odd), direct recursion (rec), a function reached from two callers
 * (fa), a static function, a function called but never sampled (tiny),
 * and one never called at all.
 *   callgraph [REPS]
 * Build: cc -O1 -pg [-no-pie] callgraph.c -o callgraph
 */
#include <stdio.h>
#include <stdlib.h>

volatile double sink;

__attribute__((noinline)) void leaf(int n) {
    double x = 1;
    for (int i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
    sink += x;
}
__attribute__((noinline)) int is_even(int n);
__attribute__((noinline)) int is_odd(int n) { leaf(2000); return n == 0 ? 0 : is_even(n - 1); }
__attribute__((noinline)) int is_even(int n) { leaf(1000); return n == 0 ? 1 : is_odd(n - 1); }
__attribute__((noinline)) void fa(void) { leaf(300000); }
__attribute__((noinline)) void fb(void) { leaf(150000); fa(); }
__attribute__((noinline)) int rec(int n) { leaf(5000); return n ? rec(n - 1) + 1 : 0; }
static __attribute__((noinline)) void spin_static(void) { leaf(40000); }
__attribute__((noinline)) int tiny(int x) { return x * 3 + 1; }
__attribute__((noinline)) void _underscored(void) { sink += 2; }
__attribute__((noinline)) void never_called(void) { sink += 1; }

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 300;
    for (int i = 0; i < reps; i++) {
        fa();
        fb();
        if (i % 10 == 0) is_even(50);
        rec(5);
        spin_static();
        sink += tiny(i);
    }
    _underscored();
    if (argc > 5) never_called();
    printf("%f\n", sink);
    return 0;
}
