//! Address lists as pprof's `--symbols` reads them on standard input: hex
//! words (`0x...`, several per line, separated by blanks, `,` or `+`), and
//! `/proc/self/maps` lines saying where the binaries were loaded (without
//! them the addresses are the binary's link-time ones).

use crate::gperftools::parse_maps_line;
use crate::model::Mapping;

/// What an address list holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AddressList {
    /// The `/proc/maps` lines, as mappings, in input order.
    pub mappings: Vec<Mapping>,
    /// The addresses, in input order.
    pub addresses: Vec<u64>,
}

/// Parses `input`. Blank lines are skipped; any other line must be a maps
/// line or hold at least one hex word. Errors name the line (1-based) and
/// what was expected.
pub fn parse(input: &str) -> Result<AddressList, String> {
    let mut list = AddressList::default();
    for (n, line) in input.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        if let Some(mapping) = parse_maps_line(line) {
            list.mappings.push(mapping);
            continue;
        }
        let before = list.addresses.len();
        for word in line.split(|c: char| c.is_whitespace() || c == ',' || c == '+') {
            let Some(hex) = word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) else {
                continue;
            };
            let address = u64::from_str_radix(hex, 16).map_err(|_| {
                format!(
                    "line {}: `{}`: expected a hex address of at most 16 digits",
                    n + 1,
                    word.chars().take(40).collect::<String>()
                )
            })?;
            list.addresses.push(address);
        }
        if list.addresses.len() == before {
            return Err(format!(
                "line {}: expected hex addresses (0x...) or a /proc/maps line, got `{}`",
                n + 1,
                line.chars().take(60).collect::<String>()
            ));
        }
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_maps_lines() {
        let list = parse(
            "0x1480 0x1750,0x10+0x20\n\n\
             555555554000-555555556000 r-xp 00000000 08:01 42 /usr/bin/prog\n0XfFfF\n",
        )
        .unwrap();
        assert_eq!(list.addresses, [0x1480, 0x1750, 0x10, 0x20, 0xffff]);
        assert_eq!(list.mappings.len(), 1);
        assert_eq!(list.mappings[0].start, 0x5555_5555_4000);
        assert_eq!(list.mappings[0].path, "/usr/bin/prog");
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(
            parse("0x10\nmain\n").unwrap_err(),
            "line 2: expected hex addresses (0x...) or a /proc/maps line, got `main`"
        );
        assert_eq!(
            parse("0x1ffffffffffffffff").unwrap_err(),
            "line 1: `0x1ffffffffffffffff`: expected a hex address of at most 16 digits"
        );
        assert_eq!(parse("0xzz").unwrap_err().split(':').next(), Some("line 1"));
    }

    proptest::proptest! {
        /// Addresses written in any of the accepted layouts read back.
        #[test]
        fn written_addresses_read_back(
            addresses in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..40),
            per_line in 1usize..5,
            separator in proptest::sample::select(vec![" ", ",", "+", "\t", " , "]),
            upper in proptest::prelude::any::<bool>(),
        ) {
            let text: Vec<String> = addresses
                .chunks(per_line)
                .map(|line| {
                    line.iter()
                        .map(|a| if upper { format!("0X{a:X}") } else { format!("{a:#x}") })
                        .collect::<Vec<_>>()
                        .join(separator)
                })
                .collect();
            let list = parse(&text.join("\n")).unwrap();
            proptest::prop_assert_eq!(list.addresses, addresses);
            proptest::prop_assert!(list.mappings.is_empty());
        }

        /// Any text gives a list or a one-line error, never a panic.
        #[test]
        fn any_text_is_read_or_refused(text in ".{0,200}") {
            if let Err(e) = parse(&text) {
                proptest::prop_assert!(!e.contains('\n'));
            }
        }
    }
}
