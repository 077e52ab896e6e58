//! The web UI's saved configurations (`POST /ui/configs` bodies from the
//! page, and the `settings.json` they are kept in): any body gives a
//! 200 with the list or a one-line 4xx, never a panic; what a 200 saved
//! is in the file and in `GET /ui/configs`'s list; any bytes as
//! `settings.json` read as a list (maybe empty), never a panic.
#![no_main]
use std::path::PathBuf;
use std::sync::OnceLock;

use cpuprof_web::configs;
use libfuzzer_sys::fuzz_target;

/// A directory of this process's own, on tmpfs when there is one.
fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("cpuprof-fuzz-configs.{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let path = dir().join("settings.json");
    // The input as a saved file someone else wrote.
    std::fs::write(&path, data).unwrap();
    let before = configs::read(&path);
    assert!(before.len() <= data.len());
    // The input as a POST body, over an empty list.
    let _ = std::fs::remove_file(&path);
    let response = configs::post(Some(&path), data);
    match response.status {
        200 => {
            let saved = configs::read(&path);
            assert!(saved.len() <= 1);
            let listed: serde_json::Value =
                serde_json::from_slice(&configs::list(Some(&path)).body).expect("the list is JSON");
            assert_eq!(
                listed["configs"].as_array().map(Vec::len),
                Some(saved.len())
            );
            for (name, query) in &saved {
                assert!(!name.is_empty() && name.len() <= 100 && !query.starts_with('?'));
            }
        }
        status => {
            assert!((400..500).contains(&status), "{status}");
            let text = String::from_utf8(response.body).unwrap();
            assert_eq!(text.trim_end().lines().count(), 1, "{text}");
        }
    }
});
