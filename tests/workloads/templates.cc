// A gprof workload in C++: overloads and template members, whose mangled
// names decide gprof's order among equal times, and a library destructor.
//   templates
// Build: g++ -O1 -pg templates.cc -o templates
#include <cstdio>
#include <vector>

namespace ns {
template <typename T> struct Box {
    T v;
    __attribute__((noinline)) T get(int n) const {
        T x = v;
        for (int i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
        return x;
    }
};
__attribute__((noinline)) double work(const Box<double>& b, int n) { return b.get(n); }
__attribute__((noinline)) double work(const Box<float>& b, int n) { return b.get(n); }
}  // namespace ns

static volatile double sink;

int main() {
    ns::Box<double> d{1};
    ns::Box<float> f{1};
    for (int i = 0; i < 200; i++) {
        sink += ns::work(d, 200000);
        sink += ns::work(f, 100000);
    }
    std::vector<int> v(10);
    sink += v.size();
    printf("%f\n", (double)sink);
}
