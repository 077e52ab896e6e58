//! CRC-32 (IEEE 802.3, the zlib polynomial) as `.gnu_debuglink` uses it to
//! tie a stripped file to its debug file.

const fn make_table() -> [[u32; 256]; 4] {
    let mut table = [[0u32; 256]; 4];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[0][i] = c;
        i += 1;
    }
    // Slicing-by-4 tables: table[k][i] is the CRC of byte i followed by k zero bytes.
    let mut i = 0;
    while i < 256 {
        let mut k = 1;
        while k < 4 {
            let prev = table[k - 1][i];
            table[k][i] = (prev >> 8) ^ table[0][(prev & 0xff) as usize];
            k += 1;
        }
        i += 1;
    }
    table
}

static TABLE: [[u32; 256]; 4] = make_table();

/// The CRC-32 of `data`.
pub(crate) fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let word = crc ^ u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        crc = TABLE[3][(word & 0xff) as usize]
            ^ TABLE[2][((word >> 8) & 0xff) as usize]
            ^ TABLE[1][((word >> 16) & 0xff) as usize]
            ^ TABLE[0][(word >> 24) as usize];
    }
    for &byte in chunks.remainder() {
        crc = TABLE[0][((crc ^ byte as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::crc32;

    #[test]
    fn known_values() {
        // The standard check value of CRC-32/ISO-HDLC.
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"a"), 0xe8b7_be43);
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414f_a339
        );
    }
}
