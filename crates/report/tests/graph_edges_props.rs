//! `Graph::edges_among` (what the call graph counts) gives exactly the
//! edges of `Graph::build` between the chosen frames, on random profiles
//! with recursion, for both the dense and the sparse counting.

use cpuprof_profile::{cpu_sample_types, Function, Line, Profile, ProfileBuilder};
use cpuprof_report::{FrameId, Graph, Options, Stacks};
use proptest::prelude::*;

/// `functions` functions, one location each (address 0x100 * (i + 1)),
/// and the given stacks (leaf first, as function indexes).
fn profile(functions: usize, samples: &[(Vec<usize>, i64)]) -> Profile {
    let mut b = ProfileBuilder::new(cpu_sample_types());
    let mut locations = Vec::new();
    for i in 0..functions {
        let name = format!("f{i}");
        let function = b.function(Function {
            name: name.clone(),
            system_name: name,
            filename: "/src/f.c".into(),
            start_line: 1,
        });
        let id = b.location_at(0x100 * (i as u64 + 1));
        b.profile.locations[id.index()].lines = vec![Line {
            function,
            line: i as i64 + 1,
            column: 0,
        }];
        locations.push(id);
    }
    for (stack, value) in samples {
        let locs = stack.iter().map(|&f| locations[f]).collect();
        b.add_sample(locs, vec![*value, *value * 1000]);
    }
    b.profile.default_sample_type = "samples".into();
    b.finish()
}

/// Stacks (leaf first, function indexes) and their values.
type Samples = Vec<(Vec<usize>, i64)>;

fn case(max_functions: usize) -> impl Strategy<Value = (usize, Samples, Vec<bool>)> {
    (2..max_functions).prop_flat_map(|n| {
        (
            Just(n),
            prop::collection::vec((prop::collection::vec(0..n, 1..12), -5i64..1000), 0..60),
            prop::collection::vec(any::<bool>(), n),
        )
    })
}

fn check(n: usize, samples: &[(Vec<usize>, i64)], keep: &[bool]) -> Result<(), TestCaseError> {
    let p = profile(n, samples);
    let stacks = Stacks::build(&p, &Options::default());
    let full = Graph::build(&stacks, true);
    let kept: Vec<FrameId> = (0..stacks.frames.len())
        .map(|i| FrameId(i as u32))
        .filter(|f| {
            let name = &stacks.frame(*f).name;
            keep[name[1..].parse::<usize>().unwrap()]
        })
        .collect();
    if n > 256 {
        prop_assert!(kept.len() > 256, "the sparse path: {} kept", kept.len());
    }
    let expected: Vec<_> = full
        .edges
        .iter()
        .filter(|e| kept.contains(&e.caller) && kept.contains(&e.callee) && e.weight != 0)
        .copied()
        .collect();
    prop_assert_eq!(Graph::edges_among(&stacks, &kept), expected);
    Ok(())
}

proptest! {
    #[test]
    fn dense_counts_equal_the_full_graphs_edges((n, samples, keep) in case(12)) {
        check(n, &samples, &keep)?;
    }

    #[test]
    fn sparse_counts_equal_the_full_graphs_edges(
        samples in prop::collection::vec(
            (prop::collection::vec(0..400usize, 1..12), 1i64..1000),
            200..260,
        ),
        dropped in prop::collection::vec(0..400usize, 0..20),
    ) {
        let mut keep = vec![true; 400];
        for d in dropped {
            keep[d] = false;
        }
        check(400, &samples, &keep)?;
    }
}
