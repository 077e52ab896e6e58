// A workload for the perf.data tests and scripts/bench-perf: C++ with
// templates, STL containers, inlined helpers and several call depths,
// built without frame pointers (-O2 -g -fomit-frame-pointer) so that only
// DWARF unwinding (perf record --call-graph dwarf) recovers its stacks.
//   perfwork [SECONDS] [THREADS]
// Build: g++ -O2 -g -fomit-frame-pointer perfwork.cc -o perfwork -pthread
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <string>
#include <thread>
#include <vector>

static double cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

namespace work {
template <typename T>
struct Mixer {
    __attribute__((noinline)) T mix(const std::vector<T>& v) const {
        T s = T();
        for (const T& x : v) s = s * T(0.9999) + std::sqrt(x + T(1));
        return s;
    }
};

static inline long fold(long h, char c) { return h * 131 + c; }

__attribute__((noinline)) long hash_words(const std::vector<std::string>& words) {
    long h = 0;
    for (const std::string& w : words)
        for (char c : w) h = fold(h, c);
    return h;
}

__attribute__((noinline)) long tree_walk(const std::map<int, int>& m) {
    long s = 0;
    for (int round = 0; round < 4; round++)
        for (auto& kv : m) s += kv.first ^ kv.second;
    return s;
}

__attribute__((noinline)) double deep(int depth, const std::vector<double>& v) {
    if (depth == 0) return Mixer<double>().mix(v);
    return deep(depth - 1, v) + 1;
}

__attribute__((noinline)) double step(const std::vector<double>& v,
                                      const std::vector<std::string>& words,
                                      const std::map<int, int>& m) {
    double r = deep(3, v);
    r += hash_words(words) % 7;
    r += tree_walk(m) % 5;
    return r;
}
}  // namespace work

static volatile double sink;

static void run(double seconds) {
    std::vector<double> v(20000);
    for (size_t i = 0; i < v.size(); i++) v[i] = i * 0.5;
    std::vector<std::string> words;
    for (int i = 0; i < 4000; i++) words.push_back("word" + std::to_string(i * 7919));
    std::map<int, int> m;
    for (int i = 0; i < 20000; i++) m[i * 31 % 100003] = i;
    double start = cpu_seconds();
    while (cpu_seconds() - start < seconds) sink += work::step(v, words, m);
}

int main(int argc, char** argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    std::vector<std::thread> pool;
    for (int i = 1; i < threads; i++) pool.emplace_back(run, seconds);
    run(seconds);
    for (auto& t : pool) t.join();
    printf("%f\n", (double)sink);
    return 0;
}
