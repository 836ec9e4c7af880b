use lacuna::cpu::Path;

use super::{cpuinfo_value, meminfo_bytes, missing, required_flags};

#[test]
fn reads_cpuinfo_and_meminfo_fields() {
    let cpuinfo = "processor\t: 0\nmodel name\t: Test CPU @ 2GHz\nflags\t\t: fpu avx2 fma\n";
    assert_eq!(
        cpuinfo_value(cpuinfo, "model name"),
        Some("Test CPU @ 2GHz")
    );
    assert_eq!(cpuinfo_value(cpuinfo, "flags"), Some("fpu avx2 fma"));
    assert_eq!(cpuinfo_value(cpuinfo, "bogus"), None);
    let meminfo = "MemTotal:       24576000 kB\nMemAvailable:    1024 kB\n";
    assert_eq!(meminfo_bytes(meminfo, "MemTotal"), Some(24_576_000 * 1024));
    assert_eq!(meminfo_bytes(meminfo, "MemAvailable"), Some(1024 * 1024));
    assert_eq!(meminfo_bytes(meminfo, "SwapTotal"), None);
}

#[test]
fn missing_names_the_absent_flags_of_unavailable_paths() {
    assert_eq!(missing(Path::Scalar, &[]), None);
    for path in Path::ALL {
        match missing(path, &[]) {
            None => assert!(path.is_available()),
            Some(why) => {
                assert!(!path.is_available());
                for flag in required_flags(path) {
                    assert!(why.contains(flag), "{why}");
                }
            }
        }
    }
}

#[test]
fn required_flags_include_the_base_paths() {
    assert_eq!(required_flags(Path::AvxVnni), ["avx2", "fma", "avx_vnni"]);
    assert_eq!(
        required_flags(Path::Amx),
        [
            "avx2",
            "fma",
            "avx512f",
            "avx512bw",
            "avx512vl",
            "avx512_vnni",
            "amx_tile",
            "amx_int8"
        ]
    );
}
