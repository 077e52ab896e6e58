// A shared library of 1000 small functions and `entry`, which calls each
// of them once through the PLT (built with -fPIC, whose calls to exported
// functions go through the PLT, and -Wl,-z,lazy). Each dlopen of it with
// RTLD_LAZY makes each of those calls a first call: ld.so's lazy-binding
// trampoline (_dl_runtime_resolve_xsavec and kin) resolves it. See
// lazymain.c.
// Build: gcc -O1 -g -fPIC -shared -Wl,-z,lazy lazylib.c -o liblazy.so
#define R10(M, p) M(p##0) M(p##1) M(p##2) M(p##3) M(p##4) M(p##5) M(p##6) M(p##7) M(p##8) M(p##9)
#define R100(M, p)                                                                          \
    R10(M, p##0) R10(M, p##1) R10(M, p##2) R10(M, p##3) R10(M, p##4) R10(M, p##5)        \
        R10(M, p##6) R10(M, p##7) R10(M, p##8) R10(M, p##9)
#define R1000(M)                                                                            \
    R100(M, a) R100(M, b) R100(M, c) R100(M, d) R100(M, e) R100(M, f) R100(M, g)         \
        R100(M, h) R100(M, i) R100(M, j)

#define DEFINE(n) int f_##n(int x) { return x * 3 + 1; }
#define CALL(n) x = f_##n(x);

R1000(DEFINE)

int entry(int x) {
    R1000(CALL)
    return x;
}
