//! Building the [`ModuleSnapshot`] the handler unwinds with: every loaded
//! object's executable range and a private copy of its `.eh_frame_hdr` and
//! `.eh_frame` (so an object unloaded by `dlclose` cannot leave the
//! handler reading unmapped memory), plus the writable mappings that bound
//! thread stacks. Runs outside the handler only (it takes the loader lock
//! through `dl_iterate_phdr`).

use std::ffi::{c_int, c_void, CStr};
use std::ops::Range;
use std::sync::Arc;

use framehop::{ExplicitModuleSectionInfo, Module, Unwinder};

use crate::signal_path::{ModuleSnapshot, ModuleUnwinder};

/// One loaded object, as kept between snapshots so that unchanged objects
/// are not copied again.
#[derive(Clone)]
pub(crate) struct LoadedObject {
    key: (u64, String),
    module: Module<Arc<[u8]>>,
    code: Range<u64>,
}

/// The loader's count of objects added and removed: when it changes the
/// snapshot must be rebuilt.
pub(crate) fn loader_generation() -> (u64, u64) {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        size: usize,
        data: *mut c_void,
    ) -> c_int {
        let out = data as *mut (u64, u64);
        // SAFETY: dl_iterate_phdr passes a valid info of `size` bytes;
        // adds/subs exist when size covers them.
        unsafe {
            if size >= std::mem::offset_of!(libc::dl_phdr_info, dlpi_subs) + 8 {
                *out = ((*info).dlpi_adds, (*info).dlpi_subs);
            }
        }
        1
    }
    let mut generation = (0u64, 0u64);
    // SAFETY: the callback only writes into `generation`.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut generation as *mut (u64, u64)).cast()) };
    generation
}

struct Collect<'a> {
    previous: &'a [LoadedObject],
    objects: Vec<LoadedObject>,
}

/// Lists the loaded objects, reusing the copies in `previous` for objects
/// still loaded at the same address.
pub(crate) fn loaded_objects(previous: &[LoadedObject]) -> Vec<LoadedObject> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: `data` is our Collect; `info` is valid during the call.
        unsafe {
            let collect = &mut *(data as *mut Collect);
            if let Some(object) = describe(&*info, collect.previous) {
                collect.objects.push(object);
            }
        }
        0
    }
    let mut collect = Collect {
        previous,
        objects: Vec::new(),
    };
    // SAFETY: the callback only touches `collect` and the loader's data.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut collect as *mut Collect).cast()) };
    collect.objects
}

/// Builds the unwind description of one loaded object.
///
/// # Safety
/// `info` must come from `dl_iterate_phdr` (its segments are mapped).
unsafe fn describe(info: &libc::dl_phdr_info, previous: &[LoadedObject]) -> Option<LoadedObject> {
    let base = info.dlpi_addr;
    let name = if info.dlpi_name.is_null() {
        String::new()
    } else {
        // SAFETY: a NUL-terminated string owned by the loader.
        unsafe { CStr::from_ptr(info.dlpi_name) }
            .to_string_lossy()
            .into_owned()
    };
    // SAFETY: dlpi_phdr points to dlpi_phnum program headers.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let mut code: Option<Range<u64>> = None;
    let mut eh_frame_hdr: Option<Range<u64>> = None;
    for ph in phdrs {
        if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 {
            let start = base.wrapping_add(ph.p_vaddr);
            let end = start.wrapping_add(ph.p_memsz);
            code = Some(match code {
                Some(c) => c.start.min(start)..c.end.max(end),
                None => start..end,
            });
        }
        if ph.p_type == libc::PT_GNU_EH_FRAME {
            let start = base.wrapping_add(ph.p_vaddr);
            eh_frame_hdr = Some(start..start.wrapping_add(ph.p_memsz));
        }
    }
    let code = code?;
    let key = (base, name.clone());
    if let Some(old) = previous.iter().find(|o| o.key == key && o.code == code) {
        return Some(old.clone());
    }
    let mut sections = ExplicitModuleSectionInfo::<Arc<[u8]>> {
        base_svma: 0,
        text_svma: Some(code.start - base..code.end - base),
        ..Default::default()
    };
    if let Some(hdr) = eh_frame_hdr {
        // SAFETY: the PT_GNU_EH_FRAME segment is mapped readable.
        let hdr_bytes = unsafe {
            std::slice::from_raw_parts(hdr.start as *const u8, (hdr.end - hdr.start) as usize)
        };
        if let Some(eh_frame_start) = eh_frame_address(hdr_bytes, hdr.start) {
            // .eh_frame's length is not recorded anywhere cheap: copy to the
            // end of the loadable segment that holds it.
            let segment_end = phdrs
                .iter()
                .filter(|ph| ph.p_type == libc::PT_LOAD)
                .map(|ph| {
                    let start = base.wrapping_add(ph.p_vaddr);
                    (start, start.wrapping_add(ph.p_filesz))
                })
                .find(|&(start, end)| eh_frame_start >= start && eh_frame_start < end)
                .map(|(_, end)| end);
            if let Some(end) = segment_end {
                // SAFETY: within a mapped loadable segment.
                let eh_frame = unsafe {
                    std::slice::from_raw_parts(
                        eh_frame_start as *const u8,
                        (end - eh_frame_start) as usize,
                    )
                };
                sections.eh_frame_hdr_svma = Some(hdr.start - base..hdr.end - base);
                sections.eh_frame_hdr = Some(Arc::from(hdr_bytes));
                sections.eh_frame_svma = Some(eh_frame_start - base..end - base);
                sections.eh_frame = Some(Arc::from(eh_frame));
            }
        }
    }
    let module = Module::new(name, code.clone(), base, sections);
    Some(LoadedObject { key, module, code })
}

/// Decodes `eh_frame_ptr` from an `.eh_frame_hdr` (version 1; encodings
/// absptr/udata4/sdata4/udata8/sdata8, absolute or pc-relative).
fn eh_frame_address(hdr: &[u8], hdr_address: u64) -> Option<u64> {
    let (&version, rest) = hdr.split_first()?;
    if version != 1 {
        return None;
    }
    let encoding = *rest.first()?;
    let field = hdr.get(4..)?;
    let value = match encoding & 0x0f {
        0x00 | 0x04 => u64::from_le_bytes(field.get(..8)?.try_into().ok()?),
        0x03 => u32::from_le_bytes(field.get(..4)?.try_into().ok()?) as u64,
        0x0b => i32::from_le_bytes(field.get(..4)?.try_into().ok()?) as i64 as u64,
        0x0c => i64::from_le_bytes(field.get(..8)?.try_into().ok()?) as u64,
        _ => return None,
    };
    match encoding & 0x70 {
        0x00 => Some(value),
        0x10 => Some((hdr_address + 4).wrapping_add(value)),
        0x30 => Some(hdr_address.wrapping_add(value)),
        _ => None,
    }
}

/// One line of `/proc/self/maps`, parsed for stack bounds.
fn parse_maps_range(line: &str) -> Option<(u64, u64, &str, &str)> {
    let mut fields = line.split_whitespace();
    let range = fields.next()?;
    let perms = fields.next()?;
    let (start, end) = range.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let end = u64::from_str_radix(end, 16).ok()?;
    let path = fields.nth(3).unwrap_or("");
    Some((start, end, perms, path))
}

/// Builds a snapshot from the loaded objects and the text of
/// `/proc/self/maps`.
pub(crate) fn build_snapshot(objects: &[LoadedObject], maps: &str) -> ModuleSnapshot {
    let mut unwinder = ModuleUnwinder::new();
    let mut code = Vec::with_capacity(objects.len());
    for object in objects {
        unwinder.add_module(object.module.clone());
        code.push((object.code.start, object.code.end));
    }
    code.sort_unstable();
    let mut writable = Vec::new();
    let mut main_stack_end = 0;
    for line in maps.lines() {
        if let Some((start, end, perms, path)) = parse_maps_range(line) {
            if perms.starts_with("rw") {
                writable.push((start, end));
            }
            if path == "[stack]" {
                main_stack_end = end;
            }
        }
    }
    writable.sort_unstable();
    ModuleSnapshot {
        unwinder,
        code,
        writable,
        main_stack_end,
    }
}

/// The text of `/proc/self/maps` (empty if unreadable).
pub(crate) fn read_maps() -> String {
    std::fs::read_to_string("/proc/self/maps").unwrap_or_default()
}

/// The text of `/proc/self/maps` as a profile records it: when the
/// program writes a JIT map, `/tmp/perf-PID.map` (`node
/// --perf-basic-prof`, the JVM's perf-map agents, Python's `-X perf`), its
/// code is named after that file, so that a report names the JIT frames
/// from it as perf does (perf calls such mappings `//anon` and reads the
/// same file). That is the anonymous executable mappings, and the ranges
/// the map lists where nothing is mapped any more: a runtime that tears
/// its code space down before `exit` (node does) leaves no mapping for
/// the addresses its samples hold. Not in a signal handler: it reads
/// files and allocates.
pub(crate) fn read_profile_maps() -> String {
    let maps = read_maps();
    let jit_map = format!("/tmp/perf-{}.map", std::process::id());
    match std::fs::read_to_string(&jit_map) {
        Ok(listing) => with_jit_code(&maps, &listing, &jit_map),
        Err(_) => maps,
    }
}

/// Ranges of a JIT map (`START SIZE name` lines, hexadecimal) closer than
/// this are one mapping.
const JIT_GAP: u64 = 1 << 20;

/// `maps` with `path` after every anonymous executable mapping (no path,
/// permissions holding `x`), then a line named `path` for
/// each range of the JIT map `listing` (its entries, joined across gaps
/// under [`JIT_GAP`]) that no mapping of `maps` overlaps.
fn with_jit_code(maps: &str, listing: &str, path: &str) -> String {
    let mut out = String::with_capacity(maps.len() + 1024);
    let mut mapped: Vec<(u64, u64)> = Vec::new();
    for line in maps.lines() {
        out.push_str(line);
        if let Some((start, end, perms, own_path)) = parse_maps_range(line) {
            mapped.push((start, end));
            if perms.as_bytes().get(2) == Some(&b'x') && own_path.is_empty() {
                out.push_str("                          ");
                out.push_str(path);
            }
        }
        out.push('\n');
    }
    let mut code: Vec<(u64, u64)> = listing
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
            let start = hex(parts.next()?)?;
            let size = hex(parts.next()?)?;
            (size > 0).then(|| (start, start.saturating_add(size)))
        })
        .collect();
    code.sort_unstable();
    let mut joined: Vec<(u64, u64)> = Vec::new();
    for (start, end) in code {
        match joined.last_mut() {
            Some(last) if start <= last.1.saturating_add(JIT_GAP) => last.1 = last.1.max(end),
            _ => joined.push((start, end)),
        }
    }
    for (start, end) in joined {
        if mapped.iter().any(|&(s, e)| start < e && s < end) {
            continue;
        }
        out.push_str(&format!(
            "{start:08x}-{end:08x} r-xp 00000000 00:00 0                          {path}\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eh_frame_pointer_pcrel_sdata4() {
        // version 1, eh_frame_ptr_enc = pcrel|sdata4, fde_count_enc, table_enc,
        // then eh_frame_ptr = 0x100 relative to the field at hdr+4.
        let hdr = [1u8, 0x1b, 0x03, 0x3b, 0x00, 0x01, 0x00, 0x00];
        assert_eq!(eh_frame_address(&hdr, 0x1000), Some(0x1000 + 4 + 0x100));
    }

    #[test]
    fn jit_code_is_named_after_the_jit_map() {
        let maps = "00400000-00401000 r-xp 00000000 08:01 12 /bin/app\n\
                    7f0000000000-7f0000010000 rwxp 00000000 00:00 0 \n\
                    7f0000010000-7f0000020000 rw-p 00000000 00:00 0\n\
                    7f0000020000-7f0000030000 r-xp 00000000 00:00 0\n\
                    7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0                          [vdso]\n";
        // Code in the mapped region, and code in two places left unmapped:
        // one cluster (two entries 16 bytes apart), and one far away.
        let listing = "7f0000000100 40 JS:*hot /app.js:1:1\n\
                       7e0000001000 20 JS:^a /app.js:2:1\n\
                       7e0000001030 10 JS:^b /app.js:3:1\n\
                       0x7d0000000000 0x8 stub\n\
                       garbage line\n";
        let named = with_jit_code(maps, listing, "/tmp/perf-42.map");
        let lines: Vec<(&str, &str)> = named
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f[0], f.get(5).copied().unwrap_or(""))
            })
            .collect();
        assert_eq!(
            lines,
            [
                ("00400000-00401000", "/bin/app"),
                ("7f0000000000-7f0000010000", "/tmp/perf-42.map"),
                ("7f0000010000-7f0000020000", ""),
                ("7f0000020000-7f0000030000", "/tmp/perf-42.map"),
                ("7ffd00000000-7ffd00001000", "[vdso]"),
                ("7d0000000000-7d0000000008", "/tmp/perf-42.map"),
                ("7e0000001000-7e0000001040", "/tmp/perf-42.map"),
            ]
        );
        // The lines of `maps` are kept as they were, the path added.
        for (a, b) in maps.lines().zip(named.lines()) {
            assert!(b.starts_with(a.trim_end()), "{a:?} → {b:?}");
        }
    }

    #[test]
    fn own_objects_have_unwind_data() {
        let objects = loaded_objects(&[]);
        assert!(objects.len() >= 2, "the test binary and libc at least");
        let here = eh_frame_address as *const () as u64;
        assert!(objects.iter().any(|o| o.code.contains(&here)));
    }
}
