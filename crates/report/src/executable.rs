//! What readers of address-only formats need from the profiled executable:
//! its pointer width and byte order (gmon.out has neither), its loadable
//! segments as link-time mappings (gmon.out and DCPI hold link-time
//! addresses), and gprof's symbol table (to split histogram bins as gprof
//! does).

use std::path::{Path, PathBuf};

use cpuprof_profile::{dcpi, Mapping, Profile, ReadOptions, Target};
use object::{Object, ObjectSegment};

use crate::gprof::GprofSymbols;

/// Pointer width and byte order from an ELF header.
pub fn elf_target(data: &[u8]) -> Option<Target> {
    if data.len() < 6 || &data[..4] != b"\x7fELF" {
        return None;
    }
    Some(Target {
        pointer_size: if data[4] == 1 { 4 } else { 8 },
        big_endian: data[5] == 2,
    })
}

/// The executable segments of the ELF file `data` as mappings at their
/// link-time addresses (what the program's `/proc/self/maps` would show if
/// it were loaded where it was linked), named `path`.
pub fn executable_mappings(data: &[u8], path: &Path) -> Vec<Mapping> {
    let Ok(file) = object::File::parse(data) else {
        return Vec::new();
    };
    let mut out: Vec<Mapping> = file
        .segments()
        .filter(|s| match s.flags() {
            object::SegmentFlags::Elf { p_flags, .. } => p_flags.0 & object::elf::PF_X.0 != 0,
            _ => true,
        })
        .filter(|s| s.size() > 0)
        .map(|s| Mapping {
            start: s.address(),
            limit: s.address() + s.size(),
            offset: s.file_range().0,
            path: path.display().to_string(),
            perms: "r-xp".into(),
            ..Mapping::default()
        })
        .collect();
    out.sort_by_key(|m| m.start);
    out
}

/// Read options for profiles of the executable at `binary` (if any):
/// target, link-time mappings and gprof's symbol starts.
pub fn read_options_for(binary: Option<&Path>) -> ReadOptions {
    let Some(path) = binary else {
        return ReadOptions::default();
    };
    let Ok(file) = std::fs::File::open(path) else {
        return ReadOptions::default();
    };
    // SAFETY: read-only private map of the executable, only read here.
    let Ok(data) = (unsafe { memmap2::Mmap::map(&file) }) else {
        return ReadOptions::default();
    };
    ReadOptions {
        target: elf_target(&data),
        gmon_symbol_starts: GprofSymbols::from_elf(&data).ok().map(|s| s.starts()),
        executable_mappings: executable_mappings(&data, path),
        ..ReadOptions::default()
    }
}

/// DCPI profiles hold link-time addresses and say where the image is
/// (`path`) but not where `tstart` is in the file. For each mapping of a
/// DCPI image whose header had no `cpuprof-offset` line, finds the image
/// (a binary of `binaries` with the same base name, else `path`) and sets
/// the mapping's file offset from the segment that contains `tstart`.
pub fn resolve_dcpi_offsets(profile: &mut Profile, binaries: &[PathBuf]) {
    // Images whose header lacks the offset line: their tstart values.
    let mut images: Vec<(String, Vec<String>)> = Vec::new();
    for c in &profile.comments {
        let Some((id, line)) = c
            .strip_prefix(dcpi::HEADER_COMMENT)
            .and_then(|c| c.split_once(": "))
        else {
            continue;
        };
        match images.iter_mut().find(|(i, _)| i == id) {
            Some((_, lines)) => lines.push(line.to_string()),
            None => images.push((id.to_string(), vec![line.to_string()])),
        }
    }
    for (_, lines) in images {
        if lines.iter().any(|l| l.starts_with(dcpi::OFFSET_KEY)) {
            continue;
        }
        let Some(tstart) = lines
            .iter()
            .find_map(|l| l.strip_prefix("tstart"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        else {
            continue;
        };
        let Some(m) = profile.mappings.iter_mut().find(|m| m.start == tstart) else {
            continue;
        };
        let base = m.base_name().to_string();
        let file = binaries
            .iter()
            .find(|b| b.file_name().is_some_and(|n| n.to_string_lossy() == base))
            .cloned()
            .or_else(|| (!m.path.is_empty()).then(|| PathBuf::from(&m.path)))
            .or_else(|| binaries.first().cloned());
        let Some(data) = file.and_then(|f| std::fs::read(f).ok()) else {
            continue;
        };
        if let Some(seg) = executable_mappings(&data, Path::new(""))
            .iter()
            .find(|s| s.contains(tstart))
        {
            m.offset = seg.offset + (tstart - seg.start);
            if m.path.is_empty() {
                m.path = binaries
                    .first()
                    .map(|b| b.display().to_string())
                    .unwrap_or_default();
            }
        }
    }
}
