//! The merged frame tree: every stack's frames, root first, merged by name
//! path, children sorted by name, laid out in preorder.

use rayon::prelude::*;

use super::{FlameError, FlameInput, ROOT_NAME};

/// A frame of the merged tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameNode {
    /// Index of the frame's name in [`FrameTree::names`].
    pub name: u32,
    /// The sum of the values of the stacks through this frame.
    pub value: i64,
    /// The same sum in the base profile (0 unless a diff).
    pub base: i64,
    /// Distance from the root (the root is 0).
    pub depth: u32,
    /// Where the frame starts, in value units from the root's left edge:
    /// children start at their parent's start and follow each other in
    /// name order.
    pub start: i64,
    /// One past the index of the frame's last descendant: the frame's
    /// subtree is `nodes[i..end]`.
    pub end: u32,
}

/// Stacks merged into a tree of frames, in preorder with children sorted by
/// name; node 0 is the root, named [`ROOT_NAME`].
#[derive(Clone, Debug)]
pub struct FrameTree {
    /// Distinct frame names, sorted.
    names: Vec<String>,
    nodes: Vec<FrameNode>,
    diff: bool,
    /// Frames left out by [`FrameTree::build_pruned`].
    pruned: usize,
}

impl FrameTree {
    /// Merges the stacks of `input`. Takes time linear in the total number
    /// of frames, plus sorting the distinct names and the distinct stacks.
    pub fn build(input: &FlameInput) -> Result<FrameTree, FlameError> {
        FrameTree::build_pruned(input, 0.0)
    }

    /// Like [`FrameTree::build`], leaving out every frame whose value is
    /// below `min_fraction` of the root's, with its descendants (narrower
    /// still); [`FrameTree::pruned`] says how many. The space they took
    /// stays in their parent, after its kept children. A frame is dropped
    /// as soon as its last stack has been merged, so the tree never holds
    /// much more than what is kept: on a big profile of distinct stacks,
    /// that is the difference between millions of frames and thousands.
    pub fn build_pruned(input: &FlameInput, min_fraction: f64) -> Result<FrameTree, FlameError> {
        // Rank the names: the tree stores ranks, so sorting children by name
        // is an integer sort, and equal names (whatever their ids) merge.
        let mut order: Vec<u32> = (0..input.names.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| input.names[a as usize].cmp(&input.names[b as usize]));
        let mut names: Vec<String> = Vec::with_capacity(order.len() + 1);
        let mut rank_of_id = vec![0u32; input.names.len()];
        let mut root_rank = None;
        for &id in &order {
            let name = &input.names[id as usize];
            if root_rank.is_none() && name.as_str() > ROOT_NAME {
                root_rank = Some(names.len() as u32);
                names.push(ROOT_NAME.to_string());
            }
            if names.last() != Some(name) {
                names.push(name.clone());
            }
            rank_of_id[id as usize] = names.len() as u32 - 1;
            if name == ROOT_NAME {
                root_rank = Some(names.len() as u32 - 1);
            }
        }
        let root_rank = root_rank.unwrap_or_else(|| {
            names.push(ROOT_NAME.to_string());
            names.len() as u32 - 1
        });

        let diff = input.is_diff();
        // The stacks as name ranks, sorted: in lexicographic order of their
        // paths, a stack shares with the previous one exactly the prefix
        // the tree shares (all of it when they are equal, which sums them),
        // and new frames appear in preorder with children in name order. So
        // the tree is built in one pass with no lookups, and is already
        // laid out. When the input's names were interned in sorted order
        // (as `input_from_stacks` does), its ids compare as the ranks do:
        // the paths are read in place and mapped to ranks only for the
        // frames kept.
        let ids_are_ordered = input.names.windows(2).all(|w| w[0] < w[1]);
        let mut own_ranks: Vec<u32> = Vec::new();
        let mut sorted: Vec<(u32, u32, i64, i64)> = Vec::with_capacity(input.stacks.len());
        for (index, stack) in input.stacks.iter().enumerate() {
            let base = stack.base.unwrap_or(0);
            for v in [stack.value, base] {
                if v < 0 {
                    return Err(FlameError::NegativeValue {
                        stack: index,
                        value: v,
                    });
                }
            }
            if stack.value == 0 && base == 0 {
                continue;
            }
            let frames = input.frames_of(stack);
            let at = if ids_are_ordered {
                stack.at
            } else {
                let at = u32::try_from(own_ranks.len()).map_err(|_| FlameError::Overflow)?;
                own_ranks.extend(frames.iter().map(|&id| rank_of_id[id as usize]));
                at
            };
            sorted.push((at, frames.len() as u32, stack.value, base));
        }
        let ranks: &[u32] = if ids_are_ordered {
            &input.frames
        } else {
            &own_ranks
        };
        let to_rank = |x: u32| {
            if ids_are_ordered {
                rank_of_id[x as usize]
            } else {
                x
            }
        };
        let path_of =
            |&(at, len, _, _): &(u32, u32, i64, i64)| &ranks[at as usize..(at + len) as usize];
        // Sorting compares paths that mostly share a long prefix: every
        // stack shares the first `common` frames, and as many of the next
        // as fit are packed into a key kept beside the stack (each frame
        // its id plus one, 0 past the stack's end), so that most
        // comparisons read no path at all.
        let common = sorted.first().map_or(0, |first| {
            sorted
                .par_iter()
                .map(|s| common_prefix(path_of(first), path_of(s)))
                .min()
                .unwrap_or(0)
        });
        let bits = u128::BITS - (input.names.len() as u128 + 1).leading_zeros();
        let key_frames = (u128::BITS / bits) as usize;
        let mut sorted: Vec<(u128, (u32, u32, i64, i64))> = sorted
            .into_par_iter()
            .map(|s| {
                let path = path_of(&s);
                let mut key = 0u128;
                for d in common..common + key_frames {
                    key = key << bits | path.get(d).map_or(0, |&x| u128::from(x) + 1);
                }
                (key, s)
            })
            .collect();
        let beyond_key = common + key_frames;
        sorted.par_sort_unstable_by(|(ka, a), (kb, b)| {
            ka.cmp(kb).then_with(|| {
                let (a, b) = (path_of(a), path_of(b));
                a[beyond_key.min(a.len())..].cmp(&b[beyond_key.min(b.len())..])
            })
        });
        let sorted: Vec<(u32, u32, i64, i64)> = sorted.into_par_iter().map(|(_, s)| s).collect();
        // How much of each stack the next one shares: with what it shares
        // with the previous one, the frames beyond both are its own, a
        // chain as wide as its value, to be pruned whole if that is below
        // the limit (most of a big profile of distinct stacks).
        let shared_with_next: Vec<u32> = (0..sorted.len())
            .into_par_iter()
            .map(|i| match sorted.get(i + 1) {
                Some(next) => common_prefix(path_of(&sorted[i]), path_of(next)) as u32,
                None => 0,
            })
            .collect();

        let root_value = sorted
            .iter()
            .try_fold(0i64, |sum, s| sum.checked_add(s.2))
            .ok_or(FlameError::Overflow)?;
        let min_value = min_fraction * root_value as f64;
        let mut nodes: Vec<FrameNode> = vec![FrameNode {
            name: root_rank,
            value: 0,
            base: 0,
            depth: 0,
            start: 0,
            end: 0,
        }];
        let mut pruned = 0usize;
        // The current path: node indexes, root first. Closing a frame adds
        // its sums to its parent; its subtree is then the tail of `nodes`
        // (preorder), which pruning cuts off.
        let mut path: Vec<u32> = vec![0];
        let close = |nodes: &mut Vec<FrameNode>,
                     path: &mut Vec<u32>,
                     keep: usize|
         -> Result<usize, FlameError> {
            let mut pruned = 0;
            while path.len() > keep {
                let index = path.pop().unwrap_or(0) as usize;
                let (value, base) = (nodes[index].value, nodes[index].base);
                let parent = &mut nodes[*path.last().unwrap_or(&0) as usize];
                parent.value = parent
                    .value
                    .checked_add(value)
                    .ok_or(FlameError::Overflow)?;
                parent.base = parent.base.checked_add(base).ok_or(FlameError::Overflow)?;
                if (value as f64) < min_value {
                    pruned += nodes.len() - index;
                    nodes.truncate(index);
                }
            }
            Ok(pruned)
        };
        let mut previous: &[u32] = &[];
        for (stack, &next) in sorted.iter().zip(&shared_with_next) {
            let frames = path_of(stack);
            let shared = common_prefix(frames, previous);
            pruned += close(&mut nodes, &mut path, shared + 1)?;
            let own = shared.max(next as usize);
            let kept = if own < frames.len() && (stack.2 as f64) < min_value {
                pruned += frames.len() - own;
                &frames[..own]
            } else {
                frames
            };
            for &name in &kept[shared..] {
                let index = u32::try_from(nodes.len())
                    .ok()
                    .filter(|&i| i != u32::MAX)
                    .ok_or(FlameError::Overflow)?;
                nodes.push(FrameNode {
                    name: to_rank(name),
                    value: 0,
                    base: 0,
                    depth: path.len() as u32,
                    start: 0,
                    end: 0,
                });
                path.push(index);
            }
            // The stack's own frame (or the last one kept); its ancestors
            // get it when it closes.
            let last = &mut nodes[*path.last().unwrap_or(&0) as usize];
            last.value = last
                .value
                .checked_add(stack.2)
                .ok_or(FlameError::Overflow)?;
            last.base = last.base.checked_add(stack.3).ok_or(FlameError::Overflow)?;
            previous = kept;
        }
        pruned += close(&mut nodes, &mut path, 1)?;
        // Each node's parent: the last open node one level up.
        let mut parent_of: Vec<u32> = vec![u32::MAX; nodes.len()];
        let mut open: Vec<u32> = Vec::new();
        for i in 0..nodes.len() {
            open.truncate(nodes[i].depth as usize);
            if let Some(&parent) = open.last() {
                parent_of[i] = parent;
            }
            open.push(i as u32);
        }
        // Starts (each child after its earlier siblings, from its parent's
        // start) and subtree ends, with the nodes in preorder.
        let mut cursor: Vec<i64> = vec![0; nodes.len()];
        for i in 1..nodes.len() {
            let parent = parent_of[i] as usize;
            nodes[i].start = cursor[parent];
            cursor[parent] += nodes[i].value;
            cursor[i] = nodes[i].start;
        }
        let mut size = vec![1u32; nodes.len()];
        for i in (1..nodes.len()).rev() {
            size[parent_of[i] as usize] += size[i];
        }
        for (i, node) in nodes.iter_mut().enumerate() {
            node.end = i as u32 + size[i];
        }
        Ok(FrameTree {
            names,
            nodes,
            diff,
            pruned,
        })
    }

    /// How many frames [`FrameTree::build_pruned`] left out.
    /// (Frames whose stacks' values are all zero are not counted.)
    pub fn pruned(&self) -> usize {
        self.pruned
    }

    /// The frames in preorder; node 0 is the root.
    pub fn nodes(&self) -> &[FrameNode] {
        &self.nodes
    }

    /// The number of frames, the root included.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Always false: the tree has at least its root.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Distinct frame names, sorted; [`FrameNode::name`] indexes it.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The name of the frame at `index`.
    pub fn name_of(&self, index: usize) -> &str {
        &self.names[self.nodes[index].name as usize]
    }

    /// The root's value: the sum of all the stacks.
    pub fn root_value(&self) -> i64 {
        self.nodes[0].value
    }

    /// True when the input had base values.
    pub fn is_diff(&self) -> bool {
        self.diff
    }

    /// The children of the frame at `index`, in name order.
    pub fn children(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        let end = self.nodes[index].end as usize;
        let mut next = index + 1;
        std::iter::from_fn(move || {
            if next >= end {
                return None;
            }
            let child = next;
            next = self.nodes[child].end as usize;
            Some(child)
        })
    }

    /// The frame reached from the root through `path` (names, root's child
    /// first), if any.
    pub fn find(&self, path: &[&str]) -> Option<usize> {
        let mut at = 0;
        for name in path {
            at = self.children(at).find(|&c| self.name_of(c) == *name)?;
        }
        Some(at)
    }
}

/// The length of the longest common prefix of `a` and `b`.
fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(stacks: &[(&str, i64)]) -> FlameInput {
        let mut input = FlameInput::new("test", "samples", 0);
        for (stack, value) in stacks {
            let frames: Vec<&str> = stack.split(';').filter(|f| !f.is_empty()).collect();
            input.add_stack_names(&frames, *value, None);
            input.total += value;
        }
        input
    }

    /// The tree as `depth name value start` lines, for exact comparisons.
    fn dump(tree: &FrameTree) -> Vec<String> {
        (0..tree.len())
            .map(|i| {
                let n = tree.nodes()[i];
                format!("{} {} {} {}", n.depth, tree.name_of(i), n.value, n.start)
            })
            .collect()
    }

    #[test]
    fn ids_interned_in_name_order_build_the_same_tree() {
        // Read in place when the ids are in name order (as
        // input_from_stacks interns them), ranked otherwise: same tree,
        // same pruning.
        let stacks = [
            ("main;b;c", 3),
            ("main;a", 2),
            ("main;b", 1),
            ("x;a;c", 1),
            ("main;b;c;d", 1),
            ("all;main", 1),
        ];
        let unordered = input(&stacks);
        assert!(unordered.names.windows(2).any(|w| w[0] > w[1]));
        let mut ordered = FlameInput::new("test", "samples", 0);
        let mut names: Vec<&str> = stacks.iter().flat_map(|(s, _)| s.split(';')).collect();
        names.sort_unstable();
        names.dedup();
        for name in &names {
            ordered.frame_name(name);
        }
        for (stack, value) in &stacks {
            let frames: Vec<&str> = stack.split(';').collect();
            ordered.add_stack_names(&frames, *value, None);
            ordered.total += value;
        }
        for min in [0.0, 0.15, 0.3] {
            let a = FrameTree::build_pruned(&unordered, min).unwrap();
            let b = FrameTree::build_pruned(&ordered, min).unwrap();
            assert_eq!(dump(&a), dump(&b), "{min}");
            assert_eq!(a.pruned(), b.pruned(), "{min}");
            assert_eq!(a.names(), b.names());
        }
    }

    #[test]
    fn merges_stacks_by_path_with_children_in_name_order() {
        let tree = FrameTree::build(&input(&[
            ("main;work;burn_b", 3),
            ("main;work;burn_a", 5),
            ("main;burn_a", 1),
            ("main;work;burn_b", 2),
            ("main", 4),
            ("thread;work", 7),
        ]))
        .unwrap();
        assert_eq!(
            dump(&tree),
            [
                "0 all 22 0",
                "1 main 15 0",
                "2 burn_a 1 0",
                "2 work 10 1",
                "3 burn_a 5 1",
                "3 burn_b 5 6",
                "1 thread 7 15",
                "2 work 7 15",
            ]
        );
        let ends: Vec<u32> = tree.nodes().iter().map(|n| n.end).collect();
        assert_eq!(ends, [8, 6, 3, 6, 5, 6, 8, 8]);
        assert_eq!(tree.find(&["main", "work", "burn_b"]), Some(5));
        assert_eq!(tree.find(&["main", "nope"]), None);
        assert_eq!(tree.children(1).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(
            tree.names(),
            ["all", "burn_a", "burn_b", "main", "thread", "work"]
        );
    }

    #[test]
    fn stack_order_does_not_matter() {
        let stacks = [
            ("main;b;c", 1),
            ("main;a", 2),
            ("z;y;x", 3),
            ("main;b", 4),
            ("a;b", 5),
        ];
        let forward = FrameTree::build(&input(&stacks)).unwrap();
        let mut reversed = stacks;
        reversed.reverse();
        let backward = FrameTree::build(&input(&reversed)).unwrap();
        assert_eq!(dump(&forward), dump(&backward));
        assert_eq!(forward.nodes(), backward.nodes());
    }

    #[test]
    fn a_function_named_like_the_root_is_an_ordinary_frame() {
        let tree = FrameTree::build(&input(&[("all;b", 2), ("a", 1), ("b", 1)])).unwrap();
        assert_eq!(
            dump(&tree),
            ["0 all 4 0", "1 a 1 0", "1 all 2 1", "2 b 2 1", "1 b 1 3"]
        );
        assert_eq!(tree.names(), ["a", "all", "b"]);
    }

    #[test]
    fn empty_stacks_count_at_the_root_and_zero_stacks_are_dropped() {
        let tree = FrameTree::build(&input(&[("", 3), ("f", 0), ("g", 1)])).unwrap();
        assert_eq!(dump(&tree), ["0 all 4 0", "1 g 1 0"]);
        let empty = FrameTree::build(&input(&[])).unwrap();
        assert_eq!(dump(&empty), ["0 all 0 0"]);
    }

    #[test]
    fn diff_stacks_carry_their_base() {
        let mut input = FlameInput::new("diff", "samples", 10);
        input.add_stack_names(&["main", "a"], 6, Some(2));
        input.add_stack_names(&["main", "b"], 4, None);
        input.add_stack_names(&["main", "c"], 0, Some(5));
        let tree = FrameTree::build(&input).unwrap();
        assert!(tree.is_diff());
        let values: Vec<(i64, i64)> = tree.nodes().iter().map(|n| (n.value, n.base)).collect();
        assert_eq!(values, [(10, 7), (10, 7), (6, 2), (4, 0), (0, 5)]);
    }

    #[test]
    fn negative_values_are_refused() {
        let mut input = FlameInput::new("t", "samples", 1);
        input.add_stack_names(&["a"], 1, None);
        input.add_stack_names(&["b"], -1, None);
        let err = FrameTree::build(&input).unwrap_err();
        assert!(matches!(
            err,
            FlameError::NegativeValue {
                stack: 1,
                value: -1
            }
        ));
        assert!(err
            .to_string()
            .contains("stack 1 has the negative value -1"));
        let mut input = FlameInput::new("t", "samples", 1);
        input.add_stack_names(&["a"], 1, Some(-3));
        assert!(matches!(
            FrameTree::build(&input),
            Err(FlameError::NegativeValue {
                stack: 0,
                value: -3
            })
        ));
    }

    #[test]
    fn overflowing_sums_are_refused() {
        let mut input = FlameInput::new("t", "samples", 1);
        input.add_stack_names(&["a"], i64::MAX, None);
        input.add_stack_names(&["a"], 1, None);
        assert!(matches!(
            FrameTree::build(&input),
            Err(FlameError::Overflow)
        ));
    }

    #[test]
    fn deep_stacks_do_not_recurse() {
        let frames: Vec<String> = (0..100_000).map(|i| format!("f{}", i % 7)).collect();
        let mut input = FlameInput::new("deep", "samples", 1);
        input.add_stack_names(&frames, 1, None);
        let tree = FrameTree::build(&input).unwrap();
        assert_eq!(tree.len(), 100_001);
        assert_eq!(tree.nodes()[100_000].depth, 100_000);
        assert!(tree
            .nodes()
            .iter()
            .all(|n| n.value == 1 && n.end == 100_001));
    }
}
