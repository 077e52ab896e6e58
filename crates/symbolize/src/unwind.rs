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
//!
//! framehop follows the stack, instruction and frame pointers only. A
//! stack that passes through a frame whose CFI needs more (ld.so's
//! lazy-binding trampoline defines its CFA on rbx; see [`crate::cfi`]) is
//! unwound again from its leaf with every saved register, each frame's
//! CFI evaluated by gimli (framehop's step where a frame has none), as
//! perf's own unwinder (libdw / libunwind) does.

use std::path::Path;
use std::sync::{Arc, Mutex};

use cpuprof_profile::perf::{AddressSpace, StackUnwinder, UnwindJob};
use cpuprof_profile::Mapping;
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use object::{Object, ObjectSection, ObjectSegment};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::cfi::{self, Cfi, Registers, Step};

/// The most address spaces kept at once.
const MAX_SPACES: usize = 1024;

/// The most frames taken from one stack.
const MAX_FRAMES: usize = 1024;

/// A file's unwind sections and loadable segments, read once.
struct UnwindFile {
    /// (vaddr, file offset, file size) of each `PT_LOAD` segment.
    segments: Vec<(u64, u64, u64)>,
    sections: ExplicitModuleSectionInfo<Arc<[u8]>>,
    /// The same CFI for gimli, with the ranges framehop cannot follow.
    cfi: Cfi,
}

type SpaceUnwinder = UnwinderX86_64<Arc<[u8]>>;

/// One address space's unwinding: framehop's unwinder, and for the
/// frames beyond it, each module's CFI.
struct Space {
    unwinder: SpaceUnwinder,
    /// (start, end, load bias, file) of each module, by start.
    modules: Vec<(u64, u64, u64, Arc<UnwindFile>)>,
    /// Runtime ranges of the frames framehop cannot follow, by start.
    hard: Vec<(u64, u64)>,
}

impl Space {
    /// Whether the frame at `address` (a lookup address: the instruction
    /// pointer, or a return address minus one) needs every register.
    fn is_hard(&self, address: u64) -> bool {
        let i = self.hard.partition_point(|&(start, _)| start <= address);
        i > 0 && address < self.hard[i - 1].1
    }

    fn module(&self, address: u64) -> Option<&(u64, u64, u64, Arc<UnwindFile>)> {
        let i = self.modules.partition_point(|m| m.0 <= address);
        let m = self.modules.get(i.checked_sub(1)?)?;
        (address < m.1).then_some(m)
    }
}

/// What each rayon worker keeps between samples.
struct Scratch {
    cache: CacheX86_64,
    context: gimli::UnwindContext<usize>,
}

/// Unwind data by (path, build id); None for a file that cannot be used.
type Files = FxHashMap<(String, String), Option<Arc<UnwindFile>>>;

/// framehop over the files of this machine; see the module doc.
#[derive(Default)]
pub struct DwarfUnwinder {
    files: Mutex<Files>,
    spaces: Mutex<FxHashMap<u64, Arc<Space>>>,
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

    fn space_for(&self, space: &AddressSpace) -> Arc<Space> {
        if let Some(u) = self
            .spaces
            .lock()
            .ok()
            .and_then(|s| s.get(&space.id).cloned())
        {
            return u;
        }
        let mut unwinder = SpaceUnwinder::new();
        let mut modules = Vec::new();
        let mut hard = Vec::new();
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
            for &(start, end) in &file.cfi.hard {
                let (start, end) = (start.wrapping_add(bias), end.wrapping_add(bias));
                if start < mapping.limit && end > mapping.start && start < end {
                    hard.push((start, end));
                }
            }
            modules.push((mapping.start, mapping.limit, bias, file));
        }
        modules.sort_by_key(|m| m.0);
        hard.sort_unstable();
        let space_unwinder = Arc::new(Space {
            unwinder,
            modules,
            hard,
        });
        if let Ok(mut spaces) = self.spaces.lock() {
            // Kept for the next batches; an unwinder that has seen many
            // (a long session, a fuzzing run) starts afresh.
            if spaces.len() >= MAX_SPACES {
                spaces.clear();
            }
            spaces.insert(space.id, space_unwinder.clone());
        }
        space_unwinder
    }
}

impl StackUnwinder for DwarfUnwinder {
    fn unwind(&self, jobs: &mut [UnwindJob], stacks: &[u8]) {
        let mut spaces: FxHashMap<u64, Arc<Space>> = FxHashMap::default();
        for job in jobs.iter() {
            spaces
                .entry(job.space.id)
                .or_insert_with(|| self.space_for(&job.space));
        }
        jobs.par_iter_mut().for_each_init(
            || Scratch {
                cache: CacheX86_64::new(),
                context: gimli::UnwindContext::new(),
            },
            |scratch, job| {
                if let Some(space) = spaces.get(&job.space.id) {
                    let stack = stacks.get(job.stack.clone()).unwrap_or_default();
                    unwind_one(space, scratch, job, stack);
                }
            },
        );
    }
}

/// 8 bytes of the saved stack (`stack`, from `sp` up) at `address`.
fn read_stack(stack: &[u8], sp: u64, address: u64) -> Option<u64> {
    let at = usize::try_from(address.checked_sub(sp)?).ok()?;
    let bytes = stack.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// framehop's unwinding; again with every register (see the module doc)
/// when it meets a frame beyond it.
fn unwind_one(space: &Space, scratch: &mut Scratch, job: &mut UnwindJob, stack: &[u8]) {
    let (Some(sp), Some(bp)) = (job.regs[cfi::RSP], job.regs[cfi::RBP]) else {
        return;
    };
    let mut hard = false;
    {
        let mut read = |address: u64| read_stack(stack, sp, address).ok_or(());
        let regs = UnwindRegsX86_64::new(job.pc, sp, bp);
        let mut frames = space
            .unwinder
            .iter_frames(job.pc, regs, &mut scratch.cache, &mut read);
        let mut found = Vec::new();
        while found.len() < MAX_FRAMES {
            let lookup = match frames.next() {
                Ok(Some(FrameAddress::InstructionPointer(a))) => {
                    found.push(a);
                    a
                }
                Ok(Some(FrameAddress::ReturnAddress(a))) => {
                    found.push(a.get());
                    a.get() - 1
                }
                Ok(None) | Err(_) => break,
            };
            if space.is_hard(lookup) {
                hard = true;
                break;
            }
        }
        if !hard {
            job.frames = found;
            return;
        }
    }
    job.frames = unwind_with_registers(space, scratch, job, stack);
}

/// Unwinds `job` from its leaf with every register: gimli's evaluation of
/// each frame's CFI, framehop's step where a frame has no CFI.
fn unwind_with_registers(
    space: &Space,
    scratch: &mut Scratch,
    job: &UnwindJob,
    stack: &[u8],
) -> Vec<u64> {
    let mut regs: Registers = [None; 17];
    regs[..16].copy_from_slice(&job.regs);
    regs[cfi::RA] = Some(job.pc);
    let mut frames = vec![job.pc];
    // The stack bytes start at the sample's stack pointer.
    let base = job.regs[cfi::RSP].unwrap_or_default();
    let mut read = |address: u64| read_stack(stack, base, address);
    while frames.len() < MAX_FRAMES {
        let first = frames.len() == 1;
        let Some(pc) = regs[cfi::RA] else { break };
        let lookup = if first { pc } else { pc - 1 };
        let step = match space.module(lookup) {
            Some((_, _, bias, file)) => file.cfi.step(
                &mut scratch.context,
                lookup.wrapping_sub(*bias),
                &mut regs,
                first,
                &mut read,
            ),
            None => Step::Unknown,
        };
        match step {
            Step::Caller => {}
            Step::End | Step::Failed => break,
            Step::Unknown => {
                // framehop's step: its rules for code without CFI.
                let (Some(sp), Some(bp)) = (regs[cfi::RSP], regs[cfi::RBP]) else {
                    break;
                };
                let address = if first {
                    FrameAddress::from_instruction_pointer(pc)
                } else {
                    match FrameAddress::from_return_address(pc) {
                        Some(a) => a,
                        None => break,
                    }
                };
                let mut fh = UnwindRegsX86_64::new(pc, sp, bp);
                let mut read = |address: u64| read_stack(stack, base, address).ok_or(());
                match space
                    .unwinder
                    .unwind_frame(address, &mut fh, &mut scratch.cache, &mut read)
                {
                    Ok(Some(ra)) if ra != 0 => {
                        regs[cfi::RA] = Some(ra);
                        regs[cfi::RSP] = Some(fh.sp());
                        regs[cfi::RBP] = Some(fh.bp());
                    }
                    _ => break,
                }
            }
        }
        let Some(ra) = regs[cfi::RA] else { break };
        frames.push(ra);
    }
    frames
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
    let address = |name: &str| elf.section_by_name(name).map_or(0, |s| s.address());
    let cfi = Cfi::new(
        sections.eh_frame.clone(),
        sections.debug_frame.clone(),
        cfi::SectionAddresses {
            eh_frame: address(".eh_frame"),
            text: address(".text"),
            got: address(".got"),
        },
    );
    Some(UnwindFile {
        segments,
        sections,
        cfi,
    })
}
