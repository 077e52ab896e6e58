//! Symbolization: runtime addresses of a [`cpuprof_profile::Profile`] to
//! functions, source files, lines and inline chains.
#![deny(missing_docs)]
