//! Symbolization: runtime addresses of a [`cpuprof_profile::Profile`] to
//! functions, source files, lines and inline chains, in-process, from ELF
//! symbol tables and DWARF.
//!
//! The main types:
//! - [`Binary`]: one ELF file, memory-mapped, with its separate debug file
//!   (found through the build id or `.gnu_debuglink`) and, for dwz-processed
//!   debug info, its supplementary file. It maps runtime addresses to file
//!   addresses through the `PT_LOAD` segments, looks up symbols and DWARF
//!   inline chains, and serves code bytes and line tables to the
//!   disassembly and source listings. Binaries are reusable.
//! - [`Symbolizer`]: symbolizes whole profiles, choosing a [`Binary`] for
//!   each [`Mapping`](cpuprof_profile::Mapping) (the binaries named by the
//!   user first, then the mapped files on disk) and caching the binaries it
//!   opened. [`symbolize`] is the one-shot form.
//! - [`debuginfod`]: executables, debug files and sources fetched by
//!   build id from debuginfod servers (`DEBUGINFOD_URLS`), with elfutils'
//!   cache; the [`Symbolizer`] asks it for mappings whose file is missing,
//!   has another build id, or has no debug information.
//! - [`unwind`]: the user stacks of perf.data `--call-graph dwarf`
//!   samples unwound with framehop against the mapped files' CFI (the
//!   perf.data reader calls it through the read options).
//! - The kernel (`[kernel.kallsyms]`, from `/proc/kallsyms`) and JIT code
//!   (`/tmp/perf-PID.map`) are named without ELF files.
//! - [`demangle`]: C++ and Rust (legacy and v0) demangling, and the short
//!   names pprof shows by default.
//!
//! Problems (a missing file, a mismatched binary, corrupt DWARF) are
//! [`Warning`]s: the profile keeps the addresses it could not resolve and
//! reports print them as pprof does.
#![deny(missing_docs)]

mod binary;
mod cfi;
mod crc32;
mod debugfile;
pub mod debuginfod;
pub mod demangle;
mod special;
mod symbolizer;
pub mod unwind;
mod vdso;

use std::fmt;
use std::path::PathBuf;

pub use binary::{Binary, Frame, Kind, Segment, Symbol};
pub use special::prefetch_kernel_symbols;
pub use symbolizer::{symbolize, Symbolizer};

/// What to symbolize with and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// Binaries named by the user. Each serves the profile's mapping with
    /// the same path, else the one with the same build id, else the one
    /// with the same file name, else the main executable's mapping. With
    /// exactly one binary and a profile without file mappings (gmon.out,
    /// DCPI), addresses are taken as that binary's link-time addresses.
    pub binaries: Vec<PathBuf>,
    /// Directories holding separate debug files: searched for
    /// `.build-id/xx/yyyy.debug` and for `.gnu_debuglink` names under the
    /// binary's directory. Default: `/usr/lib/debug`.
    pub debug_dirs: Vec<PathBuf>,
    /// Demangle C++ and Rust names (the `name` of each function; its
    /// `system_name` stays mangled). Default: true.
    pub demangle: bool,
    /// Report inlined functions as their own frames. Default: true. When
    /// false each location gets only its real (outermost) function, at the
    /// line of the call that was inlined.
    pub inlines: bool,
    /// Where files missing here are fetched by build id: the mapped file
    /// when it is missing or has another build id than the mapping, its
    /// debug information when it has none. Default: none (the CLI uses
    /// [`debuginfod::Debuginfod::from_env`]).
    pub debuginfod: Option<debuginfod::Debuginfod>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            binaries: Vec::new(),
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            demangle: true,
            inlines: true,
            debuginfod: None,
        }
    }
}

/// A problem met while symbolizing: the affected addresses stay
/// unsymbolized, everything else goes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// One line saying which file and what went wrong.
    pub message: String,
}

impl Warning {
    pub(crate) fn new(message: impl Into<String>) -> Warning {
        Warning {
            message: message.into(),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Why a [`Binary`] could not be opened.
#[derive(Debug)]
pub enum Error {
    /// The file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file is not an ELF file, or its headers are corrupt.
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the offset where known.
        message: String,
    },
}

impl Error {
    /// True when the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: {}", path.display(), source),
            Error::Parse { path, message } => write!(f, "{}: {}", path.display(), message),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Parse { .. } => None,
        }
    }
}
