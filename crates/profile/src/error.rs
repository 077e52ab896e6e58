//! The error every reader returns: which format, where, what was expected.

use std::fmt;

/// A profile that could not be read: the format being parsed, the byte
/// offset of the problem and what was expected there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The format being parsed, e.g. `gperftools CPU profile`.
    pub format: &'static str,
    /// Byte offset in the input where the problem was found.
    pub offset: u64,
    /// What was expected, or what is wrong, as one line.
    pub message: String,
}

impl ParseError {
    /// An error in `format` at `offset`.
    pub fn new(format: &'static str, offset: u64, message: impl Into<String>) -> ParseError {
        ParseError {
            format,
            offset,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: offset {}: {}",
            self.format, self.offset, self.message
        )
    }
}

impl std::error::Error for ParseError {}
