//! The agent's lines on stderr (`cpuprof: …`, `PROFILE: …`): written
//! with `write(2)`, without locks or buffering.

/// Writes `cpuprof: message` to stderr without locks or buffering (safe
/// in a forked child and at exit).
pub(crate) fn diag(message: &str) {
    let line = format!("cpuprof: {message}\n");
    write_stderr(&line);
}

pub(crate) fn write_stderr(text: &str) {
    let mut bytes = text.as_bytes();
    while !bytes.is_empty() {
        // SAFETY: writing a live buffer to fd 2.
        let n = unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            break;
        }
        bytes = &bytes[n as usize..];
    }
}
