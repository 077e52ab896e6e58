// C++ names of every kind pprof has to print: anonymous namespaces, templates,
// operators, lambdas, ABI tags, overloads, thunks, clones. Built -O1 -g
// -fno-inline so that each is a real function.
#include <vector>
#include <map>
#include <string>
#include <functional>
#include <iostream>
#include <algorithm>
#define NI __attribute__((noinline))
volatile int sink;
namespace {
NI int anon_f(int x) { sink += x; return x; }
struct AnonS { NI void method() const { sink++; } };
}
namespace outer { namespace inner {
template <typename T> struct Box {
  T v;
  NI T get() const { sink++; return v; }
  NI bool operator<(const Box& o) const { sink++; return v < o.v; }
  NI int operator()(int a) { sink += a; return a; }
  NI operator bool() const { sink++; return v != 0; }
  NI Box& operator<<(int a) { sink += a; return *this; }
  NI T* operator->() { sink++; return &v; }
  NI Box& operator[](int) { sink++; return *this; }
  template <typename U> NI static U convert(U u) { sink++; return u; }
};
NI std::string cxx11_string(int n) { return std::string(n, 'x'); }
}}
template <typename T> NI T tmax(const T& a, const T& b) { sink++; return a < b ? b : a; }
template <typename T> NI std::vector<T> make_vec(int n) { return std::vector<T>(n); }
NI void overloaded(int) { sink++; }
NI void overloaded(double) { sink++; }
NI void overloaded(const std::vector<std::map<int, std::string>>&) { sink++; }
NI void fnptr(void (*f)(int), int (*g)(double, char)) { sink++; }
struct Base { virtual ~Base() {} virtual void vf() { sink++; } };
struct Base2 { virtual ~Base2() {} virtual void vf2() { sink++; } };
struct Derived : Base, Base2 { NI void vf2() override { sink++; } };
extern "C" NI void c_function(void) { sink++; }
static NI int static_clone(int x, int y) { sink += x; return y; }
int main(int argc, char** argv) {
  anon_f(1); AnonS().method();
  outer::inner::Box<int> b{1}, c{2};
  b.get(); (void)(b < c); b(3); (void)(bool)b; b << 4; b.operator->(); b[1];
  outer::inner::Box<int>::convert<long>(5L);
  outer::inner::cxx11_string(3);
  tmax(1, 2); tmax(std::string("a"), std::string("b"));
  make_vec<int>(3);
  overloaded(1); overloaded(1.0); overloaded(std::vector<std::map<int, std::string>>());
  fnptr(overloaded, nullptr);
  auto lam = [](int x) { sink += x; return x; };
  std::function<int(int)> fl = lam; fl(3);
  auto lam2 = [&](double d) NI { sink += (int)d; }; lam2(1.0);
  Derived d; Base2* p = &d; p->vf2();
  std::vector<int> v{3,1,2}; std::sort(v.begin(), v.end(), [](int a, int b) { sink++; return a < b; });
  std::cout << "x" << std::endl;
  c_function();
  sink += static_clone(argc, 3);
  return 0;
}
