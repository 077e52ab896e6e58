//! The vDSO: the small ELF image the kernel maps into every process
//! (`clock_gettime`, `gettimeofday`, ...). It has no file, so profiles
//! name its mapping `[vdso]` and perl pprof prints its addresses bare; but
//! every process on one kernel gets the same image, so the one mapped into
//! this process names the functions of a profile recorded on this machine.
//! It is used only when its size equals the profile's mapping's.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use cpuprof_profile::Mapping;

use crate::binary::Binary;
use crate::Options;

/// The path profiles give the vDSO's mapping.
pub const VDSO_PATH: &str = "[vdso]";

/// This process's vDSO as a binary, read once; `None` when it cannot be
/// read (no `[vdso]` line in `/proc/self/maps`, or not an ELF image).
fn own_vdso(options: &Options) -> Option<Arc<Binary>> {
    static VDSO: OnceLock<Option<Arc<Binary>>> = OnceLock::new();
    VDSO.get_or_init(|| {
        let image = own_image()?;
        Binary::parse(Path::new(VDSO_PATH), image.to_vec(), options)
            .ok()
            .map(Arc::new)
    })
    .clone()
}

/// This process's vDSO image, read once from its memory.
pub(crate) fn own_image() -> Option<Arc<[u8]>> {
    static IMAGE: OnceLock<Option<Arc<[u8]>>> = OnceLock::new();
    IMAGE
        .get_or_init(|| {
            let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
            let (start, end) = maps.lines().find_map(|line| {
                let mut fields = line.split_whitespace();
                let range = fields.next()?;
                (fields.last()? == VDSO_PATH).then_some(())?;
                let (a, b) = range.split_once('-')?;
                Some((
                    u64::from_str_radix(a, 16).ok()?,
                    u64::from_str_radix(b, 16).ok()?,
                ))
            })?;
            let size = usize::try_from(end.checked_sub(start)?).ok()?;
            if size > 1 << 20 {
                return None;
            }
            let mut image = vec![0u8; size];
            let mut memory = std::fs::File::open("/proc/self/mem").ok()?;
            memory.seek(SeekFrom::Start(start)).ok()?;
            memory.read_exact(&mut image).ok()?;
            Some(Arc::from(image))
        })
        .clone()
}

/// The vDSO image for `mapping`, when it is a `[vdso]` mapping of the size
/// of this process's vDSO.
pub(crate) fn for_mapping(mapping: &Mapping, options: &Options) -> Option<Arc<Binary>> {
    if mapping.path != VDSO_PATH {
        return None;
    }
    let vdso = own_vdso(options)?;
    let size = mapping.limit.checked_sub(mapping.start)?;
    (vdso.image_size() == size).then_some(vdso)
}
