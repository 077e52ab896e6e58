//! Finding separate debug information: the debug file of a stripped binary
//! (by build id, then by `.gnu_debuglink`, then pprof's
//! `/usr/lib/debug/<path>` convention) and the supplementary file of
//! dwz-processed debug info (`.gnu_debugaltlink`).
//!
//! The search follows gdb's documented order ("Debugging Information in
//! Separate Files"): `<debug_dir>/.build-id/xx/yyyy.debug`; then the
//! debuglink name in the binary's directory, in its `.debug/`
//! subdirectory, and under each debug dir followed by the binary's
//! directory. A candidate is used only when it matches: same build id when
//! both files have one, else the CRC-32 recorded in the debuglink.

use std::path::{Path, PathBuf};

use object::{Object, ObjectSection};

use crate::binary::{map_file, Bytes};
use crate::crc32::crc32;

/// Where a binary's symbols and lines can come from.
pub(crate) struct Found {
    pub path: PathBuf,
    pub data: Bytes,
}

/// The lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// `<dir>/.build-id/xx/yyyy.debug` for each debug dir.
fn build_id_paths(build_id: &[u8], debug_dirs: &[PathBuf]) -> Vec<PathBuf> {
    if build_id.len() < 2 {
        return Vec::new();
    }
    let h = hex(build_id);
    debug_dirs
        .iter()
        .map(|d| {
            d.join(".build-id")
                .join(&h[..2])
                .join(format!("{}.debug", &h[2..]))
        })
        .collect()
}

/// `dir` without its leading `/`, to append under a debug dir.
fn relative(dir: &Path) -> PathBuf {
    dir.components()
        .filter(|c| {
            !matches!(
                c,
                std::path::Component::RootDir | std::path::Component::Prefix(_)
            )
        })
        .collect()
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Opens `candidate` if it holds DWARF and passes `accept`.
fn try_candidate(
    candidate: &Path,
    binary_path: &Path,
    accept: &dyn Fn(&object::File<'_>, &[u8]) -> bool,
) -> Option<Found> {
    if !candidate.is_file() || same_file(candidate, binary_path) {
        return None;
    }
    let data = map_file(candidate).ok()?;
    let file = object::File::parse(&*data).ok()?;
    if !has_dwarf(&file) {
        return None;
    }
    if !accept(&file, &data) {
        return None;
    }
    drop(file);
    Some(Found {
        path: candidate.to_path_buf(),
        data,
    })
}

/// True when `file` holds DWARF with content (not the `NOBITS` placeholders
/// of a stripped file).
pub(crate) fn has_dwarf(file: &object::File<'_>) -> bool {
    ["debug_info", "debug_line"].iter().any(|name| {
        file.section_by_name(&format!(".{name}"))
            .or_else(|| file.section_by_name(&format!(".z{name}")))
            .is_some_and(|s| s.kind() != object::SectionKind::UninitializedData && s.size() > 0)
    })
}

/// The separate debug file of the binary at `path`, if one is found.
pub(crate) fn find_debug_file(
    path: &Path,
    build_id: Option<&[u8]>,
    debuglink: Option<(&[u8], u32)>,
    debug_dirs: &[PathBuf],
) -> Option<Found> {
    let build_id_matches =
        |file: &object::File<'_>| match (build_id, file.build_id().ok().flatten()) {
            (Some(a), Some(b)) => Some(a == b),
            _ => None,
        };
    if let Some(id) = build_id {
        for candidate in build_id_paths(id, debug_dirs) {
            let accept = |file: &object::File<'_>, _: &[u8]| build_id_matches(file) == Some(true);
            if let Some(found) = try_candidate(&candidate, path, &accept) {
                return Some(found);
            }
        }
    }
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut dirs: Vec<PathBuf> = Vec::new();
    for p in [&canonical, &path.to_path_buf()] {
        if let Some(dir) = p.parent() {
            if !dirs.iter().any(|d| d == dir) {
                dirs.push(dir.to_path_buf());
            }
        }
    }
    if let Some((name, crc)) = debuglink {
        let name = String::from_utf8_lossy(name).into_owned();
        // A debuglink is a file name; refuse paths that would escape.
        if !name.is_empty() && !name.contains('/') {
            let mut candidates = Vec::new();
            for dir in &dirs {
                candidates.push(dir.join(&name));
                candidates.push(dir.join(".debug").join(&name));
                for debug_dir in debug_dirs {
                    candidates.push(debug_dir.join(relative(dir)).join(&name));
                }
            }
            for candidate in candidates {
                let accept = |file: &object::File<'_>, data: &[u8]| match build_id_matches(file) {
                    Some(same) => same,
                    None => crc32(data) == crc,
                };
                if let Some(found) = try_candidate(&candidate, path, &accept) {
                    return Some(found);
                }
            }
        }
    }
    // pprof's convention: `/usr/lib/debug/<absolute path>[.debug]`.
    if canonical.is_absolute() {
        for debug_dir in debug_dirs {
            let under = debug_dir.join(relative(&canonical));
            let mut with_ext = under.clone().into_os_string();
            with_ext.push(".debug");
            for candidate in [under, PathBuf::from(with_ext)] {
                let accept =
                    |file: &object::File<'_>, _: &[u8]| build_id_matches(file) != Some(false);
                if let Some(found) = try_candidate(&candidate, path, &accept) {
                    return Some(found);
                }
            }
        }
    }
    None
}

/// `candidate` as the debug file of the binary at `path`: when it holds
/// DWARF and has the binary's build id (or either has none).
pub(crate) fn open_debug_file(
    candidate: &Path,
    path: &Path,
    build_id: Option<&[u8]>,
) -> Option<Found> {
    let accept =
        |file: &object::File<'_>, _: &[u8]| match (build_id, file.build_id().ok().flatten()) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
    try_candidate(candidate, path, &accept)
}

/// The supplementary (dwz) file named by `.gnu_debugaltlink` in the file
/// at `debug_path`.
pub(crate) fn find_alt_file(
    debug_path: &Path,
    alt_path: &[u8],
    alt_build_id: &[u8],
    debug_dirs: &[PathBuf],
) -> Option<Found> {
    let alt = PathBuf::from(String::from_utf8_lossy(alt_path).into_owned());
    let mut candidates = Vec::new();
    if alt.is_absolute() {
        candidates.push(alt.clone());
    } else if !alt.as_os_str().is_empty() {
        if let Some(dir) = debug_path.parent() {
            candidates.push(dir.join(&alt));
        }
    }
    candidates.extend(build_id_paths(alt_build_id, debug_dirs));
    for candidate in candidates {
        let accept = |file: &object::File<'_>, _: &[u8]| {
            alt_build_id.is_empty() || file.build_id().ok().flatten() == Some(alt_build_id)
        };
        if let Some(found) = try_candidate(&candidate, debug_path, &accept) {
            return Some(found);
        }
    }
    None
}
