//! libc's own definitions of the functions the agent interposes (`execve`
//! and its family, `_exit`, `_Exit`, `pthread_create`, `pthread_sigmask`,
//! `sigprocmask`, `sigaction`, `signal`, `sigwait`, `sigwaitinfo`,
//! `sigtimedwait`, `signalfd`): found with
//! `dlsym(RTLD_NEXT)` by a load-time constructor, so that the paths that
//! use them never call the loader. Those paths may run where the loader
//! must not be entered: in a `vfork` child (which shares the parent's
//! memory, loader lock included), in a signal handler that calls `_exit`,
//! in the child of a multi-threaded `fork`.

use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The next definition of one symbol after ours: libc's.
pub(crate) struct NextDefinition {
    name: &'static CStr,
    address: AtomicUsize,
}

impl NextDefinition {
    const fn new(name: &'static CStr) -> NextDefinition {
        NextDefinition {
            name,
            address: AtomicUsize::new(0),
        }
    }

    /// The address of libc's definition, 0 if there is none. Resolved at
    /// load; only if something calls it before our constructor ran is it
    /// resolved here, through the loader.
    pub(crate) fn address(&self) -> usize {
        match self.address.load(Ordering::Acquire) {
            0 => self.resolve(),
            address => address,
        }
    }

    fn resolve(&self) -> usize {
        // SAFETY: dlsym with a valid NUL-terminated name.
        let address = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) } as usize;
        self.address.store(address, Ordering::Release);
        address
    }
}

pub(crate) static EXECVE: NextDefinition = NextDefinition::new(c"execve");
pub(crate) static EXECV: NextDefinition = NextDefinition::new(c"execv");
pub(crate) static EXECVP: NextDefinition = NextDefinition::new(c"execvp");
pub(crate) static EXECVPE: NextDefinition = NextDefinition::new(c"execvpe");
pub(crate) static FEXECVE: NextDefinition = NextDefinition::new(c"fexecve");
pub(crate) static EXECVEAT: NextDefinition = NextDefinition::new(c"execveat");
pub(crate) static EXIT: NextDefinition = NextDefinition::new(c"_exit");
pub(crate) static EXIT_UPPER: NextDefinition = NextDefinition::new(c"_Exit");
pub(crate) static PTHREAD_CREATE: NextDefinition = NextDefinition::new(c"pthread_create");
pub(crate) static PTHREAD_SIGMASK: NextDefinition = NextDefinition::new(c"pthread_sigmask");
pub(crate) static SIGPROCMASK: NextDefinition = NextDefinition::new(c"sigprocmask");
pub(crate) static SIGACTION: NextDefinition = NextDefinition::new(c"sigaction");
pub(crate) static SIGNAL: NextDefinition = NextDefinition::new(c"signal");
pub(crate) static SIGWAIT: NextDefinition = NextDefinition::new(c"sigwait");
pub(crate) static SIGWAITINFO: NextDefinition = NextDefinition::new(c"sigwaitinfo");
pub(crate) static SIGTIMEDWAIT: NextDefinition = NextDefinition::new(c"sigtimedwait");
pub(crate) static SIGNALFD: NextDefinition = NextDefinition::new(c"signalfd");

/// Resolves every definition at load (constructors may call `dlsym`).
extern "C" fn resolve_at_load() {
    for next in [
        &EXECVE,
        &EXECV,
        &EXECVP,
        &EXECVPE,
        &FEXECVE,
        &EXECVEAT,
        &EXIT,
        &EXIT_UPPER,
        &PTHREAD_CREATE,
        &PTHREAD_SIGMASK,
        &SIGPROCMASK,
        &SIGACTION,
        &SIGNAL,
        &SIGWAIT,
        &SIGWAITINFO,
        &SIGTIMEDWAIT,
        &SIGNALFD,
    ] {
        next.resolve();
    }
}

#[used]
#[unsafe(link_section = ".init_array")]
static RESOLVE_AT_LOAD: extern "C" fn() = resolve_at_load;
