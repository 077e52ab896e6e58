//! Property tests of the legacy text readers: any heap, contention or Go
//! count profile written in the documented layout reads back with the
//! values the layout and pprof's un-sampling say, one sample per line with
//! its stack (return addresses minus one, leaf first); anything after a
//! header gives a valid profile or a one-line error naming a line.

use cpuprof_profile::{contention, gocount, heap, read_profile, Format, Profile};
use proptest::prelude::*;

/// Stacks of 1..6 return addresses, and per stack four counts
/// (inuse objects ≤ alloc objects, 1..4096-byte objects).
fn heap_rows() -> impl Strategy<Value = Vec<(Vec<u64>, i64, i64, i64)>> {
    prop::collection::vec(
        (
            prop::collection::vec(1u64..0x7fff_ffff_ffff, 1..6),
            0i64..1000,
            0i64..1000,
            1i64..4096,
        ),
        1..20,
    )
}

fn heap_text(kind: &str, rows: &[(Vec<u64>, i64, i64, i64)]) -> String {
    let line = |inuse: i64, alloc: i64, size: i64, stack: &str| {
        format!(
            "{inuse:6}: {:8} [{:6}: {:8}] @{stack}\n",
            inuse * size,
            inuse + alloc,
            (inuse + alloc) * size
        )
    };
    let inuse: i64 = rows.iter().map(|r| r.1).sum();
    let alloc: i64 = rows.iter().map(|r| r.1 + r.2).sum();
    let inuse_bytes: i64 = rows.iter().map(|r| r.1 * r.3).sum();
    let alloc_bytes: i64 = rows.iter().map(|r| (r.1 + r.2) * r.3).sum();
    let mut text =
        format!("heap profile: {inuse:6}: {inuse_bytes:8} [{alloc:6}: {alloc_bytes:8}] @ {kind}\n");
    for (stack, i, a, size) in rows {
        let stack: String = stack.iter().map(|a| format!(" {a:#x}")).collect();
        text.push_str(&line(*i, *a, *size, &stack));
    }
    text.push_str("\nMAPPED_LIBRARIES:\n0-7fffffffffff r-xp 00000000 08:01 9 /bin/app\n");
    text
}

fn addresses(p: &Profile, sample: usize) -> Vec<u64> {
    p.samples[sample]
        .locations
        .iter()
        .map(|&l| p.location(l).address)
        .collect()
}

proptest! {
    #[test]
    fn heapprofile_rows_read_back(rows in heap_rows()) {
        let text = heap_text("heapprofile", &rows);
        let (format, p) = read_profile(text.as_bytes(), &Default::default()).unwrap();
        prop_assert_eq!(format, Format::Heap);
        prop_assert_eq!(p.samples.len(), rows.len());
        let has_alloc = p.sample_types.len() == 4;
        for (i, (stack, inuse, alloc, size)) in rows.iter().enumerate() {
            let expected: Vec<i64> = if has_alloc {
                vec![inuse + alloc, (inuse + alloc) * size, *inuse, inuse * size]
            } else {
                vec![*inuse, inuse * size]
            };
            prop_assert_eq!(&p.samples[i].values, &expected);
            let adjusted: Vec<u64> = stack.iter().map(|a| a - 1).collect();
            prop_assert_eq!(addresses(&p, i), adjusted);
        }
        prop_assert!(p.locations.iter().all(|l| l.mapping.is_some()));
    }

    #[test]
    fn heap_v2_unsampling_only_grows_values(rows in heap_rows(), rate in 2i64..1_000_000) {
        let text = heap_text(&format!("heap_v2/{rate}"), &rows);
        let p = heap::read(text.as_bytes()).unwrap();
        let q = heap::read(heap_text("heapprofile", &rows).as_bytes()).unwrap();
        prop_assert_eq!(p.period, rate);
        for (s, t) in p.samples.iter().zip(&q.samples) {
            for (v, raw) in s.values.iter().zip(&t.values) {
                prop_assert!(v >= raw, "{} < {}", v, raw);
            }
        }
    }

    #[test]
    fn contention_values_follow_period_and_clock(
        rows in prop::collection::vec((0i64..1_000_000_000, 1i64..1000, prop::collection::vec(1u64..u64::MAX, 1..5)), 1..10),
        period in 1i64..1000,
        hz in 1_000_000i64..5_000_000_000,
    ) {
        let mut text = format!("--- contention\ncycles/second = {hz}\nsampling period = {period}\n");
        for (cycles, count, stack) in &rows {
            let stack: String = stack.iter().map(|a| format!(" {a:#x}")).collect();
            text.push_str(&format!("{cycles} {count} @{stack}\n"));
        }
        let p = contention::read(text.as_bytes()).unwrap();
        for (s, (cycles, count, _)) in p.samples.iter().zip(&rows) {
            prop_assert_eq!(s.values[0], count * period);
            let ns = (*cycles as f64 * period as f64 / (hz as f64 / 1e9)) as i64;
            prop_assert_eq!(s.values[1], ns);
        }
    }

    #[test]
    fn go_count_totals(rows in prop::collection::vec((1i64..100, prop::collection::vec(1u64..u64::MAX, 0..5)), 1..10)) {
        let total: i64 = rows.iter().map(|r| r.0).sum();
        let mut text = format!("goroutine profile: total {total}\n");
        for (count, stack) in &rows {
            let stack: String = stack.iter().map(|a| format!(" {a:#x}")).collect();
            text.push_str(&format!("{count} @{stack}\n#\t0x1\tmain.f+0x1\t/x.go:1\n\n"));
        }
        let p = gocount::read(text.as_bytes()).unwrap();
        prop_assert_eq!(p.totals(), vec![total]);
    }

    #[test]
    fn anything_after_a_header_is_a_profile_or_a_line_error(
        header in prop::sample::select(vec![
            "heap profile: 1: 2 [3: 4] @ heap_v2/524288\n",
            "heap profile: 1: 2 [1: 2] @ growthz\n",
            "--- contention:\ncycles/second=1000\n",
            "--- mutex:\nsampling period=5\n",
            "threadcreate profile: total 3\n",
        ]),
        body in "([0-9 :@\\[\\]x#a-f-]{0,40}\n){0,8}",
    ) {
        let text = format!("{header}{body}");
        match read_profile(text.as_bytes(), &Default::default()) {
            Ok((_, p)) => prop_assert!(p.validate().is_ok()),
            Err(e) => {
                let message = e.to_string();
                prop_assert!(!message.contains('\n'));
                prop_assert!(
                    message.contains("line ") || message.contains("beyond 2^63"),
                    "{}",
                    message
                );
            }
        }
    }
}
