//! Ctrl-C while a report runs: a SIGINT handler counts interruptions, and
//! each report's [`Writer`] fails (with [`io::ErrorKind::Interrupted`]'s
//! sibling, a dedicated error) once the count moved past its [`Ticket`].
//! At the prompt, rustyline reads Ctrl-C as a key and no signal is sent.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

static INTERRUPTIONS: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_sigint(_: libc::c_int) {
    // Async-signal-safe: one atomic add.
    INTERRUPTIONS.fetch_add(1, Ordering::SeqCst);
}

/// Installs the SIGINT handler (the session must survive Ctrl-C).
pub fn install() {
    // SAFETY: a handler that only increments an atomic; SA_RESTART so
    // that reads in progress are not failed by it.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
    }
}

/// The interruption count when a report started.
#[derive(Clone, Copy, Debug)]
pub struct Ticket(u64);

/// A ticket for a report starting now.
pub fn ticket() -> Ticket {
    Ticket(INTERRUPTIONS.load(Ordering::SeqCst))
}

impl Ticket {
    /// Ctrl-C was pressed since the ticket was taken.
    pub fn interrupted(self) -> bool {
        INTERRUPTIONS.load(Ordering::SeqCst) != self.0
    }
}

/// The error of a write after Ctrl-C.
#[derive(Debug)]
struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

/// True when `e` comes from a [`Writer`] after Ctrl-C.
pub fn is_interruption(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .and_then(|io| io.get_ref())
            .is_some_and(|inner| inner.is::<Interrupted>())
            || c.is::<Interrupted>()
    })
}

/// A writer that fails once Ctrl-C was pressed after its ticket.
pub struct Writer<W> {
    inner: W,
    ticket: Ticket,
}

impl<W: Write> Writer<W> {
    /// Wraps `inner` for a report that started at `ticket`.
    pub fn new(inner: W, ticket: Ticket) -> Self {
        Writer { inner, ticket }
    }

    fn check(&self) -> io::Result<()> {
        if self.ticket.interrupted() {
            Err(io::Error::other(Interrupted))
        } else {
            Ok(())
        }
    }
}

impl<W: Write> Write for Writer<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.check()?;
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.check()?;
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_fails_after_an_interruption_only() {
        let t = ticket();
        let mut w = Writer::new(Vec::new(), t);
        w.write_all(b"a").unwrap();
        on_sigint(libc::SIGINT);
        let err = w.write_all(b"b").unwrap_err();
        assert!(is_interruption(&anyhow::Error::from(err)));
        let mut fresh = Writer::new(Vec::new(), ticket());
        fresh.write_all(b"c").unwrap();
        assert_eq!(w.inner, b"a");
    }
}
