//! Read and write throughput of every format on one synthetic profile
//! (200k samples of 24-frame stacks over 5k addresses, or its flat and
//! histogram forms). `cargo bench -p cpuprof-profile --bench formats`
//! prints MB/s per format and direction.

use std::time::Instant;

use cpuprof_profile::{
    collapsed, cpu_sample_types, dcpi, gmon, gperftools, proto, Function, Line, Profile,
    ProfileBuilder, ValueType,
};

fn synthetic() -> Profile {
    let mut b = ProfileBuilder::new(cpu_sample_types());
    b.profile.period = 10_000_000;
    b.profile.period_type = ValueType::new("cpu", "nanoseconds");
    b.profile.mappings = vec![cpuprof_profile::Mapping {
        start: 0x400000,
        limit: 0x500000,
        path: "/bin/app".into(),
        perms: "r-xp".into(),
        ..Default::default()
    }];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let locs: Vec<_> = (0..5000u64)
        .map(|i| b.location_at(0x400000 + i * 16))
        .collect();
    for s in 0..200_000 {
        let stack: Vec<_> = (0..24).map(|_| locs[(next() % 5000) as usize]).collect();
        let n = (s % 7 + 1) as i64;
        b.add_sample(stack, vec![n, n * 10_000_000]);
    }
    b.finish()
}

fn symbolized(p: &Profile) -> Profile {
    let mut p = p.clone();
    for i in 0..p.locations.len() {
        let f = cpuprof_profile::FunctionId::from_index(p.functions.len());
        p.functions.push(Function {
            name: format!("function_{i}"),
            ..Default::default()
        });
        p.locations[i].lines = vec![Line {
            function: f,
            line: 10,
            column: 0,
        }];
    }
    p
}

fn measure(name: &str, bytes: usize, mut f: impl FnMut()) {
    f(); // warm up
    let runs = 3;
    let start = Instant::now();
    for _ in 0..runs {
        f();
    }
    let secs = start.elapsed().as_secs_f64() / runs as f64;
    println!(
        "{name:<28} {:>8.1} MB/s  ({:.1} ms, {:.1} MB)",
        bytes as f64 / secs / 1e6,
        secs * 1e3,
        bytes as f64 / 1e6
    );
}

fn main() {
    let p = synthetic();
    let named = symbolized(&p);
    let mut g = Vec::new();
    gperftools::write(&p, &mut g).unwrap();
    measure("gperftools read", g.len(), || {
        drop(gperftools::read(&g).unwrap())
    });
    measure("gperftools write", g.len(), || {
        gperftools::write(&p, &mut Vec::new()).unwrap()
    });
    let mut pb = Vec::new();
    proto::write(&named, &mut pb).unwrap();
    let mut raw = Vec::new();
    proto::write_raw(&named, &mut raw).unwrap();
    measure("proto read (gzip)", pb.len(), || {
        drop(proto::read(&pb).unwrap())
    });
    measure("proto read (raw)", raw.len(), || {
        drop(proto::read(&raw).unwrap())
    });
    measure("proto write (gzip)", pb.len(), || {
        proto::write(&named, &mut Vec::new()).unwrap()
    });
    measure("proto write (raw)", raw.len(), || {
        proto::write_raw(&named, &mut Vec::new()).unwrap()
    });
    let mut c = Vec::new();
    collapsed::write(&named, 0, &mut c).unwrap();
    measure("collapsed read", c.len(), || {
        drop(collapsed::read(&c).unwrap())
    });
    measure("collapsed write", c.len(), || {
        collapsed::write(&named, 0, &mut Vec::new()).unwrap()
    });
    let (gm, _) = gmon::from_profile(&p);
    let mut gb = Vec::new();
    gmon::write(&gm, &mut gb).unwrap();
    measure("gmon read", gb.len(), || {
        drop(gmon::read(&gb, None).unwrap())
    });
    measure("gmon to model", gb.len(), || {
        drop(gmon::to_profile(&gm, None))
    });
    let (d, _) = dcpi::from_profile(&p);
    let mut db = Vec::new();
    dcpi::write(&d[0], &mut db).unwrap();
    measure("dcpi read", db.len(), || drop(dcpi::read(&db).unwrap()));
    measure("dcpi write", db.len(), || {
        dcpi::write(&d[0], &mut Vec::new()).unwrap()
    });
}
