//! Shared helpers of the symbolizer's integration tests: compiling the
//! workloads, running the reference tools (binutils `addr2line`, `nm`,
//! `c++filt`) and parsing what they print.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// True when `name` is on the PATH. When it is not, the test is skipped
/// with a loud message, unless `CPUPROF_REQUIRE_PEERS=1`, when it fails.
pub fn require_tool(name: &str) -> bool {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name} >/dev/null 2>&1"))
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if found {
        return true;
    }
    if std::env::var("CPUPROF_REQUIRE_PEERS").as_deref() == Ok("1") {
        panic!("required peer tool `{name}` is not installed");
    }
    eprintln!(
        "SKIPPED: `{name}` is not installed (set CPUPROF_REQUIRE_PEERS=1 to make this a failure)"
    );
    false
}

/// A file of `tests/workloads/`.
pub fn workload(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/workloads")
        .join(name)
}

/// Runs `program args`, panicking with its stderr when it fails; returns
/// its stdout.
pub fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Compiles `sources` with `compiler` (gcc or g++) and `flags` into `out`.
pub fn compile(compiler: &str, flags: &[&str], sources: &[&Path], out: &Path) {
    let mut args: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
    args.extend(sources.iter().map(|s| s.display().to_string()));
    args.push("-o".into());
    args.push(out.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(compiler, &args);
}

/// One frame as binutils `addr2line -f -i -C` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefFrame {
    /// The function, `??` when unknown.
    pub function: String,
    /// The file, `??` when unknown.
    pub file: String,
    /// The line, 0 when unknown (`?`).
    pub line: u32,
}

/// `addr2line -a -f -i -C -e binary` for `addresses` (file addresses):
/// the inline chain of each, innermost first.
pub fn addr2line(binary: &Path, addresses: &[u64]) -> Vec<Vec<RefFrame>> {
    let mut child = Command::new("addr2line")
        .args(["-a", "-f", "-i", "-C", "-e"])
        .arg(binary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run addr2line");
    let input: String = addresses.iter().map(|a| format!("{a:#x}\n")).collect();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("addr2line output");
    writer.join().unwrap().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let mut result: Vec<Vec<RefFrame>> = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.starts_with("0x") {
            result.push(Vec::new());
            continue;
        }
        let location = lines.next().unwrap_or("??:?");
        let location = match location.find(" (discriminator") {
            Some(i) => &location[..i],
            None => location,
        };
        let (file, number) = location.rsplit_once(':').unwrap_or((location, "?"));
        result
            .last_mut()
            .expect("addr2line output starts with an address")
            .push(RefFrame {
                function: line.to_string(),
                file: file.to_string(),
                line: number.trim().parse().unwrap_or(0),
            });
    }
    assert_eq!(
        result.len(),
        addresses.len(),
        "addr2line answered every address"
    );
    result
}

/// binutils (2.40) joins a DWARF 5 line table's relative directory 0 to
/// the compilation directory that it already is (`./debug/./debug/x.c`
/// for glibc's `./debug/x.c`); DWARF 5 says directory 0 *is* the
/// compilation directory, as gimli reads it. Undo the doubling.
pub fn undouble_path(path: &str) -> String {
    for k in 1..=path.len() / 2 {
        if path.is_char_boundary(k)
            && path.is_char_boundary(2 * k)
            && path[..k] == path[k..2 * k]
            && path[..k].ends_with('/')
        {
            return path[k..].to_string();
        }
    }
    path.to_string()
}

/// Function symbols as `nm -S --defined-only` lists them: (address, size,
/// mangled name), text symbols with a size only.
pub fn function_symbols(binary: &Path, dynamic: bool) -> Vec<(u64, u64, String)> {
    let mut args = vec!["-S", "--defined-only"];
    if dynamic {
        args.push("-D");
    }
    let path = binary.display().to_string();
    args.push(&path);
    run("nm", &args)
        .lines()
        .filter_map(|line| {
            let parts: Vec<&str> = line.split_whitespace().collect();
            if parts.len() != 4 || !matches!(parts[2], "T" | "t" | "W" | "w") {
                return None;
            }
            let address = u64::from_str_radix(parts[0], 16).ok()?;
            let size = u64::from_str_radix(parts[1], 16).ok()?;
            let name = parts[3].split('@').next().unwrap_or(parts[3]).to_string();
            (size > 0).then_some((address, size, name))
        })
        .collect()
}

/// The decoded DWARF line table as `readelf -W --debug-dump=decodedline`
/// prints it: (address, file base name, line (0 for an end of sequence),
/// compilation unit's file), sorted by address. A second oracle where
/// binutils' addr2line is known to be wrong about files (see
/// [`compare_frames`]).
pub struct LineTable(Vec<(u64, String, u32, String)>);

impl LineTable {
    pub fn read(path: &Path) -> LineTable {
        let text = run(
            "readelf",
            &[
                "-W",
                "--debug-dump=decodedline",
                &path.display().to_string(),
            ],
        );
        let mut rows = Vec::new();
        let mut unit = String::new();
        for line in text.lines() {
            if let Some(name) = line.strip_prefix("CU: ") {
                unit = name.trim_end_matches(':').to_string();
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 3 || !fields[2].starts_with("0x") {
                continue;
            }
            let Ok(address) = u64::from_str_radix(&fields[2][2..], 16) else {
                continue;
            };
            let number = fields[1].parse().unwrap_or(0);
            rows.push((address, fields[0].to_string(), number, unit.clone()));
        }
        // Stable: rows at one address keep their order, the last wins.
        rows.sort_by_key(|r| r.0);
        LineTable(rows)
    }

    /// The (file base name, line, unit file) of the row covering `address`.
    pub fn at(&self, address: u64) -> Option<(&str, u32, &str)> {
        let i = self.0.partition_point(|r| r.0 <= address);
        let row = self.0.get(i.checked_sub(1)?)?;
        (row.2 != 0).then_some((row.1.as_str(), row.2, row.3.as_str()))
    }
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Compares our inline chain at each file address with addr2line's;
/// returns the number of frames compared and a description of each
/// difference.
///
/// Two binutils 2.40 defects are recognised and checked another way
/// rather than copied:
/// - the innermost frame of an inline chain whose function has no linkage
///   name (a static or `extern "C"` function inlined in C++ code) is named
///   after the symbol enclosing the address (`compute(int)` for an inlined
///   `mix`); we keep the DWARF name;
/// - with gcc 12's DWARF 5 line tables (file 0 is the unit's own file,
///   file 1 the first other entry), addr2line reads the row's file 1 as
///   the unit's file and prints the unit's file with the row's line
///   (`strtold_l.c:45` for `rounding-mode.h:45`, and for glibc's wrappers
///   `sysdeps/wordsize-64/strtol.c` for `stdlib/strtol.c`); where only the
///   file of the innermost frame differs, addr2line's must be the unit's
///   file and ours must have the base name `readelf
///   --debug-dump=decodedline` shows for the address.
///
/// One naming rule of ours differs from addr2line by design: of several
/// symbols at one address, a C function is named by the public one
/// (`snprintf`, where glibc's DWARF says `__GI___snprintf`). A function
/// name differing only so is accepted when `nm` lists both names at one
/// address of the file holding the symbols.
pub fn compare_frames(
    binary: &cpuprof_symbolize::Binary,
    path: &Path,
    addresses: &[u64],
) -> (usize, Vec<String>) {
    let reference = addr2line(path, addresses);
    let mut line_table: Option<LineTable> = None;
    let dwarf_file = binary.debug_path().unwrap_or(path).to_path_buf();
    let mut compared = 0;
    let mut mismatches = Vec::new();
    let mut aliases: Option<std::collections::HashMap<String, Vec<u64>>> = None;
    let mut same_function = |ours: &str, theirs: &str| -> bool {
        let table = aliases.get_or_insert_with(|| {
            let mut table: std::collections::HashMap<String, Vec<u64>> = Default::default();
            for (address, _, name) in function_symbols(&dwarf_file, false)
                .into_iter()
                .chain(function_symbols(path, true))
            {
                table.entry(name).or_default().push(address);
            }
            table
        });
        let ours = ours.split('@').next().unwrap_or(ours);
        match (table.get(ours), table.get(theirs)) {
            (Some(a), Some(b)) => a.iter().any(|x| b.contains(x)),
            _ => false,
        }
    };
    for (&address, expected) in addresses.iter().zip(&reference) {
        let ours: Vec<RefFrame> = binary
            .frames(address)
            .into_iter()
            .map(|f| RefFrame {
                function: f.function,
                file: if f.file.is_empty() {
                    "??".into()
                } else {
                    f.file
                },
                line: f.line,
            })
            .collect();
        let expected: Vec<RefFrame> = expected
            .iter()
            .map(|f| RefFrame {
                // An empty DWARF file name prints as `:?`.
                file: if f.file.is_empty() {
                    "??".into()
                } else {
                    undouble_path(&f.file)
                },
                ..f.clone()
            })
            .collect();
        // addr2line prints one `??` frame for an address it knows nothing of.
        let unknown =
            expected.len() == 1 && expected[0].function == "??" && expected[0].file == "??";
        if unknown && ours.is_empty() {
            compared += 1;
            continue;
        }
        compared += expected.len();
        if ours == expected {
            continue;
        }
        let mut explained = ours.len() == expected.len();
        for (i, (a, b)) in ours.iter().zip(&expected).enumerate() {
            if !explained {
                break;
            }
            if a.function != b.function {
                let enclosing = binary.symbol_at(address).map(|s| s.demangled().to_string());
                explained =
                    (i == 0 && ours.len() > 1 && enclosing.as_deref() == Some(b.function.as_str()))
                        || same_function(&a.function, &b.function);
            }
            if explained && (a.file != b.file || a.line != b.line) {
                explained = i == 0 && a.line == b.line && {
                    let table = line_table.get_or_insert_with(|| LineTable::read(&dwarf_file));
                    match table.at(address) {
                        Some((row_file, row_line, unit)) => {
                            row_file == base_name(&a.file)
                                && row_line == a.line
                                && base_name(&b.file) == base_name(unit)
                        }
                        None => false,
                    }
                };
            }
        }
        if !explained {
            mismatches.push(format!(
                "{address:#x}:\n  ours:      {ours:?}\n  addr2line: {expected:?}"
            ));
        }
    }
    (compared, mismatches)
}
