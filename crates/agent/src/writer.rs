//! Writing the profile: gperftools' binary CPU profile format ("Google CPU
//! Profiler Binary Data File Format": header `0, 3, 0, period_us, 0`,
//! records `count, n, pc[0..n]` leaf first with return addresses as
//! sampled, trailer `0, 1, 0`, then the text of `/proc/self/maps`), written
//! to a temporary file that is then renamed over the target, so a reader
//! never sees half a profile.

use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::collector::Stacks;

/// Encodes a profile in native word size and byte order. Labels have no
/// place in this format: samples that differ only by them are merged.
pub(crate) fn encode(
    period_us: u64,
    samples: &Stacks,
    maps: &str,
    maps_seen: &[String],
) -> Vec<u8> {
    let mut stacks: FxHashMap<&[u64], u64> = FxHashMap::default();
    for (key, &count) in samples {
        *stacks.entry(&key.stack[..]).or_insert(0) += count;
    }
    let words: usize = stacks.keys().map(|s| s.len() + 2).sum();
    let mut out = Vec::with_capacity((words + 8) * 8 + maps.len());
    let put = |out: &mut Vec<u8>, v: u64| out.extend_from_slice(&(v as usize).to_ne_bytes());
    for slot in [0, 3, 0, period_us, 0] {
        put(&mut out, slot);
    }
    // Heaviest stacks first, then by PCs: deterministic output.
    let mut records: Vec<(&[u64], u64)> = stacks.iter().map(|(s, &c)| (*s, c)).collect();
    records.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    for (stack, count) in records {
        if stack.is_empty() || count == 0 {
            continue;
        }
        put(&mut out, count);
        put(&mut out, stack.len() as u64);
        for &pc in stack {
            put(&mut out, pc);
        }
    }
    for slot in [0, 1, 0] {
        put(&mut out, slot);
    }
    out.extend_from_slice(with_build_ids(&maps_with_unloaded(maps, maps_seen)).as_bytes());
    out
}

/// `maps` with, after each executable mapping of a file, a line giving
/// the file's build id, so that a reader can tell another build of the
/// file from the one that ran: `LIMIT-LIMIT r-xp PATH (@OFFSET) BUILDID`,
/// an empty mapping continuing the one before. Why that spelling (perl
/// pprof skips it; Go pprof merges it into the mapping before, keeping
/// the id): `cpuprof_profile::gperftools::build_id_line`, which writes
/// the same line for `cpuprof convert`.
fn with_build_ids(maps: &str) -> String {
    let mut ids: FxHashMap<&str, Option<String>> = FxHashMap::default();
    let mut out = String::with_capacity(maps.len() + 1024);
    for line in maps.lines() {
        out.push_str(line);
        out.push('\n');
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some((start, end)), [_, perms, offset, _, _, path]) = (range_of(line), &fields[..])
        else {
            continue;
        };
        let Ok(offset) = u64::from_str_radix(offset, 16) else {
            continue;
        };
        if perms.as_bytes().get(2) != Some(&b'x') || !path.starts_with('/') {
            continue;
        }
        let id = ids
            .entry(path)
            .or_insert_with(|| crate::symbols::build_id_of(path));
        if let Some(id) = id {
            let at = offset + (end - start);
            out.push_str(&format!("{end:08x}-{end:08x} r-xp {path} (@{at:x}) {id}\n"));
        }
    }
    out
}

/// The text of `maps` (newline-terminated), followed by the lines of
/// objects seen earlier in the session but unloaded since (dlclose) that
/// no current mapping overlaps.
pub(crate) fn maps_with_unloaded(maps: &str, maps_seen: &[String]) -> String {
    let mut out = maps.to_string();
    if !maps.is_empty() && !maps.ends_with('\n') {
        out.push('\n');
    }
    let current: Vec<(u64, u64)> = maps.lines().filter_map(range_of).collect();
    for line in maps_seen {
        if let Some((start, end)) = range_of(line) {
            let path = line.split_whitespace().nth(5).unwrap_or("");
            let overlaps = current.iter().any(|&(s, e)| start < e && s < end);
            if !overlaps && path.starts_with('/') {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

fn range_of(line: &str) -> Option<(u64, u64)> {
    let range = line.split_whitespace().next()?;
    let (start, end) = range.split_once('-')?;
    Some((
        u64::from_str_radix(start, 16).ok()?,
        u64::from_str_radix(end, 16).ok()?,
    ))
}

/// The temporary name a profile is written under before it is renamed to
/// `path`: in the same directory (rename is atomic only within one file
/// system), and per process (a forked child never writes its parent's).
pub(crate) fn temporary_name(path: &str) -> String {
    let mut name = Vec::with_capacity(path.len() + 16);
    let _ = write_temporary_name(&mut name, path);
    String::from_utf8(name).unwrap_or_default()
}

/// Writes [`temporary_name`]'s `<path>.<pid>.tmp` into `out`; with room
/// enough in a `Vec`, allocates nothing (the crash names of a forked
/// child are rewritten so).
pub(crate) fn write_temporary_name(
    out: &mut impl std::io::Write,
    path: &str,
) -> std::io::Result<()> {
    write!(out, "{path}.{}.tmp", std::process::id())
}

/// Writes `bytes` to `path` so that `path` never exists with less than a
/// complete profile, and a process killed while writing (a fork server's
/// children get `SIGKILL` at shutdown) leaves nothing behind: the bytes go
/// to an unnamed file (`O_TMPFILE`) in the same directory, which is linked
/// as `path.<pid>.tmp` only once complete and at once renamed to `path`.
/// Where the file system has no unnamed files (or `/proc` is not mounted),
/// the temporary file is named from the start.
pub(crate) fn write_atomically(path: &str, bytes: &[u8]) -> io::Result<()> {
    let temporary = temporary_name(path);
    if let Some(file) = open_unnamed(path) {
        let mut file = file;
        file.write_all(bytes)?;
        if link_unnamed(&file, &temporary).is_ok() {
            return rename_or_remove(&temporary, path);
        }
    }
    let result = (|| {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        file.flush()
    })();
    match result {
        Ok(()) => rename_or_remove(&temporary, path),
        Err(e) => {
            let _ = std::fs::remove_file(&temporary);
            Err(e)
        }
    }
}

/// An unnamed file in `path`'s directory, or None where that is refused.
fn open_unnamed(path: &str) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = match std::path::Path::new(path).parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => std::path::Path::new("."),
    };
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .mode(0o666)
        .open(dir)
        .ok()
}

/// Gives the unnamed `file` the name `temporary` (replacing a stale file of
/// that name), through `/proc/self/fd`, which needs no privilege.
fn link_unnamed(file: &std::fs::File, temporary: &str) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let from = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
    let to = std::ffi::CString::new(temporary)?;
    let link = || {
        // SAFETY: two NUL-terminated paths.
        let rc = unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                from.as_ptr(),
                libc::AT_FDCWD,
                to.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    };
    match link() {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let _ = std::fs::remove_file(temporary);
            link()
        }
        other => other,
    }
}

fn rename_or_remove(temporary: &str, path: &str) -> io::Result<()> {
    let result = std::fs::rename(temporary, path);
    if result.is_err() {
        let _ = std::fs::remove_file(temporary);
    }
    result
}

/// Prepares `path` for a new session: fails when a profile could not be
/// written there later (its temporary file cannot be created, or `path` is
/// a directory), and removes an earlier profile at `path`, as libprofiler
/// truncates it, so a session that ends without writing leaves no file
/// rather than an older run's. Creates nothing at `path`: an empty file
/// there would read as a broken profile.
pub(crate) fn prepare(path: &str) -> io::Result<()> {
    if std::path::Path::new(path).is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    let temporary = temporary_name(path);
    std::fs::File::create(&temporary)?;
    std::fs::remove_file(&temporary)?;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::SampleKey;

    #[test]
    fn encodes_the_documented_layout() {
        let mut stacks = Stacks::default();
        stacks.insert(
            SampleKey {
                stack: vec![0x1000, 0x2000].into(),
                labels: 7,
                time: 0,
            },
            1,
        );
        stacks.insert(
            SampleKey {
                stack: vec![0x1000, 0x2000].into(),
                labels: 9,
                time: 1_700_000_000_000_000_000,
            },
            2,
        );
        let maps = "00400000-00401000 r-xp 00000000 08:01 1 /bin/x\n";
        let bytes = encode(10_000, &stacks, maps, &[]);
        let words: Vec<u64> = bytes[..10 * 8]
            .chunks(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(words, [0, 3, 0, 10_000, 0, 3, 2, 0x1000, 0x2000, 0]);
        assert!(bytes.ends_with(maps.as_bytes()));
        let profile = cpuprof_profile::gperftools::read(&bytes).unwrap();
        assert_eq!(profile.samples.len(), 1);
        assert_eq!(profile.period, 10_000_000);
    }

    #[test]
    fn keeps_unloaded_objects_only() {
        let stacks = Stacks::default();
        let maps = "1000-2000 r-xp 00000000 08:01 1 /lib/a.so\n";
        let seen = vec![
            "1000-2000 r-xp 00000000 08:01 1 /lib/a.so".to_string(),
            "5000-6000 r-xp 00000000 08:01 2 /lib/gone.so".to_string(),
            "1800-1900 r-xp 00000000 08:01 3 /lib/overlapping.so".to_string(),
        ];
        let text = String::from_utf8(encode(100, &stacks, maps, &seen)[8 * 8..].to_vec()).unwrap();
        assert!(text.contains("gone.so"));
        assert!(!text.contains("overlapping.so"));
        assert_eq!(text.matches("a.so").count(), 1);
    }
}
