// Inlining at several depths, across files (a header-like part in the same
// translation unit via templates) and from the standard library, for
// comparing inline chains with addr2line. Built -O2 -g.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <string>
#include <vector>

volatile long sink;

namespace geometry {
struct Point {
  double x, y;
};
static inline double dot(const Point& a, const Point& b) { return a.x * b.x + a.y * b.y; }
static inline double norm2(const Point& a) { return dot(a, a); }
template <typename T>
inline T clamp_positive(T v) {
  return v < T(0) ? T(0) : v;
}
}  // namespace geometry

static inline long mix(long a, long b) {
  long r = a * 31 + b;
  return r ^ (r >> 7);
}

static inline long deeper(long x) { return mix(x, x + 1) + mix(x + 2, x); }

__attribute__((noinline)) long compute(int n) {
  long total = 0;
  for (int i = 0; i < n; i++) {
    geometry::Point p{double(i), double(n - i)};
    total += long(geometry::clamp_positive(geometry::norm2(p)));
    total = deeper(total);
  }
  return total;
}

__attribute__((noinline)) long sort_and_sum(std::vector<long>& v) {
  std::sort(v.begin(), v.end(), [](long a, long b) { return mix(a, 1) < mix(b, 1); });
  return std::accumulate(v.begin(), v.end(), 0L);
}

__attribute__((noinline)) std::string describe(const std::map<std::string, long>& m) {
  std::string out;
  for (const auto& kv : m) {
    out += kv.first;
    out += '=';
    out += std::to_string(kv.second);
    out += ';';
  }
  return out;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  std::vector<long> v(n);
  for (int i = 0; i < n; i++) v[i] = compute(i % 50);
  std::map<std::string, long> m;
  m["sum"] = sort_and_sum(v);
  m["n"] = n;
  sink = long(describe(m).size());
  printf("%ld\n", (long)sink);
  return 0;
}
