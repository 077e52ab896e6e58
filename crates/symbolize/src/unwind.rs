//! Offline unwinding of the user stacks `perf record --call-graph dwarf`
//! saves (registers and the stack's bytes), with framehop (the CFI
//! unwinder the agent uses) against each mapped file's `.eh_frame` /
//! `.eh_frame_hdr` / `.debug_frame`.
//!
//! It lives here, beside the symbolizer, because it reads the mapped files
//! on disk; the perf.data reader (in the profile crate, free of I/O) hands
//! it batches of samples through [`cpuprof_profile::perf::StackUnwinder`].
//! Each file's unwind sections are read once; each distinct address space
//! (a process's mappings at one time) gets one framehop unwinder, kept for
//! the next batches; the samples of a batch are unwound on every core, one
//! framehop cache per thread.

use std::path::Path;
use std::sync::{Arc, Mutex};

use cpuprof_profile::perf::{AddressSpace, StackUnwinder, UnwindJob};
use cpuprof_profile::Mapping;
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use object::{Object, ObjectSection, ObjectSegment};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

/// The most frames taken from one stack.
const MAX_FRAMES: usize = 1024;

/// A file's unwind sections and loadable segments, read once.
struct UnwindFile {
    /// (vaddr, file offset, file size) of each `PT_LOAD` segment.
    segments: Vec<(u64, u64, u64)>,
    sections: ExplicitModuleSectionInfo<Arc<[u8]>>,
}

type SpaceUnwinder = UnwinderX86_64<Arc<[u8]>>;

/// Unwind data by (path, build id); None for a file that cannot be used.
type Files = FxHashMap<(String, String), Option<Arc<UnwindFile>>>;

/// framehop over the files of this machine; see the module doc.
#[derive(Default)]
pub struct DwarfUnwinder {
    files: Mutex<Files>,
    spaces: Mutex<FxHashMap<u64, Arc<SpaceUnwinder>>>,
}

impl std::fmt::Debug for DwarfUnwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DwarfUnwinder")
    }
}

impl DwarfUnwinder {
    /// An unwinder with nothing read yet.
    pub fn new() -> DwarfUnwinder {
        DwarfUnwinder::default()
    }

    /// The unwind data of `mapping`'s file, when it is here and has the
    /// mapping's build id.
    fn file(&self, mapping: &Mapping) -> Option<Arc<UnwindFile>> {
        let key = (mapping.path.clone(), mapping.build_id.clone());
        if let Some(found) = self.files.lock().ok()?.get(&key) {
            return found.clone();
        }
        let file = read_unwind_file(mapping).map(Arc::new);
        if let Ok(mut files) = self.files.lock() {
            files.insert(key, file.clone());
        }
        file
    }

    fn unwinder_for(&self, space: &AddressSpace) -> Arc<SpaceUnwinder> {
        if let Some(u) = self
            .spaces
            .lock()
            .ok()
            .and_then(|s| s.get(&space.id).cloned())
        {
            return u;
        }
        let mut unwinder = SpaceUnwinder::new();
        for mapping in &space.mappings {
            let Some(file) = self.file(mapping) else {
                continue;
            };
            // The segment holding the mapped file offset gives the load
            // bias: runtime address = link-time address + bias.
            let Some(&(vaddr, offset, _)) = file.segments.iter().find(|&&(_, off, size)| {
                off <= mapping.offset && mapping.offset < off.saturating_add(size.max(1))
            }) else {
                continue;
            };
            let bias = mapping
                .start
                .wrapping_sub(vaddr.wrapping_add(mapping.offset - offset));
            unwinder.add_module(Module::new(
                mapping.path.clone(),
                mapping.start..mapping.limit,
                bias,
                file.sections.clone(),
            ));
        }
        let unwinder = Arc::new(unwinder);
        if let Ok(mut spaces) = self.spaces.lock() {
            spaces.insert(space.id, unwinder.clone());
        }
        unwinder
    }
}

impl StackUnwinder for DwarfUnwinder {
    fn unwind(&self, jobs: &mut [UnwindJob]) {
        let mut unwinders: FxHashMap<u64, Arc<SpaceUnwinder>> = FxHashMap::default();
        for job in jobs.iter() {
            unwinders
                .entry(job.space.id)
                .or_insert_with(|| self.unwinder_for(&job.space));
        }
        jobs.par_iter_mut()
            .for_each_init(CacheX86_64::new, |cache, job| {
                if let Some(unwinder) = unwinders.get(&job.space.id) {
                    unwind_one(unwinder, cache, job);
                }
            });
    }
}

fn unwind_one(unwinder: &SpaceUnwinder, cache: &mut CacheX86_64, job: &mut UnwindJob) {
    let sp = job.sp;
    let stack = &job.stack;
    let mut read_stack = |address: u64| -> Result<u64, ()> {
        let at = usize::try_from(address.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
        let bytes = stack.get(at..at.checked_add(8).ok_or(())?).ok_or(())?;
        Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| ())?))
    };
    let regs = UnwindRegsX86_64::new(job.pc, job.sp, job.bp);
    let mut frames = unwinder.iter_frames(job.pc, regs, cache, &mut read_stack);
    while job.frames.len() < MAX_FRAMES {
        match frames.next() {
            Ok(Some(FrameAddress::InstructionPointer(a))) => job.frames.push(a),
            Ok(Some(FrameAddress::ReturnAddress(a))) => job.frames.push(a.get()),
            Ok(None) | Err(_) => break,
        }
    }
}

/// The unwind sections of `mapping`'s ELF file (this process's vDSO for
/// `[vdso]`), when it has the mapping's build id (or the mapping has
/// none).
fn read_unwind_file(mapping: &Mapping) -> Option<UnwindFile> {
    if mapping.path == crate::vdso::VDSO_PATH {
        // The kernel's image, the same in every process on this kernel.
        let image = crate::vdso::own_image()?;
        return (image.len() as u64 == mapping.limit - mapping.start)
            .then(|| unwind_file(&image, ""))
            .flatten();
    }
    let file = std::fs::File::open(Path::new(&mapping.path)).ok()?;
    // SAFETY: read-only private map of a file nobody should be rewriting;
    // the bytes we keep are copied out.
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    unwind_file(&map, &mapping.build_id)
}

fn unwind_file(bytes: &[u8], build_id: &str) -> Option<UnwindFile> {
    let elf = object::File::parse(bytes).ok()?;
    if !build_id.is_empty() {
        if let Ok(Some(id)) = elf.build_id() {
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            if !hex.eq_ignore_ascii_case(build_id) {
                return None;
            }
        }
    }
    let segments = elf
        .segments()
        .map(|s| {
            let (offset, size) = s.file_range();
            (s.address(), offset, size)
        })
        .collect();
    let section = |name: &str| {
        let s = elf.section_by_name(name)?;
        let data = s.uncompressed_data().ok()?;
        Some((
            s.address()..s.address() + s.size(),
            Arc::<[u8]>::from(&*data),
        ))
    };
    let mut sections = ExplicitModuleSectionInfo::<Arc<[u8]>> {
        base_svma: 0,
        ..Default::default()
    };
    if let Some(s) = elf.section_by_name(".text") {
        sections.text_svma = Some(s.address()..s.address() + s.size());
    }
    if let Some(s) = elf.section_by_name(".got") {
        sections.got_svma = Some(s.address()..s.address() + s.size());
    }
    if let Some((range, data)) = section(".eh_frame") {
        sections.eh_frame_svma = Some(range);
        sections.eh_frame = Some(data);
    }
    if let Some((range, data)) = section(".eh_frame_hdr") {
        sections.eh_frame_hdr_svma = Some(range);
        sections.eh_frame_hdr = Some(data);
    }
    if let Some((_, data)) = section(".debug_frame") {
        sections.debug_frame = Some(data);
    }
    Some(UnwindFile { segments, sections })
}
