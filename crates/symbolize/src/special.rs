//! Mappings without an ELF file to read: the kernel (`[kernel.kallsyms]`,
//! named from `/proc/kallsyms` when it is readable and belongs to the
//! kernel that recorded the profile) and JIT code (`/tmp/perf-PID.map`,
//! the map `node --perf-basic-prof`, the JVM's perf-map agents and Python's
//! `-X perf` write: `START SIZE name` per line, hexadecimal).

use std::sync::{Arc, OnceLock};

use cpuprof_profile::perf::KERNEL_MAPPING;
use cpuprof_profile::{Function, FunctionId, Line, Profile};
use rustc_hash::FxHashMap;

use crate::Warning;

/// Sorted symbols: (start, end or 0 if unknown, name).
type Symbols = Vec<(u64, u64, String)>;

/// True for a JIT map's path, `/tmp/perf-PID.map`.
pub(crate) fn is_perf_map(path: &str) -> bool {
    path.strip_prefix("/tmp/perf-")
        .and_then(|rest| rest.strip_suffix(".map"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// True for the mappings this module names.
pub(crate) fn is_special(path: &str) -> bool {
    path == KERNEL_MAPPING || is_perf_map(path)
}

/// Starts reading the running kernel's symbols on a thread of its own, so
/// that they are ready when a profile with kernel frames (perf.data) is
/// symbolized after its reading: `/proc/kallsyms` takes the kernel a
/// while to write.
pub fn prefetch_kernel_symbols() {
    let _ = std::thread::Builder::new()
        .name("kallsyms".to_string())
        .spawn(|| {
            let _ = kallsyms();
        });
}

/// The running kernel's symbols, read once; None when `/proc/kallsyms`
/// cannot be read or hides its addresses (kptr_restrict).
fn kallsyms() -> Option<Arc<KernelSymbols>> {
    static KALLSYMS: OnceLock<Option<Arc<KernelSymbols>>> = OnceLock::new();
    KALLSYMS
        .get_or_init(|| parse_kallsyms(read_kallsyms()?).map(Arc::new))
        .clone()
}

/// The text of `/proc/kallsyms` (its size unknown beforehand: room for
/// a typical one, so that it is read in big pieces).
fn read_kallsyms() -> Option<Vec<u8>> {
    use std::io::Read;
    let mut text: Vec<u8> = Vec::with_capacity(8 << 20);
    std::fs::File::open("/proc/kallsyms")
        .ok()?
        .read_to_end(&mut text)
        .ok()?;
    Some(text)
}

/// The kernel's code symbols: the text of kallsyms kept as it was read,
/// and per symbol its address and where its name lies in the text,
/// sorted by address (a kernel has some 200,000: a `String` each took
/// twice the memory and as many allocations).
struct KernelSymbols {
    text: Vec<u8>,
    /// (address, name start, name length).
    symbols: Vec<(u64, u32, u32)>,
}

impl KernelSymbols {
    /// The name of the symbol at or before `address`.
    fn lookup(&self, address: u64) -> Option<&str> {
        let i = self.symbols.partition_point(|s| s.0 <= address);
        self.name(i.checked_sub(1)?)
    }

    fn name(&self, i: usize) -> Option<&str> {
        let &(_, start, len) = self.symbols.get(i)?;
        let bytes = self.text.get(start as usize..(start + len) as usize)?;
        std::str::from_utf8(bytes).ok()
    }
}

/// The code symbols (`t`, `T`, `w`, `W`) of kallsyms' lines, `ADDRESS
/// KIND NAME[\t[MODULE]]`; None without any (or when every address reads
/// 0: kptr_restrict hides them).
fn parse_kallsyms(text: Vec<u8>) -> Option<KernelSymbols> {
    let mut symbols: Vec<(u64, u32, u32)> = Vec::with_capacity(text.len() / 64);
    // Names are found by u32 offsets: a text beyond 4 GB is no kallsyms.
    u32::try_from(text.len()).ok()?;
    let mut at = 0usize;
    for line in text.split(|&b| b == b'\n') {
        let line_start = at;
        at += line.len() + 1;
        let Some(space) = line.iter().position(|&b| b == b' ') else {
            continue;
        };
        let (Some(&kind), Some(b' ')) = (line.get(space + 1), line.get(space + 2)) else {
            continue;
        };
        if !matches!(kind, b't' | b'T' | b'w' | b'W') {
            continue;
        }
        let address = std::str::from_utf8(&line[..space])
            .ok()
            .and_then(|digits| u64::from_str_radix(digits, 16).ok());
        let Some(address) = address else {
            continue;
        };
        let rest = &line[space + 3..];
        let len = rest
            .iter()
            .position(|&b| b == b'\t' || b == b' ')
            .unwrap_or(rest.len());
        // (A name that is not UTF-8 stays, and names nothing: its
        // addresses are not the previous symbol's.)
        if address != 0 && len > 0 {
            symbols.push((address, (line_start + space + 3) as u32, len as u32));
        }
    }
    if symbols.is_empty() {
        return None;
    }
    // Stable: of aliases at one address, the last listed names it, as
    // before.
    symbols.sort_by_key(|s| s.0);
    Some(KernelSymbols { text, symbols })
}

/// The running kernel's build id, from `/sys/kernel/notes`.
fn running_kernel_build_id() -> Option<String> {
    let notes = std::fs::read("/sys/kernel/notes").ok()?;
    let mut at = 0usize;
    while at + 12 <= notes.len() {
        let word = |i: usize| u32::from_ne_bytes(notes[i..i + 4].try_into().unwrap_or_default());
        let (namesz, descsz, kind) = (word(at) as usize, word(at + 4) as usize, word(at + 8));
        let name_at = at + 12;
        let desc_at = name_at + namesz.next_multiple_of(4);
        let end = desc_at + descsz.next_multiple_of(4);
        if end > notes.len() {
            return None;
        }
        if kind == 3 && notes.get(name_at..name_at + 3) == Some(b"GNU") {
            return Some(
                notes[desc_at..desc_at + descsz]
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect(),
            );
        }
        at = end;
    }
    None
}

/// A JIT map's symbols; None when it cannot be read.
fn perf_map(path: &str) -> Option<Symbols> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut symbols: Symbols = Vec::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, ' ');
        let (Some(start), Some(size), Some(name)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
        let (Some(start), Some(size)) = (hex(start), hex(size)) else {
            continue;
        };
        symbols.push((start, start.saturating_add(size), name.trim().to_string()));
    }
    // Later lines win for the same start (code regenerated in place).
    symbols.reverse();
    symbols.sort_by_key(|s| s.0);
    symbols.dedup_by_key(|s| s.0);
    Some(symbols)
}

/// A JIT map's name as a function. V8's (`node --perf-basic-prof`)
/// `JS:*hotLoop /app.js:1:17` becomes `hotLoop` in `/app.js` at line 1
/// (the kind prefix and the tier marker `~ ^ + *` dropped, as the same
/// function compiled again is still that function); other names stay
/// whole. The map's line is the system name.
fn jit_function(raw: &str) -> Function {
    let mut function = Function {
        name: raw.to_string(),
        system_name: raw.to_string(),
        ..Function::default()
    };
    let Some((head, place)) = raw.rsplit_once(' ') else {
        return function;
    };
    let mut parts = place.rsplitn(3, ':');
    let (Some(_column), Some(line), Some(file)) = (parts.next(), parts.next(), parts.next()) else {
        return function;
    };
    let Ok(line) = line.parse::<i64>() else {
        return function;
    };
    let name = match head.split_once(':') {
        Some((kind, rest)) if !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_alphabetic()) => {
            rest
        }
        _ => head,
    };
    let name = name.trim_start_matches(['~', '^', '+', '*', '-']).trim();
    function.name = if name.is_empty() {
        "(anonymous)".to_string()
    } else {
        name.to_string()
    };
    function.filename = file.to_string();
    function.start_line = line;
    function
}

fn lookup(symbols: &Symbols, address: u64) -> Option<&str> {
    let i = symbols.partition_point(|s| s.0 <= address);
    let (_, end, name) = symbols.get(i.checked_sub(1)?)?;
    (*end == 0 || address < *end).then_some(name.as_str())
}

/// Names the unnamed locations of the kernel and JIT mappings of
/// `profile` (those `pending` lists, per mapping) and empties their
/// pending lists.
pub(crate) fn name_special(
    profile: &mut Profile,
    pending: &mut [Vec<usize>],
    warnings: &mut Vec<Warning>,
) {
    let mut kernel_functions: FxHashMap<String, FunctionId> = FxHashMap::default();
    let mut intern = |profile: &mut Profile, name: &str| -> FunctionId {
        if let Some(&id) = kernel_functions.get(name) {
            return id;
        }
        let id = FunctionId::from_index(profile.functions.len());
        profile.functions.push(Function {
            name: name.to_string(),
            system_name: name.to_string(),
            ..Function::default()
        });
        kernel_functions.insert(name.to_string(), id);
        id
    };
    let mut functions: FxHashMap<String, FunctionId> = FxHashMap::default();
    let mut maps: FxHashMap<String, Option<Symbols>> = FxHashMap::default();
    let mut kernel: Option<Option<Arc<KernelSymbols>>> = None;
    let count = profile.mappings.len();
    for (t, slot) in pending.iter_mut().enumerate().take(count) {
        if slot.is_empty() || !is_special(&profile.mappings[t].path) {
            continue;
        }
        let locations = std::mem::take(slot);
        let mapping = profile.mappings[t].clone();
        if mapping.path == KERNEL_MAPPING {
            let symbols = kernel
                .get_or_insert_with(|| {
                    let ours = kallsyms()?;
                    // Another kernel's profile: its addresses mean nothing here.
                    if !mapping.build_id.is_empty() {
                        let running = running_kernel_build_id()?;
                        if !running.eq_ignore_ascii_case(&mapping.build_id) {
                            return None;
                        }
                    }
                    Some(ours)
                })
                .clone();
            for loc in locations {
                if !profile.locations[loc].lines.is_empty() {
                    continue;
                }
                let address = profile.locations[loc].address;
                let name = symbols
                    .as_deref()
                    .and_then(|s| s.lookup(address))
                    .unwrap_or(KERNEL_MAPPING)
                    .to_string();
                let function = intern(profile, &name);
                profile.locations[loc].lines = vec![Line {
                    function,
                    ..Line::default()
                }];
            }
            profile.mappings[t].has_functions = true;
        } else {
            let symbols = maps
                .entry(mapping.path.clone())
                .or_insert_with(|| perf_map(&mapping.path));
            let Some(symbols) = symbols.as_ref() else {
                warnings.push(Warning::new(format!(
                    "{}: cannot read the JIT map; its {} address{} stay unsymbolized",
                    mapping.path,
                    locations.len(),
                    if locations.len() == 1 { "" } else { "es" }
                )));
                continue;
            };
            let symbols = symbols.clone();
            for loc in locations {
                if !profile.locations[loc].lines.is_empty() {
                    continue;
                }
                let address = profile.locations[loc].address;
                if let Some(name) = lookup(&symbols, address) {
                    let function = jit_function(name);
                    let function = match functions.get(&function.system_name) {
                        Some(&id) => id,
                        None => {
                            let id = FunctionId::from_index(profile.functions.len());
                            functions.insert(function.system_name.clone(), id);
                            profile.functions.push(function);
                            id
                        }
                    };
                    profile.locations[loc].lines = vec![Line {
                        function,
                        ..Line::default()
                    }];
                }
            }
            profile.mappings[t].has_functions = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The symbols as (address, 0, name), as [`by_fields`] gives them.
    fn listed(k: &KernelSymbols) -> Symbols {
        (0..k.symbols.len())
            .map(|i| (k.symbols[i].0, 0, k.name(i).unwrap().to_string()))
            .collect()
    }

    /// kallsyms' lines read as whitespace-separated fields, the plain way.
    fn by_fields(text: &str) -> Symbols {
        let mut symbols: Symbols = text
            .lines()
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                let (address, kind, name) = (fields.next()?, fields.next()?, fields.next()?);
                let address = u64::from_str_radix(address, 16).ok()?;
                (matches!(kind, "t" | "T" | "w" | "W") && address != 0)
                    .then(|| (address, 0, name.to_string()))
            })
            .collect();
        symbols.sort_by_key(|s| s.0);
        symbols
    }

    #[test]
    fn kallsyms_lines_give_the_code_symbols() {
        let text = "ffffffff81000000 T _text\n\
                    ffffffff81000040 t startup_64_setup\n\
                    ffffffff82000000 D data_symbol\n\
                    0000000000000000 A fixed_percpu_data\n\
                    ffffffffc0a01000 t helper\t[mod]\n\
                    ffffffff81001000 W weak_one\n\
                    not a line\n\
                    ffffffffzz000000 T bad_address\n";
        let symbols = listed(&parse_kallsyms(text.as_bytes().to_vec()).unwrap());
        let names: Vec<(u64, &str)> = symbols.iter().map(|s| (s.0, s.2.as_str())).collect();
        assert_eq!(
            names,
            [
                (0xffffffff81000000, "_text"),
                (0xffffffff81000040, "startup_64_setup"),
                (0xffffffff81001000, "weak_one"),
                (0xffffffffc0a01000, "helper")
            ]
        );
        assert_eq!(symbols, by_fields(text));
        // Hidden addresses (kptr_restrict): nothing.
        assert!(parse_kallsyms(b"0000000000000000 T _text\n".to_vec()).is_none());
        // This machine's, when readable: what the plain reading gives.
        if let Some(text) = read_kallsyms() {
            let plain = by_fields(&String::from_utf8_lossy(&text));
            match parse_kallsyms(text).as_ref().map(listed) {
                Some(ours) => assert!(ours == plain, "{} vs {} symbols", ours.len(), plain.len()),
                None => assert!(plain.is_empty()),
            }
        }
    }

    #[test]
    fn a_kernel_symbol_whose_name_is_not_utf8_names_nothing() {
        let text =
            b"ffffffff81000000 T good\nffffffff81000100 t bad\xff\nffffffff81000200 T after\n";
        let symbols = parse_kallsyms(text.to_vec()).unwrap();
        assert_eq!(symbols.lookup(0xffffffff81000050), Some("good"));
        // Not `good`: the addresses are the unreadable symbol's.
        assert_eq!(symbols.lookup(0xffffffff81000150), None);
        assert_eq!(symbols.lookup(0xffffffff81000250), Some("after"));
        assert_eq!(symbols.lookup(0xffffffff80000000), None);
    }

    #[test]
    fn perf_map_paths() {
        assert!(is_perf_map("/tmp/perf-123.map"));
        assert!(!is_perf_map("/tmp/perf-.map"));
        assert!(!is_perf_map("/tmp/perf-12x.map"));
    }

    #[test]
    fn v8_names() {
        let f = jit_function("JS:*hotLoop /tmp/app.js:1:17");
        assert_eq!(
            (f.name.as_str(), f.filename.as_str(), f.start_line),
            ("hotLoop", "/tmp/app.js", 1)
        );
        assert_eq!(jit_function("LazyCompile:~ /a.js:3:1").name, "(anonymous)");
        assert_eq!(jit_function("Builtin:ArrayPush").name, "Builtin:ArrayPush");
        assert_eq!(jit_function("py::f:/x.py").name, "py::f:/x.py");
    }

    #[test]
    fn perf_map_lookup() {
        let dir = std::env::temp_dir().join(format!("cpuprof-perfmap-{}", std::process::id()));
        std::fs::write(
            &dir,
            "1000 10 LazyCompile:~f a.js:1\n0x2000 20 g\nbad line\n",
        )
        .unwrap();
        let symbols = perf_map(dir.to_str().unwrap()).unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(lookup(&symbols, 0x1008), Some("LazyCompile:~f a.js:1"));
        assert_eq!(lookup(&symbols, 0x1010), None);
        assert_eq!(lookup(&symbols, 0x201f), Some("g"));
        assert_eq!(lookup(&symbols, 0xfff), None);
    }
}
