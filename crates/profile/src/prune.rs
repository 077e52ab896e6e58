//! Removing a profile's uninteresting frames: the allocator's frames of a
//! heap profile, the lock implementation's of a contention profile — what
//! its `drop_frames` regex names (and `keep_frames` does not), as pprof's
//! `Prune` removes them once the profile is symbolized.
//!
//! A location whose outermost matching line is its outermost one is
//! dropped whole, else its lines inside that one are cut. In each sample,
//! scanning from the root, the first dropped (or cut) location below the
//! first frame that is neither cuts the stack there: the callees of an
//! allocator go with it, and a stack made only of such frames is kept.
//! Names are matched without their argument lists (up to the first `(`
//! outside `(anonymous namespace)` and `operator()`), anchored at both ends.

use regex::Regex;

use crate::model::Profile;

/// Errors of an invalid `drop_frames` or `keep_frames` regex.
#[derive(Debug)]
pub struct BadRegex(pub String);

impl std::fmt::Display for BadRegex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A function name without its argument list, as pprof matches it.
pub fn simplify(name: &str) -> &str {
    let name = name.strip_prefix('.').unwrap_or(name);
    let mut from = 0;
    while let Some(i) = name[from..].find('(').map(|i| i + from) {
        let rest = &name[i..];
        if rest.starts_with("(anonymous namespace)") {
            from = i + "(anonymous namespace)".len();
            continue;
        }
        if i >= 8 && name[..i].ends_with("operator") && rest.starts_with("()") {
            from = i + 2;
            continue;
        }
        return &name[..i];
    }
    name
}

/// Applies the profile's `drop_frames`/`keep_frames` (nothing when
/// `drop_frames` is empty).
pub fn remove_uninteresting(profile: &mut Profile) -> Result<(), BadRegex> {
    if profile.drop_frames.is_empty() {
        return Ok(());
    }
    let compile = |what: &str, re: &str| {
        Regex::new(&format!("^(?:{re})$"))
            .map_err(|e| BadRegex(format!("the profile's {what} regex: {e}")))
    };
    let drop = compile("drop_frames", &profile.drop_frames)?;
    let keep = if profile.keep_frames.is_empty() {
        None
    } else {
        Some(compile("keep_frames", &profile.keep_frames)?)
    };
    prune(profile, &drop, keep.as_ref());
    Ok(())
}

/// Removes the frames `drop` matches (unless `keep` does) and their
/// callees.
pub fn prune(profile: &mut Profile, drop: &Regex, keep: Option<&Regex>) {
    let n = profile.locations.len();
    let mut whole = vec![false; n];
    let mut beneath = vec![false; n];
    let matches = |name: &str| {
        let name = simplify(name);
        drop.is_match(name) && !keep.is_some_and(|k| k.is_match(name))
    };
    for (i, location) in profile.locations.iter_mut().enumerate() {
        // Lines are innermost first: the outermost matching one.
        let Some(at) = location
            .lines
            .iter()
            .rposition(|l| matches(&profile.functions[l.function.index()].name))
        else {
            continue;
        };
        beneath[i] = true;
        if at == location.lines.len() - 1 {
            whole[i] = true;
        } else {
            location.lines.drain(..=at);
        }
    }
    if !beneath.iter().any(|&b| b) {
        return;
    }
    for sample in &mut profile.samples {
        let mut found_user = false;
        for i in (0..sample.locations.len()).rev() {
            let l = sample.locations[i].index();
            if !whole[l] && !beneath[l] {
                found_user = true;
                continue;
            }
            if !found_user {
                continue;
            }
            if whole[l] {
                sample.locations.drain(..=i);
            } else {
                sample.locations.drain(..i);
            }
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Function, Line, LocationId, ProfileBuilder, ValueType};

    #[test]
    fn names_lose_their_arguments() {
        assert_eq!(simplify("malloc"), "malloc");
        assert_eq!(simplify("operator new(unsigned long)"), "operator new");
        assert_eq!(simplify("sync.(*Mutex).Lock"), "sync.");
        assert_eq!(
            simplify("(anonymous namespace)::f(int)"),
            "(anonymous namespace)::f"
        );
        assert_eq!(simplify("Foo::operator()(int)"), "Foo::operator()");
    }

    fn named(b: &mut ProfileBuilder, address: u64, names: &[&str]) -> LocationId {
        let l = b.location_at(address);
        let lines = names
            .iter()
            .map(|n| Line {
                function: b.function(Function {
                    name: n.to_string(),
                    ..Function::default()
                }),
                ..Line::default()
            })
            .collect();
        b.profile.locations[l.index()].lines = lines;
        l
    }

    #[test]
    fn allocator_frames_go_with_their_callees() {
        let mut b = ProfileBuilder::new(vec![ValueType::new("space", "bytes")]);
        let acquire = named(&mut b, 1, &["runtime.acquireSudog"]);
        let sema = named(&mut b, 2, &["runtime.semacquire1"]);
        let lock = named(&mut b, 3, &["sync.runtime_SemacquireMutex"]);
        let user = named(&mut b, 4, &["main.contend"]);
        let exit = named(&mut b, 5, &["runtime.goexit"]);
        let inlined = named(&mut b, 6, &["malloc", "main.inl"]);
        b.add_sample(vec![acquire, sema, lock, user, exit], vec![1]);
        b.add_sample(vec![acquire, exit], vec![2]);
        b.add_sample(vec![inlined, user], vec![3]);
        let mut p = b.finish();
        p.drop_frames = crate::heap::ALLOCATION_FRAMES.into();
        p.keep_frames = crate::heap::KEPT_ALLOCATION_FRAMES.into();
        remove_uninteresting(&mut p).unwrap();
        assert_eq!(p.samples[0].locations, [lock, user, exit]);
        // Nothing but runtime frames: kept.
        assert_eq!(p.samples[1].locations, [acquire, exit]);
        // `malloc` inlined into main.inl: the location keeps main.inl.
        assert_eq!(p.samples[2].locations, [inlined, user]);
        assert_eq!(p.location(inlined).lines.len(), 1);
    }
}
