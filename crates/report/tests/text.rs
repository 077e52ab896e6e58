//! The text report on small hand-built profiles whose expected rows are
//! derived by hand from pprof's rules.

use cpuprof_profile::{cpu_sample_types, Function, Line, Profile, ProfileBuilder};
use cpuprof_report::output::text;
use cpuprof_report::{Granularity, Graph, Options, Stacks};
use regex::Regex;

/// Locations (address → inline chain of (function, line), innermost first).
fn profile(samples: &[(&[u64], i64)]) -> Profile {
    let mut b = ProfileBuilder::new(cpu_sample_types());
    let f = |b: &mut ProfileBuilder, name: &str, file: &str| {
        b.function(Function {
            name: name.into(),
            system_name: name.into(),
            filename: file.into(),
            start_line: 1,
        })
    };
    let main = f(&mut b, "main", "/src/main.c");
    let rec = f(&mut b, "recurse(int, double)", "/src/main.c");
    let burn = f(&mut b, "burn", "/src/burn.c");
    let helper = f(
        &mut b,
        "std::vector<int, std::allocator<int> >::at(unsigned long) const",
        "/usr/include/vector",
    );
    let table: &[(u64, &[(cpuprof_profile::FunctionId, i64)])] = &[
        (0x100, &[(main, 10)]),
        (0x200, &[(rec, 20)]),
        (0x300, &[(helper, 7), (burn, 30)]),
        (0x310, &[(burn, 31)]),
    ];
    for (addr, lines) in table {
        let id = b.location_at(*addr);
        b.profile.locations[id.index()].lines = lines
            .iter()
            .map(|&(function, line)| Line {
                function,
                line,
                column: 0,
            })
            .collect();
    }
    for (stack, count) in samples {
        let locs = stack.iter().map(|&a| b.location_at(a)).collect();
        b.add_sample(locs, vec![*count, *count * 1000]);
    }
    b.profile.default_sample_type = "samples".into();
    b.finish()
}

fn report(p: &Profile, options: &Options) -> String {
    let stacks = Stacks::build(p, options);
    let graph = Graph::build(&stacks, false);
    let mut out = Vec::new();
    text::write(&mut out, &stacks, &graph, options).unwrap();
    String::from_utf8(out).unwrap()
}

fn sample_profile() -> Profile {
    profile(&[
        (&[0x300, 0x200, 0x200, 0x200, 0x100], 6),
        (&[0x310, 0x200, 0x100], 3),
        (&[0x200, 0x100], 1),
    ])
}

#[test]
fn functions_with_recursion_counted_once_and_inline_frames() {
    let out = report(&sample_profile(), &Options::default());
    let expected = "\
Total: 10 samples
       6  60.0%  60.0%        6  60.0% std::vector::at
       3  30.0%  90.0%        9  90.0% burn
       1  10.0% 100.0%       10 100.0% recurse
       0   0.0% 100.0%       10 100.0% main
";
    assert_eq!(out, expected);
}

#[test]
fn sort_by_cum_ties_by_name() {
    let options = Options {
        cum: true,
        ..Options::default()
    };
    let out = report(&sample_profile(), &options);
    let names: Vec<&str> = out.lines().skip(1).map(|l| &l[39..]).collect();
    assert_eq!(names, ["main", "recurse", "burn", "std::vector::at"]);
}

#[test]
fn lines_files_and_addresses() {
    let p = sample_profile();
    let lines = report(
        &p,
        &Options {
            granularity: Granularity::Lines,
            full_names: true,
            ..Options::default()
        },
    );
    assert!(lines.contains("       6  60.0%  60.0%        6  60.0% std::vector<int, std::allocator<int> >::at(unsigned long) const /usr/include/vector:7\n"), "{lines}");
    assert!(
        lines.contains("       3  30.0%  90.0%        3  30.0% burn /src/burn.c:31\n"),
        "{lines}"
    );
    assert!(
        lines.contains("       0   0.0% 100.0%        6  60.0% burn /src/burn.c:30\n"),
        "{lines}"
    );
    let files = report(
        &p,
        &Options {
            granularity: Granularity::Files,
            ..Options::default()
        },
    );
    // main.c: main and recurse; recursion through two functions of one file counts once.
    assert!(
        files.contains("       1  10.0% 100.0%       10 100.0% /src/main.c\n"),
        "{files}"
    );
    assert!(
        files.contains("       3  30.0%  90.0%        9  90.0% /src/burn.c\n"),
        "{files}"
    );
    let addresses = report(
        &p,
        &Options {
            granularity: Granularity::Addresses,
            ..Options::default()
        },
    );
    assert!(addresses.contains("       6  60.0%  60.0%        6  60.0% 0000000000000300 std::vector::at /usr/include/vector:7\n"), "{addresses}");
    assert!(
        addresses.contains(
            "       0   0.0% 100.0%        6  60.0% 0000000000000300 burn /src/burn.c:30\n"
        ),
        "{addresses}"
    );
}

#[test]
fn focus_keeps_total_but_percentages_follow_the_focus() {
    let options = Options {
        focus: Some(Regex::new("^burn$").unwrap()),
        ..Options::default()
    };
    let out = report(&sample_profile(), &options);
    let expected = "\
Total: 10 samples
       6  66.7%  66.7%        6  66.7% std::vector::at
       3  33.3% 100.0%        9 100.0% burn
       0   0.0% 100.0%        9 100.0% main
       0   0.0% 100.0%        9 100.0% recurse
";
    assert_eq!(out, expected);
}

#[test]
fn focus_matches_file_line_and_address() {
    let by_line = Options {
        focus: Some(Regex::new("burn.c:31").unwrap()),
        ..Options::default()
    };
    assert!(report(&sample_profile(), &by_line)
        .contains("       3 100.0% 100.0%        3 100.0% burn\n"));
    let by_address = Options {
        ignore: Some(Regex::new("0x0000000000000300").unwrap()),
        ..Options::default()
    };
    let out = report(&sample_profile(), &by_address);
    assert!(!out.contains("std::vector::at"), "{out}");
    assert!(
        out.contains("       3  75.0%  75.0%        3  75.0% burn\n"),
        "{out}"
    );
}

#[test]
fn hide_removes_frames_not_samples() {
    let options = Options {
        hide: Some(Regex::new("^recurse").unwrap()),
        ..Options::default()
    };
    let out = report(&sample_profile(), &options);
    assert!(!out.contains("recurse"), "{out}");
    assert!(
        out.contains("       1  10.0% 100.0%       10 100.0% main\n"),
        "{out}"
    );
}

#[test]
fn nodecount_limits_rows() {
    let options = Options {
        nodecount: Some(2),
        ..Options::default()
    };
    assert_eq!(report(&sample_profile(), &options).lines().count(), 3);
}

#[test]
fn unsymbolized_addresses_print_as_pprof_does() {
    let p = profile(&[(&[0xdead, 0x100], 2)]);
    let out = report(&p, &Options::default());
    assert!(
        out.contains("       2 100.0% 100.0%        2 100.0% 0x000000000000dead\n"),
        "{out}"
    );
    let lines = report(
        &p,
        &Options {
            granularity: Granularity::Lines,
            ..Options::default()
        },
    );
    assert!(lines.contains("% 0x000000000000dead ??:0\n"), "{lines}");
}

#[test]
fn profiler_frames_and_duplicated_leaf_are_removed() {
    let mut p = profile(&[(&[0x310, 0x200, 0x100], 1)]);
    // Add a handler frame and the trampoline below the leaf, and the leaf
    // again as the unwinder sees it (adjusted by -1).
    let handler = p.functions.len();
    p.functions.push(Function {
        name: "CpuProfiler::prof_handler".into(),
        ..Function::default()
    });
    let trampoline = handler + 1;
    p.functions.push(Function {
        name: "__restore_rt".into(),
        ..Function::default()
    });
    let mut add = |address: u64, f: usize| {
        p.locations.push(cpuprof_profile::Location {
            address,
            mapping: None,
            lines: vec![Line {
                function: cpuprof_profile::FunctionId(f as u32),
                line: 0,
                column: 0,
            }],
            is_folded: false,
        });
        cpuprof_profile::LocationId((p.locations.len() - 1) as u32)
    };
    let h = add(0x900, handler);
    let t = add(0x950, trampoline);
    let dup = add(0x30f, 3);
    let s = &mut p.samples[0];
    let leaf = s.locations[0];
    s.locations = vec![leaf, h, t, dup, s.locations[1], s.locations[2]];
    let out = report(&p, &Options::default());
    let expected = "\
Total: 1 samples
       1 100.0% 100.0%        1 100.0% burn
       0   0.0% 100.0%        1 100.0% main
       0   0.0% 100.0%        1 100.0% recurse
";
    assert_eq!(out, expected);
}
