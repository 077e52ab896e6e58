//! Short function names, as Go pprof shows them by default: argument
//! lists, template arguments, return types and `[clone .xxx]` suffixes
//! removed from demangled C++ names; `(anonymous namespace)`, lambdas,
//! operator names, ABI tags and the arguments of enclosing functions of
//! local entities kept; special names (`non-virtual thunk to ...`) whole;
//! Go names (`runtime.(*bmap).overflow`, `main.T.m`, `sync.(*Once).Do`)
//! unchanged, receivers included.
//!
//! The rules live here, beside the profile.proto writer, which writes
//! these names as `Function.name` (what pprof's own symbolizer writes);
//! `cpuprof_symbolize::demangle::short_name` and the reports use them too.

/// Prefixes of the C++ "special names" that Go pprof leaves whole.
const SPECIAL_PREFIXES: &[&str] = &[
    "non-virtual thunk to ",
    "virtual thunk to ",
    "covariant return thunk to ",
    "construction vtable for ",
    "vtable for ",
    "VTT for ",
    "typeinfo for ",
    "typeinfo name for ",
    "typeinfo fn for ",
    "guard variable for ",
    "TLS init function for ",
    "TLS wrapper function for ",
    "transaction clone for ",
    "non-transaction clone for ",
    "reference temporary #",
    "hidden alias for ",
    "java Class for ",
];

/// Operator spellings after `operator`, longest first so that `<<=` wins
/// over `<<` and `<`.
const OPERATORS: &[&str] = &[
    "->*", "<=>", "<<=", ">>=", "()", "[]", "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "\"\"", "<", ">", "+", "-", "*",
    "/", "%", "&", "|", "^", "~", "!", "=", ",",
];

/// The name pprof shows by default for a demangled name: see the module
/// documentation. Examples:
///
/// ```
/// use cpuprof_profile::names::short_name;
/// assert_eq!(short_name("std::vector<int, std::allocator<int> >::push_back(int const&)"),
///            "std::vector::push_back");
/// assert_eq!(short_name("(anonymous namespace)::f(int)"), "(anonymous namespace)::f");
/// assert_eq!(short_name("main::{lambda(int)#1}::operator()(int) const"),
///            "main::{lambda(int)#1}::operator()");
/// assert_eq!(short_name("int tmax<int>(int const&, int const&)"), "tmax");
/// assert_eq!(short_name("work(int, int) [clone .constprop.0]"), "work");
/// assert_eq!(short_name("runtime.(*bmap).overflow"), "runtime.(*bmap).overflow");
/// ```
pub fn short_name(demangled: &str) -> String {
    if SPECIAL_PREFIXES.iter().any(|p| demangled.starts_with(p)) || is_go_method(demangled) {
        return demangled.to_string();
    }
    let mut out = String::with_capacity(demangled.len());
    simplify(demangled.as_bytes(), &mut out);
    let trimmed = out.trim();
    if trimmed.is_empty() {
        demangled.to_string()
    } else {
        trimmed.to_string()
    }
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Simplifies the whole of `s` into `out` (which starts empty).
fn simplify(s: &[u8], out: &mut String) {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'o' if starts_word(s, i, b"operator") => {
                i = copy_operator(s, i, out);
            }
            b'{' => {
                // `{lambda(int)#1}`, `{unnamed type#1}`: kept whole.
                let end = matching(s, i, b'{', b'}');
                push_bytes(out, &s[i..end]);
                i = end;
            }
            b'(' if s[i..].starts_with(b"(anonymous namespace)") => {
                let n = "(anonymous namespace)".len();
                push_bytes(out, &s[i..i + n]);
                i += n;
            }
            b'(' => {
                let end = matching(s, i, b'(', b')');
                let after = skip_qualifiers(s, end);
                if s[after..].starts_with(b"::") {
                    // The arguments of an enclosing function of a local
                    // entity (`f(int)::Local::g()`): Go pprof keeps them.
                    out.push('(');
                    simplify_inner(s, i + 1, end.saturating_sub(1).max(i + 1), out);
                    out.push(')');
                    push_bytes(out, &s[end..after]);
                }
                // Otherwise these are the function's own parameters and
                // cv/ref qualifiers: dropped.
                i = after;
            }
            b'<' if i == 0 || s[i - 1] == b'<' => {
                // A Rust qualified path `<T as Trait>::f`: keep the
                // brackets, simplify the inside.
                out.push('<');
                let end = matching(s, i, b'<', b'>');
                simplify_inner(s, i + 1, end.saturating_sub(1).max(i + 1), out);
                out.push('>');
                i = end;
            }
            b'<' => {
                // Template arguments; a Rust turbofish `::<T>` goes with
                // its `::`.
                if out.ends_with("::") {
                    out.truncate(out.len() - 2);
                }
                i = skip_template(s, i);
            }
            b'[' if s[i..].starts_with(b"[clone ") => {
                i = matching(s, i, b'[', b']');
            }
            b'[' if s[i..].starts_with(b"[abi:") => {
                let end = matching(s, i, b'[', b']');
                push_bytes(out, &s[i..end]);
                i = end;
            }
            b' ' => {
                let next = s.get(i + 1).copied();
                // ` <` (c++filt's space between `operator<` and its
                // template arguments), ` [clone ...]`, or a trailing space.
                if !matches!(next, None | Some(b'<') | Some(b'[')) {
                    // A space at the top level separates a return type
                    // from the name: drop what came before.
                    out.clear();
                }
                i += 1;
            }
            _ => {
                let start = i;
                i += 1;
                if is_ident_byte(s[start]) {
                    while i < s.len() && is_ident_byte(s[i]) {
                        i += 1;
                    }
                }
                push_bytes(out, &s[start..i]);
            }
        }
    }
}

/// Simplifies `s[from..to]` (the inside of a kept bracket pair) into
/// `out`, keeping its spaces and commas.
fn simplify_inner(s: &[u8], from: usize, to: usize, out: &mut String) {
    let mut i = from;
    while i < to {
        let c = s[i];
        match c {
            b'<' => {
                let end = skip_template(s, i);
                i = end.min(to);
            }
            b'o' if starts_word(s, i, b"operator") => {
                i = copy_operator(s, i, out).min(to);
            }
            b'{' => {
                let end = matching(s, i, b'{', b'}').min(to);
                push_bytes(out, &s[i..end]);
                i = end;
            }
            _ => {
                let start = i;
                i += 1;
                if is_ident_byte(s[start]) {
                    while i < to && is_ident_byte(s[i]) {
                        i += 1;
                    }
                }
                push_bytes(out, &s[start..i]);
            }
        }
    }
}

fn push_bytes(out: &mut String, bytes: &[u8]) {
    out.push_str(&String::from_utf8_lossy(bytes));
}

/// True when `s[i..]` starts with `word` as a whole identifier.
fn starts_word(s: &[u8], i: usize, word: &[u8]) -> bool {
    s[i..].starts_with(word)
        && (i == 0 || !is_ident_byte(s[i - 1]))
        && s.get(i + word.len()).is_none_or(|&b| !is_ident_byte(b))
}

/// Copies `operator` and its spelling at `s[i..]`; returns the index after.
fn copy_operator(s: &[u8], i: usize, out: &mut String) -> usize {
    let mut j = i + "operator".len();
    out.push_str("operator");
    if let Some(op) = OPERATORS
        .iter()
        .find(|op| s[j..].starts_with(op.as_bytes()))
    {
        out.push_str(op);
        j += op.len();
        // A literal operator's suffix: `operator"" _km`.
        if *op == "\"\"" {
            while j < s.len() && (s[j] == b' ' || is_ident_byte(s[j])) {
                out.push(s[j] as char);
                j += 1;
            }
        }
        return j;
    }
    if s.get(j) == Some(&b' ') {
        for word in [
            &b" new[]"[..],
            b" delete[]",
            b" new",
            b" delete",
            b" co_await",
        ] {
            if s[j..].starts_with(word) && s.get(j + word.len()).is_none_or(|&b| !is_ident_byte(b))
            {
                push_bytes(out, word);
                return j + word.len();
            }
        }
        // A conversion operator: `operator bool`, `operator char const*`,
        // up to its (empty) argument list.
        let mut depth = 0usize;
        let start = j;
        while j < s.len() {
            match s[j] {
                b'<' => {
                    depth += 1;
                }
                b'>' => depth = depth.saturating_sub(1),
                b'(' if depth == 0 => break,
                _ => {}
            }
            j += 1;
        }
        // Drop template arguments inside the converted-to type.
        let mut k = start;
        while k < j {
            if s[k] == b'<' {
                k = skip_template(s, k).min(j);
            } else {
                out.push(s[k] as char);
                k += 1;
            }
        }
        return j;
    }
    j
}

/// Skips the template argument list opening at `s[i] == '<'`; returns the
/// index after its closing `>`. Parentheses inside (function types,
/// expressions such as `(a>b)`) are balanced separately, so a `>` inside
/// them does not close the list.
fn skip_template(s: &[u8], i: usize) -> usize {
    let mut stack: Vec<u8> = Vec::new();
    let mut j = i;
    while j < s.len() {
        match s[j] {
            b'o' if starts_word(s, j, b"operator") => {
                // `&operator<`, `operator>>` inside arguments.
                let mut scratch = String::new();
                j = copy_operator(s, j, &mut scratch);
                continue;
            }
            b'<' if stack.last() != Some(&b'(') => stack.push(b'<'),
            b'(' => stack.push(b'('),
            b'>' if stack.last() == Some(&b'<') => {
                stack.pop();
                if stack.is_empty() {
                    return j + 1;
                }
            }
            b')' => {
                while let Some(top) = stack.pop() {
                    if top == b'(' {
                        break;
                    }
                }
                if stack.is_empty() {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    s.len()
}

/// The index after the bracket closing the one at `s[i] == open`.
fn matching(s: &[u8], i: usize, open: u8, close: u8) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    while j < s.len() {
        if s[j] == open {
            depth += 1;
        } else if s[j] == close {
            depth -= 1;
            if depth == 0 {
                return j + 1;
            }
        }
        j += 1;
    }
    s.len()
}

/// Skips ` const`, ` volatile`, ` &`, ` &&`, ` noexcept`, ` restrict`
/// after an argument list.
fn skip_qualifiers(s: &[u8], mut i: usize) -> usize {
    loop {
        let mut advanced = false;
        for q in [
            &b" const"[..],
            b" volatile",
            b" restrict",
            b" noexcept",
            b" &&",
            b" &",
        ] {
            if s[i..].starts_with(q) {
                let end = i + q.len();
                let boundary = q.ends_with(b"&") || s.get(end).is_none_or(|&b| !is_ident_byte(b));
                if boundary {
                    i = end;
                    advanced = true;
                    break;
                }
            }
        }
        if !advanced {
            return i;
        }
    }
}

/// True for a Go method name with its receiver in parentheses
/// (`runtime.(*bmap).overflow`, `main.(T).m`, `main.(*List[...]).Push`):
/// a `.(` after a package path, and no C++ `::`. Go pprof shows Go names
/// as the runtime writes them.
fn is_go_method(name: &str) -> bool {
    if name.contains("::") {
        return false;
    }
    name.match_indices(".(")
        .any(|(i, _)| i > 0 && name.as_bytes()[i - 1] != b' ' && name[i + 2..].contains(")."))
}

#[cfg(test)]
mod tests {
    use super::short_name;

    #[test]
    fn go_names_keep_their_receivers() {
        for name in [
            "runtime.(*bmap).overflow",
            "main.(*counter).add",
            "main.(T).value",
            "sync.(*Once).doSlow",
            "main.(*List[...]).Push",
            "main.main.func1",
            "github.com/x/y.(*Z).f",
        ] {
            assert_eq!(short_name(name), name);
        }
        assert_eq!(short_name("f(int)"), "f");
        assert_eq!(short_name("ns::T::f(int) const"), "ns::T::f");
    }
}
