/* A library loaded with dlopen by maps.c: cc -O2 -g -shared -fPIC. */
volatile double plugin_sink;

static inline double plugin_step(double x) { return x * 1.0000001 + 1e-9; }

__attribute__((noinline)) double plugin_work(int n) {
    double x = 1.0;
    for (int i = 0; i < n; i++) x = plugin_step(x);
    plugin_sink = x;
    return x;
}
