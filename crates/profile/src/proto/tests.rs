use super::*;
use crate::testgen::any_profile;
use proptest::prelude::*;

proptest! {
    #[test]
    fn write_then_read_gives_the_same_model(p in any_profile()) {
        prop_assert!(p.validate().is_ok());
        let mut gz = Vec::new();
        write(&p, &mut gz).unwrap();
        prop_assert!(is_gzip(&gz));
        prop_assert_eq!(&read(&gz).unwrap(), &p);
        let mut raw = Vec::new();
        write_raw(&p, &mut raw).unwrap();
        prop_assert!(sniff(&raw));
        prop_assert_eq!(&read(&raw).unwrap(), &p);
    }
}

#[test]
fn errors_name_offsets() {
    let e = read(&[]).unwrap_err();
    assert_eq!(e.offset, 0);
    // Field 2 (sample), length 10, but only 1 byte follows.
    let e = read(&[0x0a, 0x00, 0x12, 0x0a, 0x00]).unwrap_err();
    assert_eq!(e.offset, 3, "{e}");
    assert!(e.message.contains("only 1 bytes remain"), "{e}");
    // A sample referring to a location that does not exist.
    let mut p = wire::Profile {
        string_table: vec![String::new(), "samples".into(), "count".into()],
        ..Default::default()
    };
    p.sample_type.push(wire::ValueType { r#type: 1, unit: 2 });
    p.sample.push(wire::Sample {
        location_id: vec![7],
        value: vec![1],
        label: vec![],
    });
    let bytes = p.encode_to_vec();
    let e = read(&bytes).unwrap_err();
    assert!(e.message.contains("location 7"), "{e}");
    assert_eq!(e.offset, 6, "{e}");
    // Damaged gzip.
    let e = read(&[0x1f, 0x8b, 0x08, 0, 0, 0]).unwrap_err();
    assert!(e.message.contains("gzip"), "{e}");
}

#[test]
fn string_table_must_start_empty() {
    let p = wire::Profile {
        string_table: vec!["x".into()],
        ..Default::default()
    };
    let e = read(&p.encode_to_vec()).unwrap_err();
    assert!(e.message.contains("string_table[0]"), "{e}");
}
