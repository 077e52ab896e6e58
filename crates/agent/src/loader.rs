//! Following `dlopen`, `dlmopen` and `dlclose` in every process: our
//! definitions call libc's and then have the module snapshot refreshed in
//! the calling thread ([`crate::profiler::program_changed_its_objects`]),
//! so that a process without a control thread (a single-threaded program,
//! a fork server) unwinds through libraries loaded after the start.
//!
//! glibc's `dlopen` and `dlmopen` look at their caller (the return
//! address): a bare name (no `/`) is searched with the calling object's
//! `DT_RUNPATH` and the `DT_RPATH` of its loaders, and the new object goes
//! into the caller's namespace. Called from our wrapper the caller would
//! be libcpuprof.so, so the exported symbols are small assembly
//! trampolines that first ask [`route_dlopen`] / [`route_dlmopen`] where
//! to go, then jump there with the caller's registers and return address
//! untouched: to libc's definition itself (the call is then exactly the
//! program's, and not followed at once) whenever the caller could make a
//! difference, else to the following wrapper.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::interpose::{DLCLOSE, DLMOPEN, DLOPEN};

/// Set once the program has used `dlmopen` with a namespace other than the
/// base one: from then on a caller may live in another namespace, and
/// every `dlopen` goes straight to libc's.
static OTHER_NAMESPACES: AtomicBool = AtomicBool::new(false);

/// Dynamic-section tags (elf.h).
const DT_NULL: i64 = 0;
const DT_RPATH: i64 = 15;
const DT_RUNPATH: i64 = 29;

/// One dynamic-section entry: tag, value.
type Dyn = [i64; 2];

type Dlopen = unsafe extern "C" fn(*const c_char, c_int) -> *mut c_void;
type Dlmopen = unsafe extern "C" fn(libc::Lmid_t, *const c_char, c_int) -> *mut c_void;
type Dlclose = unsafe extern "C" fn(*mut c_void) -> c_int;

// The trampolines save the arguments, call the router with the caller's
// return address, restore the arguments and jump where it said. At entry
// rsp = 8 (mod 16); three 8-byte slots make the call aligned.

/// Interposes libc's `dlopen` (see the module's documentation).
///
/// # Safety
/// Same contract as libc's `dlopen`.
#[unsafe(no_mangle)]
#[unsafe(naked)]
pub unsafe extern "C" fn dlopen(_filename: *const c_char, _flags: c_int) -> *mut c_void {
    std::arch::naked_asm!(
    ".cfi_startproc",
    "push rdi",
    ".cfi_adjust_cfa_offset 8",
    "push rsi",
    ".cfi_adjust_cfa_offset 8",
    "push rdx",
    ".cfi_adjust_cfa_offset 8",
    "mov rdx, [rsp + 24]",
    "call {route}",
    "pop rdx",
    ".cfi_adjust_cfa_offset -8",
    "pop rsi",
    ".cfi_adjust_cfa_offset -8",
    "pop rdi",
    ".cfi_adjust_cfa_offset -8",
    "jmp rax",
    ".cfi_endproc",
        route = sym route_dlopen,
    )
}

/// Interposes libc's `dlmopen` (see the module's documentation).
///
/// # Safety
/// Same contract as libc's `dlmopen`.
#[unsafe(no_mangle)]
#[unsafe(naked)]
pub unsafe extern "C" fn dlmopen(
    _lmid: libc::Lmid_t,
    _filename: *const c_char,
    _flags: c_int,
) -> *mut c_void {
    std::arch::naked_asm!(
    ".cfi_startproc",
    "push rdi",
    ".cfi_adjust_cfa_offset 8",
    "push rsi",
    ".cfi_adjust_cfa_offset 8",
    "push rdx",
    ".cfi_adjust_cfa_offset 8",
    "mov rdx, [rsp + 24]",
    "call {route}",
    "pop rdx",
    ".cfi_adjust_cfa_offset -8",
    "pop rsi",
    ".cfi_adjust_cfa_offset -8",
    "pop rdi",
    ".cfi_adjust_cfa_offset -8",
    "jmp rax",
    ".cfi_endproc",
        route = sym route_dlmopen,
    )
}

/// Where our `dlopen` jumps: libc's definition, or [`followed_dlopen`].
extern "C" fn route_dlopen(filename: *const c_char, _flags: c_int, caller: usize) -> usize {
    let real = DLOPEN.address();
    if real == 0 {
        return unresolved_dlopen as *const () as usize;
    }
    if OTHER_NAMESPACES.load(Ordering::Acquire) || depends_on_caller(filename, caller) {
        return real;
    }
    followed_dlopen as *const () as usize
}

/// Where our `dlmopen` jumps: libc's definition, or [`followed_dlmopen`].
extern "C" fn route_dlmopen(lmid: libc::Lmid_t, filename: *const c_char, caller: usize) -> usize {
    let real = DLMOPEN.address();
    if real == 0 {
        return unresolved_dlmopen as *const () as usize;
    }
    if lmid != libc::LM_ID_BASE {
        OTHER_NAMESPACES.store(true, Ordering::Release);
    }
    if OTHER_NAMESPACES.load(Ordering::Acquire) || depends_on_caller(filename, caller) {
        return real;
    }
    followed_dlmopen as *const () as usize
}

/// True when the loader's search for `filename` could differ with the
/// caller: a bare name, and the calling object has a `DT_RUNPATH` or some
/// loaded object (other than the executable, whose own is used either
/// way) has a `DT_RPATH`. An unknown caller counts as one that differs.
fn depends_on_caller(filename: *const c_char, caller: usize) -> bool {
    if filename.is_null() {
        return false;
    }
    // SAFETY: the program passes a NUL-terminated name, as dlopen requires.
    let name = unsafe { std::ffi::CStr::from_ptr(filename) };
    if name.to_bytes().contains(&b'/') {
        return false;
    }
    struct Search {
        caller: u64,
        caller_found: bool,
        differs: bool,
        first: bool,
    }
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: `data` is our Search; `info` and its headers are valid
        // during the call, and PT_DYNAMIC lies in a loaded segment.
        unsafe {
            let search = &mut *(data as *mut Search);
            let info = &*info;
            let main = std::mem::replace(&mut search.first, false);
            let phdrs = std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize);
            let holds_caller = phdrs.iter().any(|ph| {
                let start = info.dlpi_addr.wrapping_add(ph.p_vaddr);
                ph.p_type == libc::PT_LOAD
                    && (start..start.wrapping_add(ph.p_memsz)).contains(&search.caller)
            });
            search.caller_found |= holds_caller;
            if let Some(dynamic) = phdrs.iter().find(|ph| ph.p_type == libc::PT_DYNAMIC) {
                let mut entry = info.dlpi_addr.wrapping_add(dynamic.p_vaddr) as *const Dyn;
                let end = entry.cast::<u8>().add(dynamic.p_memsz as usize) as *const Dyn;
                while entry < end && (*entry)[0] != DT_NULL {
                    let tag = (*entry)[0];
                    if (tag == DT_RPATH && !main) || (tag == DT_RUNPATH && holds_caller) {
                        search.differs = true;
                    }
                    entry = entry.add(1);
                }
            }
            c_int::from(search.differs)
        }
    }
    let mut search = Search {
        caller: caller as u64,
        caller_found: false,
        differs: false,
        first: true,
    };
    // SAFETY: the callback only touches `search` and the loader's data.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut search as *mut Search).cast()) };
    search.differs || !search.caller_found
}

/// libc's `dlopen`, then the modules refreshed if it loaded something.
unsafe extern "C" fn followed_dlopen(filename: *const c_char, flags: c_int) -> *mut c_void {
    // SAFETY: routed here only when DLOPEN resolved to libc's dlopen.
    let real = unsafe { std::mem::transmute::<usize, Dlopen>(DLOPEN.address()) };
    // SAFETY: the program's arguments, unchanged.
    let handle = unsafe { real(filename, flags) };
    if !handle.is_null() {
        objects_changed();
    }
    handle
}

/// libc's `dlmopen`, then the modules refreshed if it loaded something.
unsafe extern "C" fn followed_dlmopen(
    lmid: libc::Lmid_t,
    filename: *const c_char,
    flags: c_int,
) -> *mut c_void {
    // SAFETY: routed here only when DLMOPEN resolved to libc's dlmopen.
    let real = unsafe { std::mem::transmute::<usize, Dlmopen>(DLMOPEN.address()) };
    // SAFETY: the program's arguments, unchanged.
    let handle = unsafe { real(lmid, filename, flags) };
    if !handle.is_null() {
        objects_changed();
    }
    handle
}

/// What `dlopen` does when libc has none to call (never on glibc).
unsafe extern "C" fn unresolved_dlopen(_: *const c_char, _: c_int) -> *mut c_void {
    std::ptr::null_mut()
}

/// What `dlmopen` does when libc has none to call (never on glibc).
unsafe extern "C" fn unresolved_dlmopen(
    _: libc::Lmid_t,
    _: *const c_char,
    _: c_int,
) -> *mut c_void {
    std::ptr::null_mut()
}

/// Interposes libc's `dlclose` (which does not look at its caller): the
/// modules are refreshed once the object is gone.
///
/// # Safety
/// Same contract as libc's `dlclose`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlclose(handle: *mut c_void) -> c_int {
    let address = DLCLOSE.address();
    if address == 0 {
        return -1;
    }
    // SAFETY: libc's dlclose, which has this type.
    let real = unsafe { std::mem::transmute::<usize, Dlclose>(address) };
    // SAFETY: the program's argument, unchanged.
    let rc = unsafe { real(handle) };
    if rc == 0 {
        objects_changed();
    }
    rc
}

/// Refreshes the modules with the calling thread's errno kept.
fn objects_changed() {
    // SAFETY: the calling thread's errno.
    let errno = unsafe { libc::__errno_location() };
    // SAFETY: as above.
    let saved = unsafe { *errno };
    crate::profiler::program_changed_its_objects();
    // SAFETY: as above.
    unsafe { *errno = saved };
}
