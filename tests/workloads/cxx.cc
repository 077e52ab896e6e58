// A C++ workload for name tests: namespaces, classes, templates, operators,
// lambdas, an anonymous namespace, and inlining at -O2.
// Build: g++ -O2 -g cxx.cc -o cxx
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <string>
#include <vector>

static double cpu_now() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

namespace shapes {
template <typename T>
class Accumulator {
  public:
    __attribute__((noinline)) T add_all(const std::vector<T>& values) {
        T sum = T();
        for (int round = 0; round < 50; round++)
            for (const T& v : values) sum = sum * T(0.999) + v;
        return sum;
    }
    __attribute__((noinline)) bool operator()(const T& a, const T& b) const { return a < b; }
};

struct Point {
    double x, y;
    __attribute__((noinline)) double norm2() const {
        double s = 0;
        for (int i = 0; i < 2000; i++) s += x * x + y * y + i;
        return s;
    }
};
}  // namespace shapes

namespace {
__attribute__((noinline)) long hash_strings(const std::vector<std::string>& words) {
    long h = 0;
    for (int round = 0; round < 20; round++)
        for (const std::string& w : words)
            for (char c : w) h = h * 31 + c;
    return h;
}
}  // namespace

int main(int argc, char** argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    std::vector<double> values(20000);
    for (size_t i = 0; i < values.size(); i++) values[i] = (i * 7919) % 1000;
    std::vector<std::string> words;
    for (int i = 0; i < 5000; i++) words.push_back("word" + std::to_string(i));
    shapes::Accumulator<double> acc;
    shapes::Point p{1.5, 2.5};
    double sink = 0;
    long hsink = 0;
    double end = cpu_now() + seconds;
    while (cpu_now() < end) {
        sink += acc.add_all(values);
        std::vector<double> copy = values;
        std::sort(copy.begin(), copy.end(), acc);
        sink += p.norm2();
        hsink += hash_strings(words);
        auto sq = [&](int n) {
            double s = 0;
            for (int i = 0; i < n; i++) s += copy[i % copy.size()] * 0.5;
            return s;
        };
        sink += sq(200000);
    }
    printf("%g %ld\n", sink, hsink);
    return 0;
}
