//! Prints what the symbolizer knows about file addresses of a binary, in
//! the layout of `addr2line -f -i -C`: `cargo run --example frames -- BINARY ADDR...`
//! (hex addresses, with or without `0x`).

use std::path::Path;

use cpuprof_symbolize::{Binary, Options};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((binary, addresses)) = args.split_first() else {
        eprintln!("usage: frames BINARY ADDRESS...");
        std::process::exit(2);
    };
    let binary = match Binary::open(Path::new(binary), &Options::default()) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    for address in addresses {
        let Ok(address) = u64::from_str_radix(address.trim_start_matches("0x"), 16) else {
            eprintln!("not a hex address: {address}");
            std::process::exit(2);
        };
        let frames = binary.frames(address);
        if frames.is_empty() {
            println!("??\n??:0");
        }
        for frame in frames {
            let file = if frame.file.is_empty() {
                "??"
            } else {
                &frame.file
            };
            let line = if frame.line == 0 {
                "?".to_string()
            } else {
                frame.line.to_string()
            };
            println!("{}\n{}:{}", frame.function, file, line);
        }
    }
    for warning in binary.warnings() {
        eprintln!("warning: {warning}");
    }
}
