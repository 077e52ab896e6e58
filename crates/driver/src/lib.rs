//! The driver: what the command line, the shell and the web UI share.
//!
//! - [`settings`]: the one table of report settings ([`settings::SETTINGS`])
//!   and a set of values ([`settings::Config`]); flags, the shell's
//!   `name=value` and `o`, and URL parameters all come from it.
//! - [`commands`]: the one table of report commands
//!   ([`commands::COMMANDS`]), each mapped to an [`commands::Output`].
//! - [`Session`]: inputs loaded once ([`Session::load`]), then any number
//!   of reports ([`Session::run`], the one dispatch to the output modules).
//! - [`line`]: the shell's command-line grammar (Go pprof's and perl
//!   pprof's), without side effects.
//! - [`cli`]: `cpuprof report`'s flags, generated from the two tables.
//! - [`load`]: reading inputs (binaries and profiles by content).
//! - [`symbols`]: `--symbols`, names of addresses read as text.
#![deny(missing_docs)]

pub mod cli;
pub mod commands;
pub mod fetch;
pub mod graph_output;
pub mod line;
pub mod load;
pub mod session;
pub mod settings;
pub mod symbols;

pub use session::{Destination, Session, Sources};
pub use settings::Config;
