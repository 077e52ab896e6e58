//! cpuprof's profile model and file formats.
//!
//! [`Profile`] (in [`model`]) is the one data model: samples with stacks of
//! [`Location`]s (leaf first) and values, [`Mapping`]s, [`Function`]s and
//! inline chains of [`Line`]s. Every reader fills it and every output of the
//! report crate reads it. One module per format reads and writes it;
//! [`read_profile`] detects the format by content, never by file name.
//!
//! [`merge`] sums several profiles into one.
#![deny(missing_docs)]

pub mod error;
pub mod gperftools;
pub mod merge;
pub mod model;

pub use error::ParseError;
pub use model::*;

/// The formats cpuprof reads, in the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// gperftools' binary CPU profile.
    Gperftools,
}

impl Format {
    /// The human name of the format, as used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::Gperftools => "gperftools CPU profile",
        }
    }
}

/// Options for reading, for formats whose files do not say everything
/// about themselves.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Pointer width (4 or 8) and byte order of the profiled program, when
    /// a binary was given (gmon.out has neither in the file).
    pub target: Option<Target>,
}

/// The pointer width and byte order of a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// Pointer size in bytes: 4 or 8.
    pub pointer_size: u8,
    /// True for big-endian programs.
    pub big_endian: bool,
}

/// Which format `data` is in, judged by its content alone.
pub fn detect_format(data: &[u8]) -> Option<Format> {
    if gperftools::sniff(data) {
        return Some(Format::Gperftools);
    }
    None
}

/// Reads a profile in any supported format, detected by content.
pub fn read_profile(data: &[u8], _options: &ReadOptions) -> Result<(Format, Profile), ParseError> {
    match detect_format(data) {
        Some(Format::Gperftools) => Ok((Format::Gperftools, gperftools::read(data)?)),
        None if data.is_empty() => Err(ParseError::new(
            "profile",
            0,
            "empty file: expected a profile",
        )),
        None => Err(ParseError::new(
            "profile",
            0,
            "unrecognized content: expected a gperftools CPU profile",
        )),
    }
}
