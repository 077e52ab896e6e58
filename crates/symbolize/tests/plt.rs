//! PLT stubs and stripped code against binutils: every stub `objdump -d`
//! labels `name@plt` (in a PIE, a non-PIE executable, a shared library
//! built at test time, and the system's libc and libstdc++) is named so
//! by [`Binary::symbol_at`] at its first byte and inside its jump; and in a stripped
//! library each address no symbol covers is named after the FDE
//! `readelf --debug-dump=frames` lists around it.

mod common;

use std::path::Path;

use common::*;
use cpuprof_symbolize::{Binary, Options};

const SOURCE: &str = r#"
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
char buf[64];
static int __attribute__((noinline)) helper(int x) { return x * 3 + (int)strlen(buf); }
int lib_entry(int n) {
    memset(buf, 'a', (size_t)n % 60);
    snprintf(buf, sizeof buf, "%d", helper(n));
    return (int)strlen(buf) + atoi(buf) + helper(n + 1);
}
"#;

/// (address, label) of each `<x@plt>:` objdump prints, and the address
/// after each stub (the next label's).
fn objdump_stubs(path: &Path) -> Vec<(u64, String, u64)> {
    let out = run("objdump", &["-d", &path.display().to_string()]);
    let labels: Vec<(u64, String)> = out
        .lines()
        .filter_map(|l| {
            let label = l.trim_end().strip_suffix(">:")?;
            let (address, name) = label.split_once(" <")?;
            Some((u64::from_str_radix(address, 16).ok()?, name.to_string()))
        })
        .collect();
    labels
        .windows(2)
        .filter(|w| w[0].1.ends_with("@plt"))
        .map(|w| (w[0].0, w[0].1.clone(), w[1].0))
        .collect()
}

fn check_stubs(path: &Path) -> usize {
    let binary = Binary::open(path, &Options::default()).unwrap();
    let stubs = objdump_stubs(path);
    for (start, label, next) in &stubs {
        // Its first byte and one inside its jump (stubs are 8 or 16 bytes).
        let inside = (*next).min(start + 6) - 1;
        for address in [*start, inside] {
            let name = binary.symbol_at(address).map(|s| s.name().to_string());
            assert_eq!(
                name.as_deref(),
                Some(label.as_str()),
                "{}: {address:#x}",
                path.display()
            );
        }
    }
    stubs.len()
}

#[test]
fn plt_stubs_are_named_as_objdump_labels_them() {
    if !require_tool("gcc") || !require_tool("objdump") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("plt.c");
    std::fs::write(
        &source,
        format!("{SOURCE}\nint main(int c, char **v) {{ return lib_entry(c); }}\n"),
    )
    .unwrap();
    let lib_source = dir.path().join("pltlib.c");
    std::fs::write(&lib_source, SOURCE).unwrap();
    let builds: [(&str, Vec<&str>, &Path); 3] = [
        ("pie", vec!["-O1", "-fno-builtin", "-pie", "-fPIE"], &source),
        ("nopie", vec!["-O1", "-fno-builtin", "-no-pie"], &source),
        (
            "libplt.so",
            vec!["-O1", "-fno-builtin", "-shared", "-fPIC"],
            &lib_source,
        ),
    ];
    for (name, flags, src) in builds {
        let out = dir.path().join(name);
        compile("gcc", &flags, &[src], &out);
        assert!(check_stubs(&out) >= 3, "{name}: stubs named");
    }
    for system in [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
    ] {
        if Path::new(system).exists() {
            assert!(check_stubs(Path::new(system)) > 0, "{system}");
        }
    }
}

#[test]
fn stripped_code_is_named_after_its_fde() {
    if !require_tool("gcc") || !require_tool("strip") || !require_tool("readelf") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("pltlib.c");
    std::fs::write(&source, SOURCE).unwrap();
    let lib = dir.path().join("libstripped.so");
    compile(
        "gcc",
        &["-O2", "-shared", "-fPIC", "-fvisibility=hidden"],
        &[&source],
        &lib,
    );
    run("strip", &["--strip-all", &lib.display().to_string()]);
    let binary = Binary::open(&lib, &Options::default()).unwrap();
    let frames = run(
        "readelf",
        &["-W", "--debug-dump=frames", &lib.display().to_string()],
    );
    let mut checked = 0;
    for line in frames.lines().filter(|l| l.contains(" FDE ")) {
        let Some((a, b)) = line
            .split("pc=")
            .nth(1)
            .and_then(|r| r.trim().split_once(".."))
        else {
            continue;
        };
        let (start, end) = (
            u64::from_str_radix(a, 16).unwrap(),
            u64::from_str_radix(b, 16).unwrap(),
        );
        for address in [start, (start + end) / 2, end - 1] {
            if binary.symbol_at(address).is_some() {
                continue; // lib_entry (exported) and the PLT stubs
            }
            let frames = binary.frames(address);
            assert_eq!(frames.len(), 1, "{address:#x}");
            assert_eq!(frames[0].function, format!("libstripped.so+0x{start:x}"));
            checked += 1;
        }
    }
    assert!(checked >= 3, "the static helper is checked: {checked}");
}
