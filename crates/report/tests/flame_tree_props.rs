//! Properties of the merged frame tree on random stacks, checked against a
//! brute-force sum over the input.

use cpuprof_report::output::flame::{FlameInput, FrameTree};
use proptest::prelude::*;

/// Stacks over a small alphabet, so that paths share prefixes and merge.
fn stacks() -> impl Strategy<Value = Vec<(Vec<String>, i64)>> {
    let frame =
        prop::sample::select(vec!["a", "b", "c", "main", "all", "x::y<z>"]).prop_map(String::from);
    prop::collection::vec((prop::collection::vec(frame, 0..6), 0i64..1000), 0..40)
}

fn input_of(stacks: &[(Vec<String>, i64)]) -> FlameInput {
    let mut input = FlameInput::new("p", "samples", 0);
    for (frames, value) in stacks {
        input.add_stack_names(frames, *value, None);
        input.total += value;
    }
    input
}

proptest! {
    #[test]
    fn every_frame_is_the_sum_of_the_stacks_through_it(stacks in stacks()) {
        let tree = FrameTree::build(&input_of(&stacks)).unwrap();
        let nodes = tree.nodes();
        prop_assert_eq!(nodes[0].value, stacks.iter().map(|s| s.1).sum::<i64>());
        // The path of every node, from the depths in preorder.
        let mut path: Vec<String> = Vec::new();
        for (i, node) in nodes.iter().enumerate().skip(1) {
            path.truncate(node.depth as usize - 1);
            path.push(tree.name_of(i).to_string());
            let through: i64 = stacks
                .iter()
                .filter(|(frames, _)| frames.len() >= path.len() && frames[..path.len()] == path[..])
                .map(|s| s.1)
                .sum();
            prop_assert_eq!(node.value, through, "{:?}", path);
            prop_assert!(node.value > 0, "zero frames are not kept: {:?}", path);
        }
    }

    #[test]
    fn children_are_sorted_contiguous_and_inside_their_parent(stacks in stacks()) {
        let tree = FrameTree::build(&input_of(&stacks)).unwrap();
        let nodes = tree.nodes();
        for i in 0..nodes.len() {
            let end = nodes[i].end as usize;
            // The subtree: the following nodes deeper than this one.
            let deeper = nodes[i + 1..].iter().take_while(|n| n.depth > nodes[i].depth).count();
            prop_assert_eq!(end, i + 1 + deeper);
            let children: Vec<usize> = tree.children(i).collect();
            let mut start = nodes[i].start;
            for pair in children.windows(2) {
                prop_assert!(tree.name_of(pair[0]) < tree.name_of(pair[1]));
            }
            for &c in &children {
                prop_assert_eq!(nodes[c].depth, nodes[i].depth + 1);
                prop_assert_eq!(nodes[c].start, start);
                start += nodes[c].value;
            }
            prop_assert!(start <= nodes[i].start + nodes[i].value);
        }
    }

    #[test]
    fn the_order_of_the_stacks_does_not_matter(stacks in stacks(), seed in any::<u64>()) {
        let mut shuffled = stacks.clone();
        // A deterministic shuffle from the seed.
        let mut s = seed | 1;
        for i in (1..shuffled.len()).rev() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            shuffled.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let a = FrameTree::build(&input_of(&stacks)).unwrap();
        let b = FrameTree::build(&input_of(&shuffled)).unwrap();
        prop_assert_eq!(a.nodes(), b.nodes());
        prop_assert_eq!(a.names(), b.names());
    }
}

proptest! {
    /// Pruning while building keeps exactly the frames of the full tree
    /// that are at least the fraction of the root (a frame is never wider
    /// than its parent, so they form a tree), with the same values, and
    /// counts the rest.
    #[test]
    fn pruned_tree_is_the_full_tree_without_the_narrow_frames(
        stacks in stacks(),
        fraction in prop::sample::select(vec![0.0, 0.001, 0.05, 0.2, 0.5]),
    ) {
        let input = input_of(&stacks);
        let full = FrameTree::build(&input).unwrap();
        let pruned = FrameTree::build_pruned(&input, fraction).unwrap();
        let min = fraction * full.root_value() as f64;
        let describe = |tree: &FrameTree, i: usize| {
            let n = &tree.nodes()[i];
            (n.depth, tree.name_of(i).to_string(), n.value, n.base)
        };
        let expected: Vec<_> = (0..full.len())
            .filter(|&i| i == 0 || full.nodes()[i].value as f64 >= min)
            .map(|i| describe(&full, i))
            .collect();
        let got: Vec<_> = (0..pruned.len()).map(|i| describe(&pruned, i)).collect();
        prop_assert_eq!(&got, &expected);
        prop_assert_eq!(pruned.pruned(), full.len() - expected.len());
        // Children still lie inside their parent.
        for i in 0..pruned.len() {
            let children: i64 = pruned.children(i).map(|c| pruned.nodes()[c].value).sum();
            prop_assert!(children <= pruned.nodes()[i].value);
        }
    }
}
