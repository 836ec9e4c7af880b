use super::*;

#[test]
fn names_round_trip() {
    for p in Path::ALL {
        assert_eq!(Path::from_name(p.name()), Ok(p));
        assert_eq!(Path::from_name(&p.name().to_uppercase()), Ok(p));
    }
    assert_eq!(
        Path::from_name("sse9"),
        Err(Error::UnknownPath {
            name: "sse9".into()
        })
    );
}

#[test]
fn scalar_is_always_available_and_best_is_available() {
    assert!(Path::Scalar.is_available());
    assert!(Path::best().is_available());
    let avail = Path::available();
    assert_eq!(avail.first(), Some(&Path::Scalar));
    assert_eq!(avail.last(), Some(&Path::best()));
}

#[test]
fn tiers_imply_lower_tiers() {
    // A machine with a tier has every vector tier under it (the dispatch relies on it).
    if Path::Avx512Vnni.is_available() || Path::AvxVnni.is_available() {
        assert!(Path::Avx2.is_available());
    }
    if Path::Amx.is_available() {
        assert!(Path::Avx512Vnni.is_available());
    }
    if Path::NeonI8mm.is_available() {
        assert!(Path::NeonDot.is_available());
    }
    if Path::NeonDot.is_available() {
        assert!(Path::Neon.is_available());
    }
    // Every available path belongs to this architecture.
    assert!(
        Path::available()
            .iter()
            .all(|p| Path::of_this_arch().contains(p))
    );
}

#[test]
fn active_is_available() {
    if let Ok(p) = Path::active() {
        assert!(p.is_available());
    }
}

/// The vendor read from CPUID is the one Linux reports.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[test]
fn is_amd_matches_proc_cpuinfo() {
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
        return;
    };
    let vendor = info
        .lines()
        .find_map(|l| l.strip_prefix("vendor_id"))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).trim());
    if let Some(vendor) = vendor {
        assert_eq!(super::is_amd(), vendor == "AuthenticAMD", "vendor {vendor}");
    }
}
