//! The web UI's HTTP behaviour, on a real `cpuprof report --http` process
//! over a profile of spin: DNS rebinding refused, unknown routes, the
//! source view's files, methods and origins, sizes, and load (200
//! concurrent requests, all answered, memory flat afterwards); the
//! downloads, and the Download menu in Chromium.

mod common;

use common::{request, rss_kib, spin, Server};

fn server() -> Option<Server> {
    let spin = spin()?;
    Some(Server::start(&[], &[&spin.binary, &spin.profile]))
}

#[test]
fn a_host_header_that_is_not_the_loopback_name_is_refused() {
    let Some(server) = server() else { return };
    let port = server.addr.rsplit(':').next().unwrap().to_string();
    for host in [
        "evil.example",
        &format!("evil.example:{port}"),
        "127.0.0.1:1",
    ] {
        let (status, _) = request(&server.addr, "GET", "/ui/top", host, &[], b"");
        assert_eq!(status, 403, "Host: {host}");
    }
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let (status, _) = request(&server.addr, "GET", "/ui/top", &host, &[], b"");
        assert_eq!(status, 200, "Host: {host}");
    }
}

#[test]
fn routes_unknown_404_root_redirects_and_every_view_answers() {
    let Some(server) = server() else { return };
    assert_eq!(server.get("/ui/nothing").0, 404);
    assert_eq!(server.get("/etc/passwd").0, 404);
    assert_eq!(server.get("/").0, 302);
    for view in [
        "/ui/top",
        "/ui/graph",
        "/ui/flamegraph",
        "/ui/flamegraph/frame",
        "/ui/peek?f=burn_a",
        "/ui/source?f=burn_a",
        "/ui/disasm?f=burn_a",
        "/ui/top?f=burn_b&g=lines&si=samples",
    ] {
        let (status, body) = server.get(view);
        assert_eq!(status, 200, "{view}");
        assert!(!body.is_empty(), "{view}");
    }
    let (status, body) = server.get("/ui/top?f=burn_b");
    assert_eq!(status, 200);
    let page = String::from_utf8_lossy(&body);
    assert!(page.contains(">burn_b<"), "{page}");
    assert!(!page.contains(">burn_a<"), "focus=burn_b keeps burn_a out");
    // A bad value is the request's fault.
    assert_eq!(server.get("/ui/top?g=bytes").0, 400);
    assert_eq!(server.get("/ui/top?f=(").0, 400);
    let (status, proto) = server.get("/ui/download");
    assert_eq!(status, 200);
    assert_eq!(&proto[..2], &[0x1f, 0x8b], "gzipped profile.proto");
    // The download is the current view's profile: focused, it reads back
    // as `--focus` of the whole.
    let (status, focused) = server.get("/ui/download?f=burn_b");
    assert_eq!(status, 200);
    assert!(focused.len() < proto.len());
    let dir = cpuprof_testkit::TempDir::new().unwrap();
    let path = dir.path().join("focused.pb.gz");
    std::fs::write(&path, &focused).unwrap();
    let spin = spin().unwrap();
    let report = |args: &[&str], profile: &std::path::Path| {
        cpuprof_testkit::run_stdout(
            std::process::Command::new(common::cpuprof_binary())
                .arg("report")
                .arg("--text")
                .args(args)
                .arg(&spin.binary)
                .arg(profile),
        )
    };
    // Its rows are the focused report's (its Total is only what was kept).
    let rows = |text: String| text.lines().skip(1).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        rows(report(&[], &path)),
        rows(report(&["--focus=burn_b"], &spin.profile)),
        "the downloaded profile is the focused one"
    );
}

#[test]
fn the_source_view_reads_only_files_named_by_the_profile() {
    let Some(server) = server() else { return };
    let spin_c = cpuprof_testkit::workload("spin.c");
    let (status, body) = server.get(&format!("/ui/source?f=burn_a&file={}", spin_c.display()));
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("x * 1.0000001"));
    for path in ["/etc/passwd", "../../etc/passwd", "spin.c"] {
        let (status, _) = server.get(&format!("/ui/source?f=burn_a&file={path}"));
        assert_eq!(status, 404, "{path}");
        // Without a selection too: the README's `/ui/source?file=PATH`.
        let (status, body) = server.get(&format!("/ui/source?file={path}"));
        assert_eq!(status, 404, "{path} without f=");
        assert!(!String::from_utf8_lossy(&body).contains("root:"));
    }
}

#[test]
fn only_get_on_views_and_same_origin_posts_for_configs() {
    let Some(server) = server() else { return };
    for method in ["POST", "PUT", "DELETE"] {
        let (status, _) = request(&server.addr, method, "/ui/top", &server.addr, &[], b"");
        assert_eq!(status, 405, "{method}");
    }
    let body = br#"{"name":"x","query":"f=burn_a"}"#;
    let (status, _) = request(&server.addr, "POST", "/ui/configs", &server.addr, &[], body);
    assert_eq!(status, 403, "no Origin");
    let (status, _) = request(
        &server.addr,
        "POST",
        "/ui/configs",
        &server.addr,
        &["Origin: http://evil.example"],
        body,
    );
    assert_eq!(status, 403, "another origin");
    let big = vec![b'a'; 70 * 1024];
    let (status, _) = request(&server.addr, "POST", "/ui/configs", &server.addr, &[], &big);
    assert_eq!(status, 413);
    let long = format!("/ui/top?f={}", "a".repeat(20 * 1024));
    assert_eq!(server.get(&long).0, 414);
}

#[test]
fn saved_configurations_round_trip() {
    let Some(spin) = spin() else { return };
    let dir = cpuprof_testkit::TempDir::new().unwrap();
    // The config directory comes from XDG_CONFIG_HOME: a server of its own.
    let server = Server::start_with_env(
        &[],
        &[&spin.binary, &spin.profile],
        &[("XDG_CONFIG_HOME", dir.path())],
    );
    let origin = format!("Origin: {}", server.url);
    let (status, body) = request(
        &server.addr,
        "POST",
        "/ui/configs",
        &server.addr,
        &[&origin, "Content-Type: application/json"],
        br#"{"name":"only b","query":"f=burn_b&g=lines"}"#,
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let saved = std::fs::read_to_string(dir.path().join("cpuprof/settings.json")).unwrap();
    assert!(
        saved.contains("only b") && saved.contains("f=burn_b&g=lines"),
        "{saved}"
    );
    let (status, body) = server.get("/ui/configs");
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("\"only b\""));
    let (status, _) = request(
        &server.addr,
        "POST",
        "/ui/configs",
        &server.addr,
        &[&origin],
        br#"{"name":"only b","delete":true}"#,
    );
    assert_eq!(status, 200);
    assert!(
        !std::fs::read_to_string(dir.path().join("cpuprof/settings.json"))
            .unwrap()
            .contains("only b")
    );
}

#[test]
fn two_hundred_concurrent_requests_are_all_answered_and_memory_stays_flat() {
    let Some(server) = server() else { return };
    let views = [
        "/ui/top",
        "/ui/graph",
        "/ui/flamegraph/frame",
        "/ui/peek?f=burn_a",
        "/ui/top?g=lines",
    ];
    let round = |n: usize| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let addr = server.addr.clone();
                let path = views[i % views.len()];
                std::thread::spawn(move || request(&addr, "GET", path, &addr, &[], b"").0)
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|&s| s == 200)
            .count()
    };
    assert_eq!(round(200), 200, "every request answered 200");
    let after_first = rss_kib(server.pid());
    for _ in 0..3 {
        assert_eq!(round(200), 200);
    }
    let after_more = rss_kib(server.pid());
    assert!(after_first > 0);
    assert!(
        after_more < after_first + after_first / 4 + 8 * 1024,
        "RSS grew from {after_first} KiB to {after_more} KiB over 600 more requests"
    );
}

#[test]
fn http_with_an_output_option_is_an_error() {
    let Some(spin) = spin() else { return };
    for extra in [&["--text"][..], &["-o", "/dev/null"], &["--flame"]] {
        let out = std::process::Command::new(common::cpuprof_binary())
            .arg("report")
            .arg("--http=127.0.0.1:")
            .arg("--no-browser")
            .args(extra)
            .arg(&spin.binary)
            .arg(&spin.profile)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{extra:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--http"), "{extra:?}: {stderr}");
    }
}

#[test]
fn the_download_menu_offers_speedscope_of_the_current_view() {
    let Some(server) = server() else { return };
    let (status, page) = server.get("/ui/top");
    assert_eq!(status, 200);
    let page = String::from_utf8_lossy(&page);
    assert!(
        page.contains("data-download=\"/ui/download/speedscope\""),
        "the Download menu has a speedscope entry"
    );
    // The whole profile: the bytes of `cpuprof convert --to speedscope`.
    let (status, whole) = server.get("/ui/download/speedscope");
    assert_eq!(status, 200);
    let spin = spin().unwrap();
    let dir = cpuprof_testkit::TempDir::new().unwrap();
    let out = dir.path().join("spin.speedscope.json");
    cpuprof_testkit::run_ok(
        std::process::Command::new(common::cpuprof_binary())
            .args(["convert", "--to", "speedscope", "-o"])
            .arg(&out)
            .arg(&spin.binary)
            .arg(&spin.profile),
    );
    assert_eq!(
        String::from_utf8_lossy(&whole),
        String::from_utf8_lossy(&std::fs::read(&out).unwrap()),
        "the web UI's download is convert's file"
    );
    // Focused on burn_b: every sample has burn_b, and less weight.
    let (status, focused) = server.get("/ui/download/speedscope?f=burn_b");
    assert_eq!(status, 200);
    let weight = |file: &serde_json::Value| -> i64 {
        file["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["weights"].as_array().unwrap())
            .map(|w| w.as_i64().unwrap())
            .sum()
    };
    let whole: serde_json::Value = serde_json::from_slice(&whole).unwrap();
    let focused: serde_json::Value = serde_json::from_slice(&focused).unwrap();
    let frames = focused["shared"]["frames"].as_array().unwrap();
    let burn_b = frames.iter().position(|f| f["name"] == "burn_b").unwrap() as u64;
    for profile in focused["profiles"].as_array().unwrap() {
        for stack in profile["samples"].as_array().unwrap() {
            assert!(stack.as_array().unwrap().contains(&burn_b.into()));
        }
    }
    assert!(0 < weight(&focused) && weight(&focused) < weight(&whole));
    assert_eq!(server.get("/ui/download/speedscope?f=(").0, 400);
}

/// The Download menu in a real browser (Debian's headless Chromium driven
/// by Playwright, `download_menu.py`): on a focused view it offers
/// profile.proto and speedscope's JSON, each link carrying the view's
/// query, and the speedscope file it links to is the focused one.
#[test]
fn the_download_menu_links_the_current_view_in_both_formats_in_chromium() {
    let Some(spin) = spin() else { return };
    let playwright = std::process::Command::new("python3")
        .args(["-c", "import playwright.sync_api"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !(playwright && std::path::Path::new("/usr/bin/chromium").exists()) {
        assert!(
            !cpuprof_testkit::peers_required(),
            "playwright or chromium is missing"
        );
        eprintln!("skipped: playwright (python3) or /usr/bin/chromium is missing");
        return;
    }
    let server = Server::start(&[], &[&spin.binary, &spin.profile]);
    let output = std::process::Command::new("timeout")
        .arg("120")
        .arg("python3")
        .arg(cpuprof_testkit::repo_root().join("crates/web/tests/download_menu.py"))
        .arg(&server.url)
        .output()
        .expect("python3");
    assert!(
        output.status.success(),
        "download_menu.py failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        seen["problems"],
        serde_json::Value::Array(vec![]),
        "{seen:#}"
    );
    let entries = seen["entries"].as_array().unwrap();
    let summary: Vec<(&str, &str, bool)> = entries
        .iter()
        .map(|e| {
            (
                e["href"].as_str().unwrap(),
                e["file"].as_str().unwrap(),
                e["visible"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("/ui/download?f=burn_b", "profile.pb.gz", true),
            (
                "/ui/download/speedscope?f=burn_b",
                "profile.speedscope.json",
                true
            ),
        ]
    );
    assert_eq!(seen["status"], 200);
    let file = &seen["file"];
    let frames = file["shared"]["frames"].as_array().unwrap();
    let burn_b = frames.iter().position(|f| f["name"] == "burn_b").unwrap();
    let profiles = file["profiles"].as_array().unwrap();
    assert!(!profiles.is_empty());
    for profile in profiles {
        for stack in profile["samples"].as_array().unwrap() {
            assert!(stack.as_array().unwrap().contains(&burn_b.into()));
        }
    }
    assert!(
        !frames.iter().any(|f| f["name"] == "burn_a"),
        "focused on burn_b"
    );
}
