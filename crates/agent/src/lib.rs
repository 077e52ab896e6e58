//! The sampling agent: `libcpuprof.so` and the Rust `ProfilerGuard` API.
#![deny(missing_docs)]
