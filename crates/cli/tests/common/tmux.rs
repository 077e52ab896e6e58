//! A tmux server of its own per test, running `cpuprof` in a detached
//! pane (a real pseudo-terminal), typed at with `send-keys` and read with
//! `capture-pane`; every wait a bounded poll of the screen.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long any wait may last before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A tmux server of its own running one shell; killed on drop.
pub struct Tmux {
    /// Its socket, in the test's HOME (so removed with it).
    socket: PathBuf,
}

/// `s` quoted for `sh`.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl Tmux {
    /// Starts `cpuprof ARGS` in a 200x50 detached session of a server
    /// listening on `HOME/tmux-<tag>`, with only HOME, TERM=xterm,
    /// LANG=C.UTF-8 (block characters print as they are), PATH and, when
    /// given, XDG_DATA_HOME in its environment. The pane prints `EXIT=N`
    /// when cpuprof ends, and stays.
    pub fn start(tag: &str, home: &Path, data_home: Option<&Path>, args: &[&Path]) -> Tmux {
        let tmux = Tmux {
            socket: home.join(format!("tmux-{tag}")),
        };
        let mut line = format!(
            "env -i HOME={} TERM=xterm LANG=C.UTF-8 PATH=/usr/bin:/bin",
            quote(home.to_str().unwrap())
        );
        if let Some(data) = data_home {
            line.push_str(&format!(" XDG_DATA_HOME={}", quote(data.to_str().unwrap())));
        }
        line.push(' ');
        line.push_str(&quote(env!("CARGO_BIN_EXE_cpuprof")));
        for arg in args {
            line.push(' ');
            line.push_str(&quote(arg.to_str().unwrap()));
        }
        line.push_str("; echo EXIT=$?; sleep 600");
        tmux.run(&["new-session", "-d", "-x", "200", "-y", "50", &line]);
        tmux
    }

    /// Runs `tmux -S SOCKET ARGS`; panics if it fails.
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-u")
            .arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args)
            .env_remove("TMUX")
            .env("SHELL", "/bin/sh")
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::null())
            .output()
            .expect("cannot run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Presses `keys` (tmux key names: `Enter`, `Tab`, `C-c`, `Up`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Types `text` as it is.
    pub fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-l", text]);
    }

    /// The pane with its history, wrapped lines joined, trailing blanks
    /// (of each line and of the screen) removed.
    pub fn lines(&self) -> Vec<String> {
        let screen = self.run(&["capture-pane", "-p", "-J", "-S", "-2000"]);
        let mut lines: Vec<String> = screen.lines().map(|l| l.trim_end().to_string()).collect();
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        lines
    }

    /// Polls the screen every 50 ms until `done` holds; panics with the
    /// screen after `timeout`.
    pub fn wait(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&[String]) -> bool,
    ) -> Vec<String> {
        let start = Instant::now();
        loop {
            let lines = self.lines();
            if done(&lines) {
                return lines;
            }
            if start.elapsed() > timeout {
                panic!(
                    "{what}: not on the screen after {timeout:?}; the screen:\n{}",
                    lines.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the first prompt; returns the screen.
    pub fn wait_for_prompt(&self) -> Vec<String> {
        self.wait("the first prompt", PATIENCE, at_prompt)
    }

    /// Types `line` and Enter at the prompt, waits for the next prompt, and
    /// returns what was printed between the two.
    pub fn command(&self, line: &str) -> Vec<String> {
        let before = prompts(&self.lines());
        self.type_text(line);
        self.keys(&["Enter"]);
        let lines = self.wait(&format!("the prompt after {line:?}"), PATIENCE, |l| {
            at_prompt(l) && prompts(l) > before
        });
        let echo = format!("(pprof) {line}");
        let start = lines[..lines.len() - 1]
            .iter()
            .rposition(|l| *l == echo.trim_end())
            .unwrap_or_else(|| panic!("no {echo:?} on the screen:\n{}", lines.join("\n")));
        lines[start + 1..lines.len() - 1].to_vec()
    }

    /// Waits for the pane's `EXIT=N` line after cpuprof ended; returns N.
    pub fn wait_for_exit(&self) -> i32 {
        let lines = self.wait("EXIT=", PATIENCE, |l| {
            l.iter().any(|l| l.starts_with("EXIT="))
        });
        let line = lines.iter().find(|l| l.starts_with("EXIT=")).unwrap();
        line["EXIT=".len()..].parse().unwrap()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .env_remove("TMUX")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The last line is an empty prompt (`(pprof) ` without its blank).
pub fn at_prompt(lines: &[String]) -> bool {
    lines.last().is_some_and(|l| l == "(pprof)")
}

/// The prompts on the screen, empty or not.
pub fn prompts(lines: &[String]) -> usize {
    lines
        .iter()
        .filter(|l| *l == "(pprof)" || l.starts_with("(pprof) "))
        .count()
}
